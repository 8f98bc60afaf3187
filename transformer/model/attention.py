"""Scaled dot-product attention and multi-head attention.

Masks are boolean and broadcastable to (B, H, T, S): True means "may attend" (the convention of
torch.nn.functional.scaled_dot_product_attention). Every MultiHeadAttention call returns an
AttentionOutput; in eval mode it carries the per-head weights, so a forward hook on the module
can read them without the model knowing anyone is looking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class AttentionOutput:
    output: Tensor  # (B, T, D)
    weights: Tensor | None  # (B, H, T, S) or None when the fused path ran


@dataclass
class KVCache:
    """Keys and values of one attention module, (B, H, S, d_head) each."""

    k: Tensor
    v: Tensor


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
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

    def forward(self, query: Tensor, key: Tensor | None = None, mask: Tensor | None = None,
                kv: KVCache | None = None, need_weights: bool | None = None) -> AttentionOutput:
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
