"""A `transformers` sequence-to-sequence model (eager attention) as a model of the protocol: HFEncoderDecoder for
MarianMT's and BART's shape, T5EncoderDecoder for T5's.

Every pass runs the model's own modules (its encoder, its decoder with a `transformers` cache, its output layer);
nothing is recomputed here. Hooks go on its own attention modules (`self_attn`, `encoder_attn` of each layer; T5's
`SelfAttention`, `EncDecAttention`), whose eager forward returns the softmax it computed: the weights a hook reads.
Ablation zeroes a head's slice of the input of the module's output projection, as for our model.

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


class HFEncoderDecoder(nn.Module):
    """`hf`: a loaded AutoModelForSeq2SeqLM with eager attention; `config`: its shape in ModelConfig's fields;
    `suppressed`: ids its generation config never lets it choose (bad_words_ids of one piece, e.g. MarianMT's
    <pad>): their scores are -inf, as `generate` makes them."""

    projections = ("q_proj", "k_proj", "v_proj", "out_proj")  # the attention module's q, k, v, output projection
    heads_attr, head_dim_attr = "num_heads", "head_dim"

    def __init__(self, hf: nn.Module, config: ModelConfig, suppressed=()):
        super().__init__()
        if getattr(hf.config, "_attn_implementation", "eager") != "eager":
            raise ValueError("the model must be loaded with attn_implementation='eager' (its weights are read there)")
        self.hf = hf.eval()
        self.config = config
        self.encoder_stack, self.decoder_stack = hf.get_encoder(), hf.get_decoder()
        try:
            self.modules_ = list(self._attention_modules())
        except AttributeError:  # blocks of another shape
            raise ValueError(f"{type(hf).__name__}: its layers are not of a shape this app knows (MarianMT's and "
                             "BART's self_attn, encoder_attn; T5's SelfAttention, EncDecAttention): it cannot step "
                             "it") from None
        for kind, layer, module in self.modules_:
            if not all(isinstance(getattr(module, p, None), nn.Linear) for p in self.projections) or \
                    getattr(module, self.heads_attr, None) != config.n_heads:
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
        B, S, _ = memory.shape
        out = []
        for kind, _, m in self.modules_:
            if kind == "cross":
                parts = self.attention_parts(m)
                out.append(KVCache(parts.k_proj(memory).view(B, S, -1, parts.d_head).transpose(1, 2),
                                   parts.v_proj(memory).view(B, S, -1, parts.d_head).transpose(1, 2)))  # (B, H, S, d)
        return out

    def new_cache(self) -> list:
        return [{} for _ in range(self.config.n_decoder_layers)]

    @property
    def output_embedding(self) -> Tensor:
        return self.hf.get_output_embeddings().weight  # (V, D)

    def attention_modules(self):
        return iter(self.modules_)

    def attention_parts(self, module) -> AttentionParts:
        return AttentionParts(*(getattr(module, p) for p in self.projections), getattr(module, self.heads_attr),
                              getattr(module, self.head_dim_attr), float(module.scaling))

    @staticmethod
    def attention_weights(output) -> Tensor | None:
        return output[1]  # (output, weights): eager attention's softmax, (B, H, T, S)

    @staticmethod
    def attention_mask(args: tuple, kwargs: dict) -> Tensor | None:
        mask = kwargs.get("attention_mask")  # additive (B, 1, T, S): 0 where a key may be seen, the dtype's minimum not
        if mask is None or mask.dtype == torch.bool:
            return mask
        return mask > torch.finfo(mask.dtype).min / 2

    @staticmethod
    def attention_bias(output) -> Tensor | None:
        return None  # positions are added to the embeddings

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class T5EncoderDecoder(HFEncoderDecoder):
    """A T5ForConditionalGeneration: its attention adds a relative position bias (shared by a stack's layers, computed
    in its first) to unscaled q·kᵀ (scaling 1), its output layer reads the final state scaled by d_model^-0.5 when
    its config says so (scale_decoder_outputs: the embedding is shared with the input), and it has no final logits
    bias. Each attention module returns (output, position bias, weights)."""

    projections = ("q", "k", "v", "o")
    heads_attr, head_dim_attr = "n_heads", "key_value_proj_dim"

    def _attention_modules(self):
        for i, block in enumerate(self.encoder_stack.block):
            yield "encoder_self", i, block.layer[0].SelfAttention
        for i, block in enumerate(self.decoder_stack.block):
            yield "decoder_self", i, block.layer[0].SelfAttention
            yield "cross", i, block.layer[1].EncDecAttention

    def project(self, h: Tensor) -> Tensor:
        if self.hf.config.scale_decoder_outputs:
            h = h * self.hf.model_dim ** -0.5
        return super().project(h)

    @staticmethod
    def attention_weights(output) -> Tensor | None:
        return output[2]  # (output, position bias, weights): eager attention's softmax, (B, H, T, S)

    @staticmethod
    def attention_mask(args: tuple, kwargs: dict) -> Tensor | None:
        return HFEncoderDecoder.attention_mask(args, {"attention_mask": kwargs.get("mask")})

    @staticmethod
    def attention_bias(output) -> Tensor | None:
        return output[1]  # the relative position bias added to q·kᵀ, (1, H, T, S); zeros in cross-attention
