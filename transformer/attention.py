"""Scaled dot-product attention and multi-head attention.

Masks are boolean and broadcastable to (B, H, T, S): True means "may attend" (the convention of
torch.nn.functional.scaled_dot_product_attention). Every MultiHeadAttention call returns an
AttentionOutput; in eval mode it carries the per-head weights, so a forward hook on the module
can read them without the model knowing anyone is looking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class AttentionOutput:
    output: Tensor  # (B, T, D)
    weights: Optional[Tensor]  # (B, H, T, S) or None when the fused path ran


@dataclass
class KVCache:
    """Keys and values of one attention module, (B, H, S, d_head) each.

    `append` grows a self-attention cache one step at a time without re-copying it: k and v are views
    into preallocated buffers with spare positions. Only the newest cache made from a buffer writes into
    it; appending to an older one (a fork) copies, so caches never overwrite each other.
    """

    k: Tensor
    v: Tensor
    store: Optional["_KVStore"] = field(default=None, repr=False, compare=False)

    @classmethod
    def growable(cls, k: Tensor, v: Tensor) -> "KVCache":
        """A cache of k, v (B, H, S, d) with room to append as many positions again."""
        store = _KVStore.grow(k, v, k.size(2))
        return cls(store.k.narrow(2, 0, store.length), store.v.narrow(2, 0, store.length), store)

    def append(self, k: Tensor, v: Tensor) -> "KVCache":
        """This cache followed by new positions k, v (B, H, T, d): a cache of S + T positions."""
        n, t = self.k.size(2), k.size(2)
        store = self.store
        if store is None or store.length != n or n + t > store.k.size(2):
            store = _KVStore.grow(self.k, self.v, n + t)
        store.k.narrow(2, n, t).copy_(k)
        store.v.narrow(2, n, t).copy_(v)
        store.length = n + t
        return KVCache(store.k.narrow(2, 0, n + t), store.v.narrow(2, 0, n + t), store)  # (B, H, S+T, d)


class _KVStore:
    """Preallocated (B, H, capacity, d) key and value buffers, of which `length` positions are in use."""

    def __init__(self, k: Tensor, v: Tensor, length: int):
        self.k, self.v, self.length = k, v, length

    @classmethod
    def grow(cls, k: Tensor, v: Tensor, need: int) -> "_KVStore":
        B, H, n, d = k.shape
        capacity = max(32, 2 * need)
        kb = k.new_empty(B, H, capacity, d)  # (B, H, C, d)
        vb = v.new_empty(B, H, capacity, d)  # (B, H, C, d)
        kb.narrow(2, 0, n).copy_(k)
        vb.narrow(2, 0, n).copy_(v)
        return cls(kb, vb, n)


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0) -> tuple[Tensor, Tensor]:
    """softmax(q k^T / sqrt(d)) v with explicit weights. q (B,H,T,d), k/v (B,H,S,d) -> (B,H,T,d), (B,H,T,S)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (B, H, T, S)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights  # (B, H, T, d), (B, H, T, S)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads, self.d_head, self.dropout = n_heads, d_model // n_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, d)

    def project_kv(self, x: Tensor) -> KVCache:
        return KVCache(self.split(self.k_proj(x)), self.split(self.v_proj(x)))  # (B, H, S, d) each

    def forward(self, query: Tensor, key: Optional[Tensor] = None, mask: Optional[Tensor] = None,
                kv: Optional[KVCache] = None, need_weights: Optional[bool] = None) -> AttentionOutput:
        """query (B,T,D); key (B,S,D) is projected to keys and values unless `kv` is given.

        need_weights defaults to `not self.training`: inference always takes the explicit path (so
        results never depend on whether a hook is reading), training the fused one.
        """
        if need_weights is None:
            need_weights = not self.training
        if kv is None:
            kv = self.project_kv(query if key is None else key)
        q = self.split(self.q_proj(query))  # (B, H, T, d)
        p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = scaled_dot_product_attention(q, kv.k, kv.v, mask, p)  # (B,H,T,d), (B,H,T,S)
        else:
            out, weights = F.scaled_dot_product_attention(q, kv.k, kv.v, attn_mask=mask, dropout_p=p), None
        B, H, T, d = out.shape
        out = out.transpose(1, 2).reshape(B, T, H * d)  # (B, T, D)
        return AttentionOutput(self.out_proj(out), weights)
