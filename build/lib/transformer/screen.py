"""The greedy next token, argmax_j (h . w_j), without reading the whole fp32 output projection.

A cached decoding step on the CPU is bound by memory traffic, and the tied output projection (V x D fp32,
8 MB for the shipped model) is its biggest read: with it the step's weights no longer fit in this
machine's cache. The screen keeps an int8 copy of the projection (one scale per row, a quarter of the
bytes) and computes every logit with exact integer arithmetic on an int8-rounded query x^.

Rounding both operands moves logit j by at most s_x/2 * ||w_j||_1 + s_j/2 * ||x^||_1 (s_x, s_j: the int8
scales of the query and of row j), so by at most one bound e per query for every token. The argmax can
then only be among the tokens whose int8 logit lies within 2e of the best int8 logit (see candidates).
Those few (1.7 on average, at most 34, over the 16,184 positions of the val references with the shipped
model) are re-scored in fp32 and the best is returned: the argmax of the fp32 logits, up to ties within
fp32 rounding (where two fp32 matrix products of different shapes already disagree). What the bound does
not cover (another device or dtype, non-finite or all-zero states, too many candidates) takes the plain
fp32 path.
"""
from __future__ import annotations

import math
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
    l1_max: float  # HALF * max_j ||w_j||_1
    scale_max: float  # (HALF + QMAX * REL) * max_j scale_j: rounding of l^ folded in, as |l^_j| <= QMAX s_j ||x^||_1


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
    scale = w.abs().amax(1) / QMAX  # (V,); 0 for an all-zero row (padding), which quantises to 0
    q = torch.round(w / torch.where(scale > 0, scale, 1.0)[:, None]).clamp_(-QMAX, QMAX).to(torch.int8)  # (V, D)
    return Int8Screen(key, q.t(), scale, HALF * float(w.abs().sum(1).max()),
                      (HALF + QMAX * REL) * float(scale.max()))


HAVE_INT_MM = hasattr(torch, "_int_mm")  # int8 x int8 -> int32 matrix product (PyTorch >= 2.1 on the CPU)


def usable(weight: Tensor, h: Tensor) -> bool:
    return (HAVE_INT_MM and weight.device.type == "cpu" and h.device.type == "cpu" and weight.dtype == torch.float32
            and h.dtype == torch.float32 and h.dim() == 2 and h.size(0) > 0)


def approximate(screen: Int8Screen, h: Tensor) -> Optional[tuple[Tensor, Tensor]]:
    """(B, D) fp32 states -> int8 logits (B, V) and a bound (B, 1) on |fp32 logit - int8 logit| that holds
    for every token; None where the bound does not apply (non-finite or all-zero rows)."""
    a = h.abs()  # (B, D)
    top = a.amax(-1, keepdim=True)  # (B, 1)
    lo, hi = torch.aminmax(top)
    if not (float(lo) > 1e-30 and math.isfinite(float(hi))):
        return None
    s_x = top / QMAX  # (B, 1)
    q = (h / s_x).round_().to(torch.int8)  # (B, D): |h / s_x| <= 127 up to fp32 rounding, so no clamp
    approx = torch._int_mm(q, screen.q_t).float().mul_(s_x).mul_(screen.scale)  # (B, V): exact integer products,
    # scaled (in place, one factor at a time: a broadcast (B, 1) x (V,) product is 20x slower on this CPU)
    x_l1 = a.sum(-1, keepdim=True) + (HALF * h.size(1)) * s_x  # (B, 1) >= ||x^||_1, as |x^_i| <= |x_i| + s_x/2
    return approx, s_x * screen.l1_max + x_l1 * screen.scale_max  # (B, V), (B, 1)


def candidates(screen: Int8Screen, h: Tensor) -> Optional[tuple[Tensor, Tensor]]:
    """(B, D) fp32 states -> (rows, cols) of every token that may be its row's argmax, or None.

    With |l_j - l^_j| <= e for all j: the argmax j* has l^_j* >= l_j* - e >= l_b - e >= l^_b - 2e, where b is
    the row's best approximation; so only tokens within 2e of l^_b can be it."""
    found = approximate(screen, h)
    if found is None:
        return None
    approx, err = found  # (B, V), (B, 1)
    return (approx >= approx.amax(-1, keepdim=True) - 2.01 * err).nonzero(as_tuple=True)  # (N,), (N,)


def argmax(weight: Tensor, h: Tensor, screen: Int8Screen) -> Optional[Tensor]:
    """(B, D) -> (B,) argmax_j h . w_j for `usable` inputs; None where the plain product should decide
    (the bound does not apply, or there are too many candidates to re-score cheaply)."""
    found = candidates(screen, h)
    B = h.size(0)
    if found is None or found[0].numel() > 32 * B + 256:
        return None
    rows, cols = found
    if rows.numel() == B:  # one candidate per row (every row has at least one): it is the argmax
        return cols
    exact = (h[rows] * weight[cols]).sum(-1)  # (N,) fp32 logits of the candidates, in row-major order
    if B == 1:
        return cols[exact.argmax()][None]  # (1,): the first of equal maxima, as argmax over the vocabulary
    V = weight.size(0)
    best = torch.full((B,), float("-inf"), dtype=h.dtype).scatter_reduce(0, rows, exact, "amax")  # (B,)
    first = torch.where(exact == best[rows], cols, V)  # (N,): the maxima's indices; others out of range
    return torch.full((B,), V, dtype=cols.dtype).scatter_reduce(0, rows, first, "amin")  # (B,): lowest index
