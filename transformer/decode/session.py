"""A decoding session: greedy decoding of one sentence one position at a time, with a key/value cache,
capturing attention as it goes (`Translator.start` in transformer/decode/decoding.py makes one).

A session holds the positions computed so far (`Position`: a step's attention rows, keys, values and final
state) and a cursor that moves along them: step, back, goto, force (a what-if piece), follow (teacher forcing), run
and finish (to the end). Every position a session gains is fed through one function, `advance` (one session or
several at one position, in one pass of the decoder), and every decoding to the end is one loop, `decode`, that feeds
each session what its `Script` says (a replay's pieces: a value handed to the decoding, never kept by the session).
`done_at` is the one rule for where a decoding ends. What a view or an analysis needs of a session is computed
elsewhere, from the session: `trajectory` (transformer/decode/trajectory.py), `inside`
(transformer/interpret/inside.py), `attribution` (transformer/interpret/attribution.py). This module imports them only
when such a method is called, and never transformer/decode/decoding.py: the session's Translator is handed to it
(`Translator.start_ids`).
"""
from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from collections.abc import Mapping

import numpy as np
import torch
from torch import Tensor

from ..interpret.capture import AttentionMaps
from .step import Position, Rows, feed_rows, next_probs

# "Translator" in the annotations below is transformer.decode.decoding.Translator, named but not imported (decoding
# imports this module: no import circle, not even one for type checkers)

TOPK_MAX = 50


def max_new_tokens(src_len: int, max_len: int) -> int:
    """How many pieces decoding a source of `src_len` pieces may generate (a session, greedy_decode, beam search)."""
    return max(1, min(max_len - 1, 2 * src_len + 10))


def done_at(t, token, limit, eos_id):
    """Whether a decoding ends at position t (<s> at 0), fed `token` there: </s>, or `limit` pieces after <s>. The one
    rule for where every decoding ends (a session, its trajectory, greedy_decode); ints, or tensors of them."""
    return (token == eos_id) | (t >= limit)


def follow_ids(translator, tokens) -> list[int]:
    """`tokens` as piece ids a session can follow: ValueError for <pad>, <s> or an id outside the vocabulary."""
    tokens = [int(t) for t in tokens]
    tok = translator.tokenizer
    if any(t in (tok.pad_id, tok.bos_id) or not 0 <= t < len(tok) for t in tokens):
        raise ValueError("follow needs piece ids of the vocabulary other than <pad> and <s>")
    return tokens


@dataclasses.dataclass(frozen=True, eq=False)
class Script:
    """What a decoding feeds a session after its cursor: <s> first (a session begun without it), then at each
    position the piece `pieces` gives there ({position: (token id, forced)}), else the greedy choice; on to `stop`
    (the last position computed; None: to the end, </s> or the limit). A value handed to a decoding
    (DecodingSession.finish, `decode`, Batcher.run): a session holds none of it, only its limit grown to reach the
    last piece given (DecodingSession._reaching)."""

    pieces: Mapping[int, tuple[int, bool]] = dataclasses.field(default_factory=dict)
    stop: int | None = None

    @classmethod
    def given(cls, session, tokens: list[int]) -> Script:
        """`tokens` given after the session's cursor (after <s> for a session begun without it), as they are, up to
        the last of them: what `follow` feeds."""
        at = max(session.cursor, 0)
        return cls({at + 1 + i: (t, False) for i, t in enumerate(tokens)}, at + len(tokens))

    @property
    def reach(self) -> int:
        """The last position a piece is given at (0: none)."""
        return max(self.pieces, default=0)

    def next(self, session) -> tuple[int, bool] | None:
        """(token, forced) to feed `session` after its cursor, None once it is done or at `stop`."""
        if not session.positions:
            return session.translator.config.bos_id, False
        if session.done or (self.stop is not None and session.cursor >= self.stop):
            return None
        return self.pieces.get(session.cursor + 1, (session.positions[session.cursor].greedy, False))


GREEDY = Script()  # greedily to the end


