"""One decoded sentence, every step at once: what a view needs, computed by the library.

`DecodingSession.trajectory()` returns a `Trajectory`: the maps over all T positions, and per position the
piece fed, whether a user forced it, whether the model would have chosen it, the model's greedy choice, its
top-k after that position, the translation so far and the word spans; the roles of the checkpoint's head
atlas; the languages. A view (attention_lens/translate/payload.py) only encodes it: it computes nothing of the model
itself.

Rows are positions: row t is the decoder query at the piece fed at t (<s> at 0), which predicts piece t+1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..interpret import analysis
from ..interpret.capture import AttentionMaps

TOPK_SENT = 20  # top-k entries kept per position: a view's k slider shows 1..20 of them without a request


@dataclass
class Trajectory:
    source_ids: list[int]
    source: list[str]  # (S,) source pieces, EOS last
    ids: list[int]  # (T,) piece ids fed at each position, <s> first
    pieces: list[str]  # (T,)
    forced: list[bool]  # (T,) a user chose this piece instead of the model's choice
    differs: list[bool]  # (T,) the piece is not the one the model would have chosen (forced, or given)
    done: list[bool]  # (T,) nothing follows this position (</s> fed, or the length limit reached)
    greedy: list[int]  # (T,) the model's argmax after each position
    topk_ids: np.ndarray  # (T, K) int64, most probable first (ties: lower id first)
    topk_p: np.ndarray  # (T, K) float32
    texts: list[str]  # (T,) the translation after each position
    maps: AttentionMaps  # over all T positions: decoder_self (L, H, T, T), cross (L, H, T, S)
    piece_names: dict[int, str]  # the text of every id named above (fed, source, greedy, top-k)
    source_spans: list[tuple[int, int]]  # word spans over the source pieces (analysis.word_spans)
    target_spans: list[tuple[int, int]]
    cursor: int  # the position the session shows
    limit: int  # the most pieces this sentence may generate
    ablated: list[tuple[str, int, int]] = field(default_factory=list)  # (kind, layer, head) switched off
    roles: dict = field(default_factory=dict)  # {kind: [[role per head] per layer]} of the head atlas
    languages: tuple[str, str] = ("de", "en")  # (source, target) codes
    model_key: str = "de-en"  # the model's key (Translator.key): its name in the picker and in links
    notes: list[str] = field(default_factory=list)  # what was cut from the input
    # transformer.decode.caveats of a whole decoding (Translator.trajectory)
    caveats: list[dict] = field(default_factory=list)
    session: object = field(default=None, repr=False, compare=False)  # the DecodingSession it was built from

    @property
    def n(self) -> int:
        return len(self.ids)

    def topk(self, t: int, k: int, piece) -> list[tuple[str, float]]:
        """The k most probable pieces after position t as (piece, probability); `piece` maps an id to text."""
        return [(piece(int(i)), float(p)) for i, p in zip(self.topk_ids[t, :k], self.topk_p[t, :k])]


@dataclass
class StepView:
    """What one step shows (rows 0..cursor), in pieces or merged into words: the maps, their row and column
    labels, which rows were forced / not the model's choice, the next piece, and the piece cursor (`step`)."""
    maps: AttentionMaps
    source: list[str]
    target: list[str]
    cursor: int  # the row shown: the piece's index, or the index of the word holding it
    step: int  # the piece cursor
    forced: list[bool]
    differs: list[bool]
    next_piece: str | None
    done: bool
    words: bool
    source_spans: list[tuple[int, int]]  # piece spans of the source's words (empty when already merged)
    target_spans: list[tuple[int, int]]
    ablated: list[tuple[str, int, int]] = field(default_factory=list)


