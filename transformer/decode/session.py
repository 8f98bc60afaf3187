"""A decoding session: greedy decoding of one sentence one position at a time, with a key/value cache,
capturing attention as it goes (`Translator.start` in transformer/decode/decoding.py makes one).

A session holds the positions computed so far (`Position`: a step's attention rows, keys, values and final
state) and a cursor that moves along them: step, back, goto, force (a what-if piece), follow (teacher forcing).
What a view or an analysis needs of a session is computed elsewhere, from the session: `trajectory`
(transformer/decode/trajectory.py), `inside` (transformer/interpret/inside.py), `attribution`
(transformer/interpret/attribution.py).
This module imports them only when such a method is called, and never transformer/decode/decoding.py: the session's
Translator is handed to it (`Translator.start_ids`).
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch
from torch import Tensor

from ..interpret.capture import AttentionMaps
from .step import Position, feed_rows, next_probs

# "Translator" in the annotations below is transformer.decode.decoding.Translator, named but not imported (decoding
# imports this module: no import circle, not even one for type checkers)

TOPK_MAX = 50


def max_new_tokens(src_len: int, max_len: int) -> int:
    """How many pieces decoding a source of `src_len` pieces may generate (a session, greedy_decode, beam search)."""
    return max(1, min(max_len - 1, 2 * src_len + 10))


def follow_ids(translator, tokens) -> list[int]:
    """`tokens` as piece ids a session can follow: ValueError for <pad>, <s> or an id outside the vocabulary."""
    tokens = [int(t) for t in tokens]
    tok = translator.tokenizer
    if any(t in (tok.pad_id, tok.bos_id) or not 0 <= t < len(tok) for t in tokens):
        raise ValueError("follow needs piece ids of the vocabulary other than <pad> and <s>")
    return tokens


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
        self.limit = max_new_tokens(len(source_ids), translator.config.max_len)
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
    def done(self) -> bool:
        ids = self.target_ids
        return bool(ids) and (ids[-1] == self.translator.config.eos_id or len(ids) - 1 >= self.limit)

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
        """Advance one token (along the history if there is one, else greedily). False when done."""
        if not self.positions:  # started without its first position (Translator.start_ids(first=False))
            self._append(self.translator.config.bos_id, forced=False)
            return True
        if self.done:
            return False
        if self.cursor + 1 < len(self.positions):
            self.cursor += 1
        else:
            self._append(self.positions[self.cursor].greedy, forced=False)
        return True

    def run(self) -> DecodingSession:
        while self.step():
            pass
        return self

    # -- a replay: what `finish` (and a batch, transformer/decode/batching.py) feeds after the last position
    script: dict | None = None  # {position: (token id, forced)}: fed there instead of the greedy choice
    stop: int | None = None  # the last position computed (None: to the end: </s> or the limit)

    def next_feed(self) -> tuple[int, bool] | None:
        """(token, forced) that running this session on from its last position feeds next: <s> first, then at each
        position the piece `script` gives there, else the greedy choice; None once it is done or at `stop`."""
        if not self.positions:
            return self.translator.config.bos_id, False
        if self.done or (self.stop is not None and self.cursor >= self.stop):
            return None
        return (self.script or {}).get(self.cursor + 1, (self.positions[self.cursor].greedy, False))

    def finish(self) -> DecodingSession:
        """Computed on from the cursor (the last position) as `next_feed` says, to its end: for a session without a
        script, `run()` from its last position."""
        while (fed := self.next_feed()) is not None:
            self._append(*fed)
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
        if self.done:
            raise ValueError("decoding has finished at this step; step back before forcing a piece")
        tok = self.translator.tokenizer
        if isinstance(piece, str):
            token = tok.piece_id(piece)
        elif isinstance(piece, (int, np.integer)) and not isinstance(piece, bool) and 0 <= piece < len(tok):
            token = int(piece)
        else:
            raise ValueError(f"not a piece or a piece id: {piece!r}")
        if token in (tok.pad_id, tok.bos_id):
            raise ValueError(f"cannot force the special piece {tok.piece(token)!r}")
        self._append(token, forced=True)

    def follow(self, tokens) -> DecodingSession:
        """Teacher forcing: append these token ids after the cursor as they are given, whatever the model would
        choose (each position's `greedy` still says what it would have chosen; `forced` stays False: the pieces
        were given, not chosen by a user). The old future is dropped; the limit grows to fit them, up to the
        model's max_len - 1 positions; following stops at EOS. Returns self, its cursor on the last one."""
        tokens = self.followable(tokens)
        for t in tokens:
            if self.done:
                break
            self._append(t, forced=False)
        return self

    def followable(self, tokens) -> list[int]:
        """`tokens` as ids that `follow` can append after the cursor (ValueError for <pad>, <s> or an id outside the
        vocabulary), the limit grown to fit them (from <s> for a session without it), up to max_len - 1 positions."""
        tokens = follow_ids(self.translator, tokens)
        self.limit = max(self.limit, min(self.translator.config.max_len - 1, max(self.cursor, 0) + len(tokens)))
        return tokens

    def _append(self, token: int, forced: bool) -> None:
        self._put(self.feed(token, forced))

    def _put(self, position: Position) -> None:
        """Append a position computed for this session (by `feed`, or by transformer.decode.step.feed_rows for several
        sessions at once, transformer/decode/batching.py) after the cursor; the old future is dropped."""
        del self.positions[self.cursor + 1:]
        self.positions.append(position)
        self.cursor += 1

    def feed(self, token: int, forced: bool) -> Position:
        """The Position this session computes next on `token`, after the positions up to the cursor: transformer/
        step.py's feed_rows for this one row (the decoder's modules on this session's cache, its attention read by
        hooks, its heads switched off by pre-hooks; one upload of the token, one copy to the host). Does not change
        the session (`_append` does)."""
        return feed_rows([self], [token], [forced])[0]


def _on(t: Tensor, device: torch.device) -> bool:
    return t.device.type == device.type and (device.index is None or t.device.index == device.index)
