"""The greedy next token, argmax_j (h . w_j), without reading the whole fp32 output projection.

A cached decoding step on the CPU is bound by memory traffic, and the tied output projection (V x D fp32,
8 MB for the shipped model) is its biggest read: with it the step's weights no longer fit in this
machine's cache. The screen keeps an int8 copy of the projection (one scale per row, a quarter of the
bytes) and computes every logit with exact integer arithmetic on an int8-rounded query.

Rounding both operands moves logit j by at most

    e_j = s_x/2 * ||w_j||_1 + s_j/2 * ||x^||_1        (s_x, s_j: int8 scales of the query and of row j)

so a token whose upper bound l^_j + e_j lies below the best lower bound max_k (l^_k - e_k) cannot be the
argmax. The few tokens left (1.4 on average over the val references with the shipped model) are
re-scored in fp32 and the best one is returned: the argmax of the fp32 logits, up to ties within fp32
rounding (where two fp32 matrix products of different shapes already disagree). Anything outside what
the bound covers (another device or dtype, non-finite or all-zero states, too many candidates) takes
the plain fp32 path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

QMAX = 127  # symmetric int8: q in [-127, 127]
# Margin over the exact bound's 1/2: covers fp32 rounding in x/s, in the scales and in the L1 norms.
HALF = 0.501
REL = 1e-6  # rounding of l^ = acc * s_x * s_j (two fp32 products), relative to |l^|


@dataclass(frozen=True, eq=False)
class Int8Screen:
    key: tuple  # identifies the weights it was built from (storage, version, shape)
    q_t: Tensor  # (D, V) int8, a transposed view of the (V, D) int8 weights: w_j ~= scale_j * q_j
    scale: Tensor  # (V,) fp32 row scales
    l1_half: Tensor  # (V,) HALF * ||w_j||_1
    scale_c: Tensor  # (V,) (HALF + QMAX * REL) * scale_j: rounding of l^ folded in, as |l^_j| <= QMAX s_j ||x^||_1
    l1_half_max: float
    scale_c_max: float


def weight_key(weight: Tensor) -> Optional[tuple]:
    """What makes a built screen stale: other storage, an in-place update, another shape. None when the
    weights have no version counter (inference tensors): they could change unseen, so no screen."""
    try:
        version = weight._version
    except RuntimeError:
        return None
    return weight.data_ptr(), version, tuple(weight.shape), weight.device


def build(weight: Tensor, key: tuple) -> Int8Screen:
    w = weight.detach()  # (V, D)
    scale = w.abs().amax(1) / QMAX  # (V,)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # all-zero rows (padding) quantise to 0
    q = torch.round(w / scale[:, None]).clamp_(-QMAX, QMAX).to(torch.int8)  # (V, D)
    l1_half = HALF * w.abs().sum(1)  # (V,)
    scale_c = (HALF + QMAX * REL) * scale  # (V,)
    return Int8Screen(key, q.t(), scale, l1_half, scale_c, float(l1_half.max()), float(scale_c.max()))


def usable(weight: Tensor, h: Tensor) -> bool:
    return (weight.device.type == "cpu" and h.device.type == "cpu" and weight.dtype == torch.float32
            and h.dtype == torch.float32 and h.dim() == 2 and h.size(0) > 0)


def approximate(screen: Int8Screen, h: Tensor) -> Optional[tuple[Tensor, Tensor, Tensor]]:
    """(B, D) fp32 states -> int8 logits (B, V) and the per-row factors s_x, ||x^||_1 (B, 1) of their
    error bounds; None where the bound does not apply (non-finite or all-zero rows)."""
    top = h.abs().amax(-1, keepdim=True)  # (B, 1)
    if not bool(torch.isfinite(top).all()) or not bool((top > 1e-30).all()):
        return None
    s_x = top / QMAX  # (B, 1)
    q = torch.round(h / s_x).clamp_(-QMAX, QMAX).to(torch.int8)  # (B, D)
    approx = torch._int_mm(q, screen.q_t) * (s_x * screen.scale)  # (B, V): exact integer dot products, scaled
    x_l1 = q.abs().sum(-1, keepdim=True, dtype=torch.int32) * s_x  # (B, 1): ||x^||_1
    return approx, s_x, x_l1


def error(screen: Int8Screen, s_x: Tensor, x_l1: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """The bound on |logit - approx| at (rows, cols): (N,)."""
    return s_x[rows, 0] * screen.l1_half[cols] + x_l1[rows, 0] * screen.scale_c[cols]  # (N,)


def candidates(screen: Int8Screen, h: Tensor) -> Optional[tuple[Tensor, Tensor]]:
    """(B, D) fp32 states -> (rows, cols) of every token that may be its row's argmax, or None."""
    found = approximate(screen, h)
    if found is None:
        return None
    approx, s_x, x_l1 = found
    # Every bound is at most err_max, so a token more than 2 err_max below its row's best approximation
    # is out: a cheap first cut over the vocabulary, then the exact per-token bounds on the few left.
    err_max = s_x * screen.l1_half_max + x_l1 * screen.scale_c_max  # (B, 1)
    rows, cols = (approx >= approx.amax(-1, keepdim=True) - 2.01 * err_max).nonzero(as_tuple=True)  # (N,)
    a, err = approx[rows, cols], error(screen, s_x, x_l1, rows, cols)  # (N,), (N,)
    floor = torch.full((h.size(0),), float("-inf")).scatter_reduce(0, rows, a - err, "amax")  # (B,)
    keep = a + err >= floor[rows]  # (N,): its upper bound reaches the row's best lower bound
    return rows[keep], cols[keep]


def argmax(weight: Tensor, h: Tensor, screen: Optional[Int8Screen]) -> Tensor:
    """(B, D) -> (B,) argmax_j h . w_j, screened when `screen` is given and applies."""
    found = candidates(screen, h) if screen is not None and usable(weight, h) else None
    B = h.size(0)
    if found is None or found[0].numel() > 32 * B + 256:  # too many to re-score: the plain product is cheaper
        return (h @ weight.t()).argmax(-1)  # (B,)
    rows, cols = found
    if rows.numel() == B:  # one candidate per row (every row has at least one): it is the argmax
        return cols
    exact = (h[rows] * weight[cols]).sum(-1)  # (N,) fp32 logits of the candidates
    logits = torch.full((B, weight.size(0)), float("-inf"), dtype=h.dtype)  # (B, V)
    logits[rows, cols] = exact
    return logits.argmax(-1)  # (B,)