def step_view(session, words: bool = False) -> StepView:
    """The session at its cursor (DecodingSession.view): pieces, or words (sum over a word's key pieces, mean
    over its query pieces, as analysis.merge_words does, so rows still sum to 1)."""
    maps, c = session.attention, session.cursor
    positions = session.positions[:c + 1]
    forced, diff = [bool(p.forced) for p in positions], differs(positions)
    nxt = None if session.done else session.translator.tokenizer.piece(positions[-1].greedy)
    src, tgt = list(maps.source_tokens), list(maps.target_tokens)
    ss, ts = analysis.word_spans(src), analysis.word_spans(tgt)
    common = {"step": c, "next_piece": nxt, "done": session.done, "words": words, "ablated": sorted(session.ablated)}
    if not words:
        return StepView(maps, src, tgt, c, forced=forced, differs=diff, source_spans=ss, target_spans=ts, **common)
    merged = AttentionMaps(analysis.merge_words(maps.encoder_self, ss, ss).astype("float32"),
                           analysis.merge_words(maps.decoder_self, ts, ts).astype("float32"),
                           analysis.merge_words(maps.cross, ts, ss).astype("float32"))
    return StepView(merged, analysis.word_labels(src, ss), analysis.word_labels(tgt, ts),
                    next(i for i, (a, b) in enumerate(ts) if a <= c < b),
                    forced=[any(forced[a:b]) for a, b in ts], differs=[any(diff[a:b]) for a, b in ts],
                    source_spans=[], target_spans=[], **common)


def top_rows(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, V) probabilities -> the k largest per row, (T, k) ids and (T, k) values, ordered by probability
    and then by id (DecodingSession.topk's order): every tie at the k-th value is considered."""
    V = probs.shape[-1]
    k = min(k, V)
    kth = np.partition(probs, V - k, axis=-1)[:, V - k]  # (T,) the k-th largest
    ids = np.empty((len(probs), k), dtype=np.int64)
    for t, (row, bound) in enumerate(zip(probs, kth)):
        cand = np.flatnonzero(row >= bound)  # in id order
        ids[t] = cand[np.argsort(-row[cand], kind="stable")][:k]
    return ids, np.take_along_axis(probs, ids, axis=1).astype(np.float32)


def differs(positions) -> list[bool]:
    """Per position: its piece is not the one the model would have chosen after the positions before it (never
    <s>): a user forced another piece, or the pieces were given (a reference followed teacher-forced)."""
    return [False] + [positions[i].token != positions[i - 1].greedy for i in range(1, len(positions))]


def build(session, k: int = TOPK_SENT) -> Trajectory:
    """The whole history of `session` (all computed positions), shown at its cursor."""
    tr = session.translator
    tok, c = tr.tokenizer, tr.config
    positions = session.positions
    full = session.fork()
    full.cursor = len(positions) - 1
    maps = full.attention  # one pass over the host rows the steps already copied
    ids = [p.token for p in positions]
    pieces = tok.pieces(ids)
    top_ids, top_p = top_rows(session.history_probs(), k)  # one projection of every position, one copy
    named = set(ids) | set(session.source_ids) | {int(p.greedy) for p in positions} | set(top_ids.ravel().tolist())
    from ..interpret.roles import head_roles, load_atlas
    return Trajectory(
        source_ids=list(session.source_ids), source=list(maps.source_tokens), ids=ids, pieces=pieces,
        forced=[bool(p.forced) for p in positions], differs=differs(positions),
        done=[session.done_at(t) for t in range(len(ids))],
        greedy=[int(p.greedy) for p in positions], topk_ids=top_ids, topk_p=top_p,
        texts=[tok.decode(ids[:t + 1]) for t in range(len(ids))], maps=maps,
        piece_names={i: tok.piece(i) for i in sorted(named)},
        source_spans=analysis.word_spans(list(maps.source_tokens)), target_spans=analysis.word_spans(pieces),
        cursor=session.cursor, limit=session.limit, ablated=sorted(session.ablated),
        roles=head_roles(load_atlas(tr.checkpoint_dir)), languages=(c.src_lang, c.tgt_lang),
        model_key=tr.key, notes=list(session.notes), session=session)