class DecodingSession:
    """Greedy decoding of one sentence, one position at a time, with attention captured per step.

    State is token ids, numpy attention rows and, on the translator's device, the keys/values the decoder
    attends to (cross-attention once, self-attention per position) and each position's final state: a step
    uploads one token id and copies its attention rows and greedy choice back in one transfer.
    `positions` is the history computed so far and `cursor` the position shown: back()/goto() move the
    cursor without recomputing, step() moves it forward again along the history (or computes a new
    position at the end), force() replaces the future. Copies share the Translator (never copied or
    pickled) and nothing else; `notes` describes what was cut from the input.
    """

    def __init__(self, translator: Translator, source_ids: list[int], encoder_self: np.ndarray,  # noqa: F821
                 cross_k: Tensor, cross_v: Tensor):
        self._translator = translator
        self.source_ids = list(source_ids)
        self.encoder_self = encoder_self  # (L_enc, H, S, S) numpy
        self.cross_k, self.cross_v = cross_k, cross_v  # (L_dec, H, S, d_head) each, on the device
        self.positions: list[Position] = []
        self.cursor = -1
        self.ablated: frozenset = frozenset()  # (kind, layer, head) switched off for this session
        self.base_limit = max_new_tokens(len(source_ids), translator.config.max_len)  # greedy decoding's
        self.reach = 0  # the last position of the pieces given to it (a reference followed, a script's)
        self.notes: list[str] = []  # human-readable: what was cut from the input (Translator.start)

    # -- copying: the translator is shared, never copied or pickled
    def __deepcopy__(self, memo):
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        new.__dict__.update({k: v if k == "_translator" else copy.deepcopy(v, memo)
                             for k, v in self.__dict__.items()})
        return new

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_translator"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._translator = None

    def fork(self) -> DecodingSession:
        """A cheap copy to mutate: positions and the cross-attention keys/values are shared (never
        modified in place), the lists are not."""
        new = self.__class__.__new__(self.__class__)
        new.__dict__.update(self.__dict__)
        new.positions = list(self.positions)
        new.notes = list(self.notes)
        return new

    def bind(self, translator: Translator) -> DecodingSession:  # noqa: F821
        """Attach a Translator (after unpickling); the device state moves to its device if it is elsewhere."""
        self._translator = translator
        dev = translator.device
        if not _on(self.cross_k, dev):  # all of the device state is where cross_k is
            self.cross_k, self.cross_v = self.cross_k.to(dev), self.cross_v.to(dev)
            self.positions = [dataclasses.replace(p, k=p.k.to(dev), v=p.v.to(dev), hidden=p.hidden.to(dev))
                              for p in self.positions]
        return self

    @property
    def translator(self) -> Translator:  # noqa: F821
        if self._translator is None:
            raise RuntimeError("this session is not bound to a Translator: call session.bind(translator)")
        return self._translator

    # -- what is visible at the cursor
    @property
    def target_ids(self) -> list[int]:
        return [p.token for p in self.positions[:self.cursor + 1]]

    @property
    def source_tokens(self) -> list[str]:
        return self.translator.tokenizer.pieces(self.source_ids)

    @property
    def target_tokens(self) -> list[str]:
        return self.translator.tokenizer.pieces(self.target_ids)

    @property
    def translation(self) -> str:
        return self.translator.tokenizer.decode(self.target_ids)

    @property
    def step_index(self) -> int:
        """Number of tokens generated so far (BOS not counted)."""
        return self.cursor

    @property
    def limit(self) -> int:
        """The most pieces this decoding may hold after <s>: greedy decoding's (max_new_tokens), or as many as the
        pieces given to it need (`reach`, at most the model's max_len - 1)."""
        return max(self.base_limit, self.reach)

    def done_at(self, t: int) -> bool:
        """Nothing follows position t of the history (`done_at`: </s> fed there, or the limit)."""
        return bool(done_at(t, self.positions[t].token, self.limit, self.translator.config.eos_id))

    @property
    def done(self) -> bool:
        """Nothing follows the cursor's position."""
        return bool(self.positions) and self.done_at(self.cursor)

    @property
    def attention(self) -> AttentionMaps:
        rows = self.positions[:self.cursor + 1]
        T = len(rows)
        L, H = rows[0].self_row.shape[:2]
        dec = np.zeros((L, H, T, T), dtype=np.float32)  # (L, H, T, T)
        for t, p in enumerate(rows):
            dec[:, :, t, :t + 1] = p.self_row
        cross = np.stack([p.cross_row for p in rows], axis=2)  # (L, H, T, S)
        return AttentionMaps(self.encoder_self, dec, cross, self.source_tokens, self.target_tokens)

    def inside(self, kind: str, layer: int, head: int, norms: bool = False):
        """Inside one head (0-based layer and head, like AttentionMaps.figure) at the cursor: a HeadInside
        with q, k, v, scores (q·kᵀ/√d_k, before masking), mask, weights, out (weights·v) and contribution
        (‖α v W_Oʰ‖), numpy arrays from one teacher-forced pass with hooks (transformer/interpret/inside.py).
        `norms=True` adds ‖v W_Oʰ‖ for every head of every kind (`.norms`)."""
        from ..interpret.inside import session_inside
        return session_inside(self, kind, layer, head, norms)

    def trajectory(self, k: int = 20):
        """Every computed position at once, shown at the cursor: a `transformer.decode.trajectory.Trajectory` (maps,
        top-k after each position, pieces, texts, word spans, the head atlas's roles): what a view needs."""
        from .trajectory import build
        return build(self, k)

    def attribution(self, method: str = "alti"):
        """Attribution (transformer/interpret/attribution.py) of rows 0..cursor, the session's switched-off heads
        off."""
        from ..interpret.attribution import session_attribution
        return session_attribution(self, method)

    def view(self, words: bool = False):
        """The step at the cursor as a view shows it (maps of rows 0..cursor, pieces or merged into words):
        a `transformer.decode.trajectory.StepView`."""
        from .trajectory import step_view
        return step_view(self, words)

    def _position(self, position: int | None) -> Position:
        if position is None:
            return self.positions[self.cursor]
        if not isinstance(position, (int, np.integer)) or isinstance(position, bool) \
                or not 0 <= position < len(self.positions):
            raise ValueError(f"position must be an integer from 0 to {len(self.positions) - 1}, got {position!r}")
        return self.positions[int(position)]

    def next_distribution(self, position: int | None = None) -> np.ndarray:
        """Probabilities of the token after `position` (any computed one; default: the cursor), (V,) float32."""
        return next_probs(self.translator.model, self._position(position).hidden)

    def history_probs(self) -> np.ndarray:
        """Probabilities of the token after every position of the history, (T, V) float32: the states are
        joined on the device and projected at once, with one copy to the host."""
        return next_probs(self.translator.model, torch.stack([p.hidden for p in self.positions]))  # (T, V)

    def topk(self, k: int = 5, position: int | None = None) -> list[tuple[str, float]]:
        """The k most probable pieces after `position` (any computed one; default: the cursor), with their
        probabilities, most probable first (ties: lower id first)."""
        V = self.translator.config.vocab_size
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= min(V, TOPK_MAX):
            raise ValueError(f"k must be an integer from 1 to {min(V, TOPK_MAX)}, got {k!r}")
        probs = self.next_distribution(position)
        idx = np.argsort(-probs, kind="stable")[:k]
        return [(self.translator.tokenizer.piece(i), float(probs[i])) for i in idx]

    # -- moving
    def step(self) -> bool:
        """Move on one position: along the history if there is one, else computed greedily (<s> first for a
        session begun without it). False when done."""
        if self.positions and self.done:
            return False
        if self.cursor + 1 < len(self.positions):
            self.cursor += 1
        else:
            self.advance(*GREEDY.next(self))
        return True

    def run(self) -> DecodingSession:
        """On to the end: along the history, then greedily."""
        self.cursor = len(self.positions) - 1
        return self.finish()

    def finish(self, script: Script | None = None) -> DecodingSession:
        """Computed on from the cursor to its end as `script` says (None: greedily), the positions after the cursor
        dropped: `decode` for this one session."""
        decode([self], [script])
        return self

    def back(self) -> bool:
        if self.cursor <= 0:
            return False
        self.cursor -= 1
        return True

    def goto(self, i: int) -> None:
        """Show the state after i generated tokens (0: only BOS); i must be within the history."""
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self.positions):
            raise ValueError(f"step index must be an integer from 0 to {len(self.positions) - 1}, got {i!r}")
        self.cursor = i

    def force(self, piece) -> None:
        """Append `piece` (a piece string or an id) instead of the greedy choice; the old future is dropped."""
        tok = self.translator.tokenizer
        if self.done:
            raise ValueError("decoding has finished at this step; step back before forcing a piece")
        if isinstance(piece, str):
            token = tok.piece_id(piece)
        elif isinstance(piece, (int, np.integer)) and not isinstance(piece, bool) and 0 <= piece < len(tok):
            token = int(piece)
        else:
            raise ValueError(f"not a piece or a piece id: {piece!r}")
        self._check_feed(token, "force")
        self.advance(token, forced=True)

    def follow(self, tokens) -> DecodingSession:
        """Teacher forcing: append these token ids after the cursor as they are given, whatever the model would
        choose (each position's `greedy` still says what it would have chosen; `forced` stays False: the pieces
        were given, not chosen by a user). The old future is dropped; the limit grows to fit them, up to the
        model's max_len - 1 positions; following stops at EOS. Returns self, its cursor on the last one."""
        return self.finish(Script.given(self, follow_ids(self.translator, tokens)))

    def advance(self, token: int, forced: bool = False) -> DecodingSession:
        """Feed one piece after the cursor (`advance` for this one session): the positions after the cursor dropped,
        the position computed on `token` appended, the cursor on it. `forced`: a user chose the piece."""
        advance([self], [token], [forced])
        return self

    def _check_feed(self, token: int, verb: str = "feed") -> None:
        """ValueError unless `token` can be fed after the cursor: <s> first, then a piece of the vocabulary other than
        <pad> and <s> (unless the model itself chose it: greedy decoding feeds its argmax, whatever it is), while the
        decoding is not done at the cursor."""
        tok = self.translator.tokenizer
        if not self.positions:
            if token != tok.bos_id:
                raise ValueError(f"a session is fed <s> first, not {token!r}")
            return
        if self.done:
            raise ValueError("decoding has finished at this step: nothing follows it")
        if not isinstance(token, (int, np.integer)) or not 0 <= token < len(tok):
            raise ValueError(f"not a piece id: {token!r}")
        if token in (tok.pad_id, tok.bos_id) and token != self.positions[self.cursor].greedy:  # the model's own
            raise ValueError(f"cannot {verb} the special piece {tok.piece(token)!r}")  # choice is always fed

    def _cut(self) -> None:
        """Drop the positions after the cursor, and with them the reach of the pieces given there."""
        if len(self.positions) > self.cursor + 1:
            del self.positions[self.cursor + 1:]
            self.reach = min(self.reach, max(self.cursor, 0))

    def _reaching(self, script: Script) -> None:
        """What a decoding by `script` from the cursor starts with: the positions after the cursor dropped, the limit
        grown to reach the last piece the script gives (up to the model's max_len - 1 pieces)."""
        self._cut()
        self.reach = max(self.reach, min(self.translator.config.max_len - 1, script.reach))


