"""What the library needs from an encoder-decoder model: the one protocol every view is written against.

Our Transformer (transformer/model/model.py) implements it, and so does the adapter over a Hugging Face
`transformers` model (transformer/hf/). Decoding (transformer/decode/) and the hooks that read and switch off
attention (transformer/interpret/) call only what is listed here, so a view works for any model that has it.

Shapes: B rows, S source positions, T target positions, D the model's width, V its vocabulary, H heads, d a
head's width. Masks are boolean, True where a key may be attended to.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from torch import Tensor, nn

from .attention import KVCache


@dataclass(frozen=True)
class AttentionParts:
    """One attention module's parts, as hooks need them: its four projections (nn.Linear, input (B, T, D)), how
    many heads it splits them into, each head's width and the factor its scores q·kᵀ are multiplied by."""

    q_proj: nn.Module
    k_proj: nn.Module
    v_proj: nn.Module
    out_proj: nn.Module  # its input (B, T, H * d) is the heads' outputs, concatenated: ablation zeroes a slice
    n_heads: int
    d_head: int
    scaling: float


@runtime_checkable
class EncoderDecoder(Protocol):
    """An encoder-decoder translation model, in eval mode, with a `config` holding at least the fields of
    ModelConfig that decoding reads: n_heads, n_encoder_layers, n_decoder_layers, d_model, vocab_size, max_len,
    pad_id, bos_id (the first piece the decoder is fed), eos_id, src_lang, tgt_lang."""

    config: object

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (B, S) ids; src_mask (B, 1, 1, S) or None -> memory (B, S, D)."""

    def decode(self, tgt: Tensor, memory: Tensor | None, tgt_mask: Tensor | None = None,
               memory_mask: Tensor | None = None, cache: list | None = None) -> Tensor:
        """tgt (B, T) ids -> final decoder states (B, T, D). Without a cache: the whole prefix, causally masked.
        With a cache (one dict per decoder layer, "cross" and "self" KVCache of (B, H, *, d)): the new positions
        only; memory may then be None (the keys and values of "cross" are used), and "self" is extended."""

    def project(self, h: Tensor) -> Tensor:
        """(..., D) final decoder states -> (..., V) next-piece scores (logits)."""

    def cross_kv(self, memory: Tensor) -> list[KVCache]:
        """Each decoder layer's cross-attention keys and values of memory (B, S, D): (B, H, S, d) each."""

    def new_cache(self) -> list:
        """An empty decoding cache: one dict per decoder layer."""

    @property
    def output_embedding(self) -> Tensor:
        """(V, D) the matrix `project` multiplies a state with, on the model's device and in its dtype (where
        transformer/decode/step.py next_probs puts a state)."""

    def attention_modules(self) -> Iterator[tuple[str, int, nn.Module]]:
        """(kind, layer, module) for every attention module, kind one of encoder_self, decoder_self, cross: the
        modules forward hooks are registered on."""

    def attention_parts(self, module: nn.Module) -> AttentionParts:
        """The projections and head geometry of one of `attention_modules`' modules."""

    def attention_weights(self, output) -> Tensor | None:
        """What an attention module's forward returned -> its weights (B, H, T, S), the softmax it computed
        (None when its fused path computed none)."""

    def attention_mask(self, args: tuple, kwargs: dict) -> Tensor | None:
        """An attention module's call arguments -> which keys each query may see, bool broadcastable to
        (B, H, T, S), or None: all of them."""

    def attention_bias(self, output) -> Tensor | None:
        """What an attention module's forward returned -> what it added to its scaled scores q·kᵀ·scaling before
        masking and softmax, broadcastable to (B, H, T, S) (T5's relative position bias), or None: nothing."""


def model_device(model):
    """The device a protocol model computes on."""
    return model.output_embedding.device
