"""Derived views of attention maps (numpy only): rollout, source-target alignment, word-level merging.

All inputs are row-stochastic: rows are queries, columns are keys, and each row sums to 1.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..model.tokenizer import SPECIAL_PIECES as SPECIALS
from ..model.tokenizer import WORD_START


def _check_int(value, name: str, lo: int, hi: int) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    return int(value)


def rollout(encoder_self: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020): (L, H, S, S) -> (L, S, S), the cumulative rollout
    after each layer. Per layer, heads are averaged; with `residual`, A = 0.5 A + 0.5 I (rows
    renormalised) accounts for the skip connection. R_1 = A_1, R_l = A_l @ R_{l-1}."""
    a = np.asarray(encoder_self, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or a.shape[0] == 0:
        raise ValueError(f"encoder self-attention must be (L, H, S, S), got shape {a.shape}")
    A = a.mean(1)  # (L, S, S)
    if residual:
        A = 0.5 * A + 0.5 * np.eye(a.shape[-1])  # (L, S, S)
        A = A / A.sum(-1, keepdims=True)  # (L, S, S)
    out = np.empty_like(A)  # (L, S, S)
    out[0] = A[0]
    for layer in range(1, len(A)):
        out[layer] = A[layer] @ out[layer - 1]  # (S, S)
    return out


def alignment(cross: np.ndarray, layer: int | None = None) -> np.ndarray:
    """Cross-attention (L, H, T, S) -> (T, S): the mean over heads of one layer, or over all layers
    and heads when layer is None."""
    c = np.asarray(cross, dtype=np.float64)
    if c.ndim != 4 or c.shape[0] == 0:
        raise ValueError(f"cross-attention must be (L, H, T, S), got shape {c.shape}")
    if layer is None:
        return c.mean((0, 1))  # (T, S)
    return c[_check_int(layer, "layer", 0, c.shape[0] - 1)].mean(0)  # (T, S)


def word_spans(pieces: list[str]) -> list[tuple[int, int]]:
    """Group SentencePiece pieces into words: half-open (start, end) piece ranges covering every piece.

    A piece starting with '▁' starts a word; a special ('<s>', '</s>', '<pad>', '<unk>') is a word of its
    own; any other piece continues the previous word (or starts one at the beginning / after a special).
    """
    spans: list[tuple[int, int]] = []
    for i, p in enumerate(pieces):
        if p in SPECIALS or p.startswith(WORD_START) or not spans or pieces[i - 1] in SPECIALS:
            spans.append((i, i + 1))
        else:
            spans[-1] = (spans[-1][0], i + 1)
    return spans


def word_labels(pieces: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """One label per span: the pieces joined with '▁' removed; specials unchanged."""
    out = []
    for a, b in spans:
        if b - a == 1 and pieces[a] in SPECIALS:
            out.append(pieces[a])
        else:
            out.append("".join(pieces[a:b]).replace(WORD_START, "") or WORD_START)
    return out


def _check_spans(spans, n: int, what: str) -> None:
    end = 0
    for a, b in spans:
        if a != end or b <= a:
            raise ValueError(f"{what} spans must cover 0..{n} in order without gaps or overlaps, got {spans}")
        end = b
    if end != n:
        raise ValueError(f"{what} spans cover {end} pieces, the weights have {n}")


def merge_words(weights: np.ndarray, query_spans: list[tuple[int, int]],
                key_spans: list[tuple[int, int]]) -> np.ndarray:
    """(..., Q, K) piece weights -> (..., Qw, Kw) word weights: SUM over the key pieces of a word (the
    attention a word receives), MEAN over the query pieces of a word, so rows still sum to 1."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 2:
        raise ValueError(f"weights must be (..., Q, K), got shape {w.shape}")
    _check_spans(query_spans, w.shape[-2], "query")
    _check_spans(key_spans, w.shape[-1], "key")
    keys = np.stack([w[..., a:b].sum(-1) for a, b in key_spans], -1)  # (..., Q, Kw)
    return np.stack([keys[..., a:b, :].mean(-2) for a, b in query_spans], -2)  # (..., Qw, Kw)
