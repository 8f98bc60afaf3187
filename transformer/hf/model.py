"""HFEncoderDecoder: a `transformers` sequence-to-sequence model (eager attention) as a model of the protocol.

Every pass runs the model's own modules (its encoder, its decoder with a `transformers` cache, its output layer);
nothing is recomputed here. Hooks go on its own attention modules (`self_attn`, `encoder_attn` of each layer), whose
eager forward returns (output, weights): the weights a hook reads are the softmax the module computed. Ablation
zeroes a head's slice of the input of the module's `out_proj`, as for our model.

The decoding cache is the library's (one dict per decoder layer, "self" and "cross" KVCache of (B, H, *, d)): a
step builds a `transformers` EncoderDecoderCache holding those tensors, runs the decoder on the new position, and
keeps the self-attention keys and values it grew.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

from ..model.attention import KVCache
from ..model.config import ModelConfig
from ..model.protocol import AttentionParts

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


class HFEncoderDecoder(nn.Module):
    """`hf`: a loaded AutoModelForSeq2SeqLM with eager attention; `config`: its shape in ModelConfig's fields;
    `suppressed`: ids its generation config never lets it choose (bad_words_ids of one piece, e.g. MarianMT's
    <pad>): their scores are -inf, as `generate` makes them."""

    def __init__(self, hf: nn.Module, config: ModelConfig, suppressed=()):
        super().__init__()
        if getattr(hf.config, "_attn_implementation", "eager") != "eager":
            raise ValueError("the model must be loaded with attn_implementation='eager' (its weights are read there)")
        self.hf = hf.eval()
        self.config = config
        self.encoder_stack, self.decoder_stack = hf.get_encoder(), hf.get_decoder()
        try:
            self.modules_ = list(self._attention_modules())
        except AttributeError:  # e.g. T5: blocks of another shape, relative position biases
            raise ValueError(f"{type(hf).__name__}: its layers are not MarianMT's or BART's shape (self_attn, "
                             "encoder_attn): this app cannot step it") from None
        for kind, layer, module in self.modules_:
            if not all(isinstance(getattr(module, p, None), nn.Linear) for p in PROJECTIONS) or \
                    getattr(module, "num_heads", None) != config.n_heads:
                raise ValueError(f"{type(hf).__name__}: its {kind} attention of layer {layer} is not one this app can "
                                 "read (q/k/v/out projections, one head count)")
        self.suppressed = sorted(set(suppressed))

    def _attention_modules(self):
        for i, layer in enumerate(self.encoder_stack.layers):
            yield "encoder_self", i, layer.self_attn
        for i, layer in enumerate(self.decoder_stack.layers):
            yield "decoder_self", i, layer.self_attn
            yield "cross", i, layer.encoder_attn

    # -- the model protocol (transformer/model/protocol.py)
    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        mask = None if src_mask is None else src_mask[:, 0, 0, :].long()  # (B, S): 1 where a key is real
        return self.encoder_stack(input_ids=src, attention_mask=mask).last_hidden_state  # (B, S, D)

    def decode(self, tgt: Tensor, memory: Tensor | None, tgt_mask: Tensor | None = None,
               memory_mask: Tensor | None = None, cache: list | None = None) -> Tensor:
        """As the protocol says; the decoder makes its causal mask itself (tgt_mask, for a target without padding,
        is that mask)."""
        enc_mask = None if memory_mask is None else memory_mask[:, 0, 0, :].long()  # (B, S)
        if cache is None:
            return self.decoder_stack(input_ids=tgt, encoder_hidden_states=memory, encoder_attention_mask=enc_mask,
                                      use_cache=False).last_hidden_state  # (B, T, D)
        own, cross = DynamicCache(), DynamicCache()
        for i, layer in enumerate(cache):
            if "self" in layer:
                own.update(layer["self"].k, layer["self"].v, i)
            if "cross" in layer:
                cross.update(layer["cross"].k, layer["cross"].v, i)
        hf_cache = EncoderDecoderCache(own, cross)  # cross keys filled: the decoder reuses them
        if memory is None:  # the cross keys and values are in the cache: the states only give the source's length
            k = cache[0]["cross"].k  # (B, H, S, d)
            memory = k.new_zeros(()).expand(k.size(0), k.size(2), self.config.d_model)  # (B, S, D), no storage
        h = self.decoder_stack(input_ids=tgt, encoder_hidden_states=memory, encoder_attention_mask=enc_mask,
                               cache=hf_cache, use_cache=True).last_hidden_state  # (B, T, D)
        for i, layer in enumerate(cache):
            layer["self"] = KVCache(own.layers[i].keys, own.layers[i].values)  # (B, H, t + T, d)
            if "cross" not in layer:
                layer["cross"] = KVCache(cross.layers[i].keys, cross.layers[i].values)  # (B, H, S, d)
        return h

    def project(self, h: Tensor) -> Tensor:
        logits = self.hf.get_output_embeddings()(h)  # (..., V)
        bias = getattr(self.hf, "final_logits_bias", None)
        if bias is not None:
            logits = logits + bias[0, :logits.size(-1)]
        if self.suppressed:
            logits[..., self.suppressed] = float("-inf")
        return logits

    def cross_kv(self, memory: Tensor) -> list[KVCache]:
        out = []
        for layer in self.decoder_stack.layers:
            m = layer.encoder_attn
            B, S, _ = memory.shape
            out.append(KVCache(m.k_proj(memory).view(B, S, -1, m.head_dim).transpose(1, 2),
                               m.v_proj(memory).view(B, S, -1, m.head_dim).transpose(1, 2)))  # (B, H, S, d)
        return out

    def new_cache(self) -> list:
        return [{} for _ in self.decoder_stack.layers]

    @property
    def output_embedding(self) -> Tensor:
        return self.hf.get_output_embeddings().weight  # (V, D)

    def attention_modules(self):
        return iter(self.modules_)

    @staticmethod
    def attention_parts(module) -> AttentionParts:
        return AttentionParts(module.q_proj, module.k_proj, module.v_proj, module.out_proj, module.num_heads,
                              module.head_dim, float(module.scaling))

    @staticmethod
    def attention_weights(output) -> Tensor | None:
        return output[1]  # (output, weights): eager attention's softmax, (B, H, T, S)

    @staticmethod
    def attention_mask(args: tuple, kwargs: dict) -> Tensor | None:
        mask = kwargs.get("attention_mask")  # additive (B, 1, T, S): 0 where a key may be seen, the dtype's minimum not
        if mask is None or mask.dtype == torch.bool:
            return mask
        return mask > torch.finfo(mask.dtype).min / 2

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
