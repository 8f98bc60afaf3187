"""Feed-forward network, pre-LN encoder and decoder blocks, sinusoidal positions."""
from __future__ import annotations

import functools
import math

import torch
from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))  # (B, T, D)


class EncoderBlock(nn.Module):
    """x + SelfAttn(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attn_dropout: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        h = self.norm1(x)  # (B, S, D)
        x = x + self.dropout(self.self_attn(h, mask=mask).output)  # (B, S, D)
        return x + self.dropout(self.ffn(self.norm2(x)))  # (B, S, D)


class DecoderBlock(nn.Module):
    """x + MaskedSelfAttn(LN(x)), x + CrossAttn(LN(x), memory), x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attn_dropout: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.norm3 = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, memory: Tensor | None, self_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, cache: dict | None = None) -> Tensor:
        """With `cache` (a dict kept by the caller), x holds only the new positions: their keys and
        values are appended to cache["self"], and cache["cross"] holds the memory's keys/values."""
        h = self.norm1(x)  # (B, T, D)
        self_kv = None
        if cache is not None:
            new = self.self_attn.project_kv(h)
            old = cache.get("self")
            self_kv = new if old is None else KVCache(torch.cat([old.k, new.k], 2), torch.cat([old.v, new.v], 2))
            cache["self"] = self_kv  # (B, H, T_total, d) each
        x = x + self.dropout(self.self_attn(h, mask=self_mask, kv=self_kv).output)  # (B, T, D)
        h = self.norm2(x)
        cross_kv = None
        if cache is not None:
            if cache.get("cross") is None:
                cache["cross"] = self.cross_attn.project_kv(memory)  # (B, H, S, d) each
            cross_kv = cache["cross"]
        x = x + self.dropout(self.cross_attn(h, memory, mask=memory_mask, kv=cross_kv).output)  # (B, T, D)
        return x + self.dropout(self.ffn(self.norm3(x)))  # (B, T, D)


@functools.cache
def sinusoid_table(d_model: int, max_len: int) -> Tensor:
    """The sin/cos table (L, D) on the CPU, made once per shape: every model of that shape holds this one tensor
    (read only), so a second model served costs its weights and not another table (benchmarks.models)."""
    with torch.inference_mode(False):  # a normal tensor even when the first model is built inside inference_mode
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (L, 1)
        freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)  # (L, D)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
    return pe


class SinusoidalPositions(nn.Module):
    """Fixed sin/cos position encodings (Vaswani et al. 2017); a buffer, not a parameter."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(d_model, max_len), persistent=False)  # (L, D), shared

    def forward(self, length: int, offset: int = 0) -> Tensor:
        if offset + length > self.pe.size(0):
            raise ValueError(f"sequence of {offset + length} positions exceeds max_len={self.pe.size(0)}")
        return self.pe[offset:offset + length]  # (T, D)
