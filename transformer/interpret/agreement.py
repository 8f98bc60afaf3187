"""Which source word each target word of a decoded sentence comes from, by several measures, and how often the
measures agree.

`session_alignment(session)` reads the session's whole history (every computed position, whatever its cursor)
and, for each method of transformer/interpret/attribution.py ("attention": mean cross-attention of all layers and heads,
"alti": ALTI+, "saliency": gradient × input), merges its source rows into words as transformer/decode/align.py does
(convention "predicts", Ferrando et al. 2022's AWO): a target word at positions a..b-1 (BOS at 0) is scored by
the rows a-1..b-2 that predict its pieces, the MEAN of those rows; a source word gets the SUM of its pieces'
columns (analysis.merge_words). <s> and </s> are no words here: a target word is never one, and the source's
</s> takes no link. Each target word is linked to the source word with the most mass (ties: the first).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.tokenizer import BOUNDARY_PIECES
from .analysis import word_labels, word_spans
from .attribution import METHODS


@dataclass
class WordAlignment:
    """Word scores and links of one decoded sentence by each method (float32 numpy)."""

    methods: tuple  # the methods, in order
    source_words: list  # (Sw,) the source's words, </s> left out
    target_words: list  # (Tw,) the target's words, <s> and </s> left out
    scores: dict = field(default_factory=dict)  # method -> (Tw, Sw): each target word's share on each source word
    best: dict = field(default_factory=dict)  # method -> (Tw,) index of the source word with the most mass

    def agreement(self) -> list[int]:
        """(Tw,) per target word: the most methods that link it to one and the same source word."""
        picks = [[self.best[m][w] for m in self.methods] for w in range(len(self.target_words))]
        return [max(row.count(i) for i in row) if row else 0 for row in picks]

    def majority(self) -> list[int | None]:
        """(Tw,) per target word: the source word most methods pick (None when they all differ, unless one method)."""
        out = []
        for w in range(len(self.target_words)):
            row = [self.best[m][w] for m in self.methods]
            top = max(row, key=row.count) if row else None
            out.append(top if row and (row.count(top) > 1 or len(row) == 1) else None)
        return out


def _real(pieces: list[str], spans) -> list[tuple[int, int]]:
    """The word spans that are not a lone <s>, </s> or <pad>."""
    return [(a, b) for a, b in spans if not (b - a == 1 and pieces[a] in BOUNDARY_PIECES)]


def word_alignment(rows: dict, source_pieces: list[str], target_pieces: list[str]) -> WordAlignment:
    """rows: {method: (T, S) source rows over the pieces} (row t predicts target piece t+1) -> WordAlignment."""
    src = _real(source_pieces, word_spans(list(source_pieces)))  # source words, </s> out
    tgt = [(a, b) for a, b in _real(target_pieces, word_spans(list(target_pieces))) if a >= 1]  # words after <s>
    out = WordAlignment(tuple(rows), word_labels(list(source_pieces), src), word_labels(list(target_pieces), tgt))
    for method, r in rows.items():
        r = np.asarray(r, dtype=np.float64)  # (T, S)
        cols = np.stack([r[:, a:b].sum(-1) for a, b in src], -1) if src else np.zeros((len(r), 0))  # (T, Sw)
        words = np.stack([cols[a - 1:b - 1].mean(0) for a, b in tgt]) if tgt else np.zeros((0, len(src)))  # (Tw, Sw)
        out.scores[method] = words.astype(np.float32)
        out.best[method] = [int(i) for i in np.argmax(words, -1)] if src else [0] * len(tgt)
    return out


def session_alignment(session, methods=METHODS) -> WordAlignment:
    """The word alignment of the session's whole history by each of `methods` (its switched-off heads off)."""
    s = session.fork()
    s.cursor = len(s.positions) - 1  # every computed position, not only those up to the cursor
    found = {m: s.attribution(m) for m in methods}
    first = next(iter(found.values()))
    return word_alignment({m: a.source for m, a in found.items()}, first.source_tokens, first.target_tokens)