def advance(sessions, tokens, forced, rows: Rows | None = None) -> None:
    """Feed each session one piece (`tokens[b]` an id, `forced[b]` whether a user chose it): the positions after its
    cursor dropped, the position computed on the piece appended, the cursor on it. The one way a session moves on:
    step, run, finish, force, follow and a batch all come here. Sessions at one position of one translator are
    computed in one pass of the decoder (step.feed_rows; `rows`: their cache kept from the pass before). ValueError,
    before any work, for a piece a session cannot be fed (DecodingSession._check_feed)."""
    for s, token in zip(sessions, tokens):
        s._check_feed(token)
    for s, p in zip(sessions, feed_rows(sessions, list(tokens), list(forced), rows)):
        s._cut()
        s.positions.append(p)
        s.cursor += 1


def decode(sessions, scripts=None, done=None, more=None) -> None:
    """Each session computed on from its cursor to its end as its script says (`scripts[b]`, a Script; None:
    greedily), the positions after its cursor dropped: one pass of the decoder per position for the sessions at that
    position (`advance`), the furthest behind first, so that positions meet and go on together. `done(session)` is
    called as each one ends; `more(active)`, when given, is asked before each pass for (session, script) pairs to add
    (`active`: the sessions not done, never none)."""
    active: list = []
    plan: dict[int, tuple[Script, tuple[int, bool]]] = {}  # id(session) -> (its script, what it is fed next)

    def admit(pairs) -> None:
        for s, script in pairs:
            script = script or GREEDY
            s._reaching(script)
            if (fed := script.next(s)) is None:
                if done:
                    done(s)
                continue
            plan[id(s)] = script, fed
            active.append(s)

    admit(zip(sessions, scripts or [None] * len(sessions)))
    rows = None
    while active:
        if more is not None:
            admit(more(active))
        by_pos = defaultdict(list)
        for s in active:
            by_pos[s.cursor].append(s)
        group = by_pos[min(by_pos)]  # the furthest behind first, so that the positions meet
        rows = rows.keep(group) if rows is not None and rows.holds(group) else Rows(group)
        fed = [plan[id(s)][1] for s in group]
        advance(group, [t for t, _ in fed], [f for _, f in fed], rows)
        for s in group:
            script = plan[id(s)][0]
            if (nxt := script.next(s)) is not None:
                plan[id(s)] = script, nxt
                continue
            del plan[id(s)]
            if done:
                done(s)
        active[:] = [s for s in active if id(s) in plan]


def _on(t: Tensor, device: torch.device) -> bool:
    return t.device.type == device.type and (device.index is None or t.device.index == device.index)
