"""The encoder-decoder Transformer: encode / decode / project. No training code, no UI."""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .attention import KVCache
from .config import ModelConfig
from .layers import DecoderBlock, EncoderBlock, SinusoidalPositions
from .protocol import AttentionParts


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, S) ids -> (B, 1, 1, S) bool, True where a key is a real token."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(T: int, device=None, offset: int = 0) -> Tensor:
    """(1, 1, T, offset+T) bool, True where query t may see key s (s <= offset + t)."""
    q = torch.arange(T, device=device)[:, None] + offset
    k = torch.arange(offset + T, device=device)[None, :]
    return (k <= q)[None, None]


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        c = self.config = config
        # One embedding for source, target and the output projection (joint SentencePiece vocabulary).
        self.embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.positions = SinusoidalPositions(c.d_model, c.max_len)
        self.dropout = nn.Dropout(c.dropout)
        self.encoder = nn.ModuleList(EncoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.attn_dropout)
                                     for _ in range(c.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderBlock(c.d_model, c.n_heads, c.d_ff, c.dropout, c.attn_dropout)
                                     for _ in range(c.n_decoder_layers))
        self.encoder_norm = nn.LayerNorm(c.d_model)
        self.decoder_norm = nn.LayerNorm(c.d_model)
        self.reset_parameters()

    def reset_parameters(self):
        for name, p in self.named_parameters():
            if p.dim() > 1 and not name.startswith("embed"):
                nn.init.xavier_uniform_(p)
        nn.init.normal_(self.embed.weight, std=self.config.d_model ** -0.5)
        with torch.no_grad():
            self.embed.weight[self.config.pad_id].zero_()

    def embed_tokens(self, ids: Tensor, offset: int = 0) -> Tensor:
        x = self.embed(ids) * math.sqrt(self.config.d_model)  # (B, T, D)
        return self.dropout(x + self.positions(ids.size(1), offset))  # (B, T, D)

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (B, S) ids; src_mask (B, 1, 1, S) bool or None -> memory (B, S, D)."""
        x = self.embed_tokens(src)  # (B, S, D)
        for block in self.encoder:
            x = block(x, src_mask)  # (B, S, D)
        return self.encoder_norm(x)  # (B, S, D)

    def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
               memory_mask: Tensor | None = None, cache: list | None = None) -> Tensor:
        """tgt (B, T) ids -> hidden states (B, T, D).

        Without a cache, tgt is the whole prefix and tgt_mask defaults to the causal mask. With a cache
        (one dict per layer, see `new_cache`), tgt holds only the new positions, which follow the cached ones.
        """
        offset = 0 if cache is None else cache_length(cache)
        if tgt_mask is None and tgt.size(1) > 1:  # one new position may see every earlier one: no mask
            tgt_mask = causal_mask(tgt.size(1), tgt.device, offset)  # (1, 1, T, offset+T)
        x = self.embed_tokens(tgt, offset)  # (B, T, D)
        for i, block in enumerate(self.decoder):
            x = block(x, memory, tgt_mask, memory_mask, None if cache is None else cache[i])  # (B, T, D)
        return self.decoder_norm(x)  # (B, T, D)

    def project(self, h: Tensor) -> Tensor:
        return h @ self.embed.weight.t()  # (B, T, V), tied to the embedding

    def new_cache(self) -> list:
        return [{} for _ in self.decoder]

    # -- the rest of the model protocol (transformer/model/protocol.py): what hooks and decoding read
    def cross_kv(self, memory: Tensor) -> list[KVCache]:
        return [block.cross_attn.project_kv(memory) for block in self.decoder]  # (B, H, S, d) each

    @property
    def output_embedding(self) -> Tensor:
        return self.embed.weight  # (V, D), tied

    def attention_modules(self):
        for i, block in enumerate(self.encoder):
            yield "encoder_self", i, block.self_attn
        for i, block in enumerate(self.decoder):
            yield "decoder_self", i, block.self_attn
            yield "cross", i, block.cross_attn

    @staticmethod
    def attention_parts(module) -> AttentionParts:
        return AttentionParts(module.q_proj, module.k_proj, module.v_proj, module.out_proj, module.n_heads,
                              module.d_head, module.d_head ** -0.5)

    @staticmethod
    def attention_weights(output) -> Tensor | None:
        return output.weights  # AttentionOutput: (B, H, T, S), None on the fused path

    @staticmethod
    def attention_mask(args: tuple, kwargs: dict) -> Tensor | None:
        return kwargs["mask"] if "mask" in kwargs else (args[2] if len(args) > 2 else None)  # True = may attend

    @staticmethod
    def attention_bias(output) -> Tensor | None:
        return None  # scores are q·kᵀ/√d alone: positions are added to the embeddings

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Teacher forcing: src (B, S), tgt (B, T) input ids -> logits (B, T, V)."""
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        memory = self.encode(src, src_mask)  # (B, S, D)
        tgt_mask = causal_mask(tgt.size(1), tgt.device) & padding_mask(tgt, self.config.pad_id)  # (B,1,T,T)
        return self.project(self.decode(tgt, memory, tgt_mask, src_mask))  # (B, T, V)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def cache_length(cache: list) -> int:
    first = cache[0].get("self") if cache else None
    return 0 if first is None else first.k.size(2)
