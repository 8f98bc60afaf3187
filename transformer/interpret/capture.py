"""Attention captured with forward hooks, per request and safe under concurrency.

`AttentionRecorder(model)` registers a forward hook on every MultiHeadAttention while it is entered
and removes them in `finally`. A hook sees every forward pass of the shared model, from any thread,
so each hook first checks a context variable: it records only passes made inside the context
(thread or task) that entered this recorder. Two users recording at once each get their own weights,
with no global lock; a model with no recorder entered has no hooks at all.

By default each hook copies its weights to the host as it fires (one transfer per attention module).
`AttentionRecorder(model, to_host=False)` keeps them where they were computed instead: `stacked_tensor`
joins them there, and `stacked`, `maps` and `host_arrays` copy what is asked for in one transfer.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Self

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..model.model import Transformer

KINDS = ("encoder_self", "decoder_self", "cross")
_active: ContextVar[AttentionRecorder | None] = ContextVar("attention_recorder", default=None)


@dataclass
class AttentionMaps:
    """Rows are queries, columns are keys. float32 numpy, padding cut off."""

    encoder_self: np.ndarray  # (L_enc, H, S, S)
    decoder_self: np.ndarray  # (L_dec, H, T, T)
    cross: np.ndarray  # (L_dec, H, T, S)
    source_tokens: list | None = None  # S pieces, the keys/queries of encoder_self
    target_tokens: list | None = None  # T pieces starting with BOS; row t predicts target_tokens[t+1]

    def __getitem__(self, kind: str) -> np.ndarray:
        if kind not in KINDS:
            raise KeyError(f"unknown attention kind {kind!r}; one of {KINDS}")
        return getattr(self, kind)

    def to_dict(self, decimals: int | None = None) -> dict:
        f = (lambda a: np.round(a, decimals)) if decimals is not None else (lambda a: a)
        out = {"source_tokens": self.source_tokens, "target_tokens": self.target_tokens}
        out.update({k: f(getattr(self, k)).tolist() for k in KINDS})
        return out

    def figure(self, kind: str, layer: int | None = None, head: int | None = None, words: dict | None = None):
        """A plotly Figure of one kind (0-based layer/head): one heatmap for a layer and head, the mean of
        heads when head is None, the layers × heads grid when layer is None (needs plotly); its words English
        unless `words` (figures.WORDS' keys) says them."""
        from .figures import attention_figure
        if kind not in KINDS:
            raise KeyError(f"unknown attention kind {kind!r}; one of {KINDS}")
        return attention_figure(self, kind, layer, head, words)


def layers_of(model_or_config, kind: str) -> int:
    """How many layers attention `kind` has: the encoder's for encoder_self, the decoder's for decoder_self and
    cross. Takes a Transformer, a ModelConfig, or anything with a `.config` (a Translator)."""
    c = getattr(model_or_config, "config", model_or_config)
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; one of {KINDS}")
    return c.n_encoder_layers if kind == "encoder_self" else c.n_decoder_layers


def attention_modules(model: Transformer):
    """(kind, layer, module) for every attention module of the model (any model of the protocol,
    transformer/model/protocol.py)."""
    return model.attention_modules()


class ContextHooks:
    """Hooks registered while this object is entered, acting only for forward passes made in the
    context (thread or task) that entered it; handles are removed in `finally`.

    A subclass's `register()` yields the handle of each hook as it registers it (`module.register_forward_hook(...)`):
    every handle is kept as soon as it is yielded, so a registration that fails half-way removes the hooks
    already registered -- the one place where that is written."""

    var: ContextVar  # one per subclass: which object is active in the current context

    def __init__(self, model: Transformer):
        self.model = model
        self._handles: list = []
        self._token = None

    def register(self):
        """Register the hooks, yielding each handle."""
        raise NotImplementedError

    def __enter__(self):
        self._token = self.var.set(self)
        try:
            for handle in self.register():
                self._handles.append(handle)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._close()

    def _close(self) -> None:
        try:
            for h in self._handles:
                h.remove()
        finally:
            self._handles = []
            if self._token is not None:
                self.var.reset(self._token)
                self._token = None

    def active(self) -> bool:
        return self.var.get() is self


class AttentionRecorder(ContextHooks):
    """Context manager collecting every attention module's weights for passes made in this context.

    `calls[kind][layer]` is the list of (B, H, T, S) float32 weights, one per forward call, in order:
    numpy arrays, or with `to_host=False` tensors left on the device that computed them.
    """

    var = _active

    def __init__(self, model: Transformer, to_host: bool = True):
        super().__init__(model)
        self.to_host = to_host
        self.calls = {k: [[] for _ in range(layers_of(model, k))] for k in KINDS}

    def __enter__(self) -> Self:
        if self.model.training:
            raise RuntimeError("AttentionRecorder needs the model in eval mode (weights are computed only there)")
        return super().__enter__()

    def register(self):
        for kind, layer, module in attention_modules(self.model):
            yield module.register_forward_hook(self._hook(kind, layer))

    def _hook(self, kind: str, layer: int):
        def hook(module, args, output):
            if not self.active():
                return  # another request's forward pass
            weights = self.model.attention_weights(output)  # (B, H, T, S)
            if weights is None:
                raise RuntimeError("attention weights were not computed (need_weights=False)")
            w = weights.detach().float()  # (B, H, T, S)
            self.calls[kind][layer].append(w.cpu().numpy() if self.to_host else w)
        return hook

    def stacked_tensor(self, kind: str, b: int = 0) -> Tensor:
        """`stacked` on the device the weights were computed on, as a (L, H, T, S) tensor; nothing is copied
        to the host. Needs a recorder made with to_host=False."""
        if self.to_host:
            raise ValueError("this recorder copied its weights to the host: use stacked(), or "
                             "AttentionRecorder(model, to_host=False)")
        layers = []
        for calls in self.calls[kind]:
            if not calls:
                raise ValueError(f"no {kind} attention was recorded")
            width = max(c.shape[-1] for c in calls)
            rows = [c[b] if c.shape[-1] == width else F.pad(c[b], (0, width - c.shape[-1])) for c in calls]  # (H,t,S)
            layers.append(rows[0] if len(rows) == 1 else torch.cat(rows, 1))  # (H, T, S)
        return torch.stack(layers)  # (L, H, T, S)

    def stacked(self, kind: str, b: int = 0) -> np.ndarray:
        """All calls of one kind joined along the query axis, for batch row b: (L, H, T, S).

        Calls made one position at a time (a KV cache) have growing key lengths; shorter rows are
        zero-padded on the right, which is exactly what a causal mask gives.
        """
        if not self.to_host:
            return host_arrays(self.stacked_tensor(kind, b))[0]
        layers = []
        for calls in self.calls[kind]:
            if not calls:
                raise ValueError(f"no {kind} attention was recorded")
            width = max(c.shape[-1] for c in calls)
            rows = [np.pad(c[b], ((0, 0), (0, 0), (0, width - c.shape[-1]))) for c in calls]  # (H, t, S)
            layers.append(np.concatenate(rows, axis=1))  # (H, T, S)
        return np.stack(layers)  # (L, H, T, S)

    def maps(self, src_len: int, tgt_len: int, b: int = 0) -> AttentionMaps:
        """AttentionMaps of batch row b, padding cut to the real source and target lengths (one transfer
        for all three kinds with to_host=False)."""
        if self.to_host:
            enc, dec, cross = (self.stacked(k, b) for k in KINDS)
        else:
            enc, dec, cross = host_arrays(*(self.stacked_tensor(k, b) for k in KINDS))
        enc = enc[:, :, :src_len, :src_len]  # (L, H, S, S)
        dec = dec[:, :, :tgt_len, :tgt_len]  # (L, H, T, T)
        cross = cross[:, :, :tgt_len, :src_len]  # (L, H, T, S)
        return AttentionMaps(np.ascontiguousarray(enc), np.ascontiguousarray(dec), np.ascontiguousarray(cross))


def host_arrays(*tensors: Tensor) -> list[np.ndarray]:
    """Tensors of one dtype on one device -> numpy arrays of the same shapes, in ONE device-to-host copy:
    they are flattened and joined on the device, copied once, and split on the host (views of one buffer)."""
    flat = torch.cat([t.reshape(-1) for t in tensors]).cpu().numpy()  # a new buffer, never the tensors' own
    return split_host(flat, [t.shape for t in tensors])


def split_host(flat: np.ndarray, shapes) -> list[np.ndarray]:
    """One host buffer (tensors flattened and joined, in order) -> arrays of these shapes, views of it."""
    out, start = [], 0
    for shape in shapes:
        n = int(np.prod(shape))
        out.append(flat[start:start + n].reshape(shape))
        start += n
    return out


_ablation: ContextVar[HeadAblation | None] = ContextVar("head_ablation", default=None)


def parse_heads(model: Transformer, heads) -> frozenset:
    """Validate (kind, layer, head) triples (0-based) against the model; -> frozenset."""
    layers = {k: layers_of(model, k) for k in KINDS}
    H = model.config.n_heads
    out = set()
    for item in heads or ():
        try:
            kind, layer, head = item
        except (TypeError, ValueError):
            raise ValueError(f"a head is (kind, layer, head), got {item!r}") from None
        if kind not in layers:
            raise ValueError(f"unknown attention kind {kind!r}; one of {KINDS}")
        if not (isinstance(layer, int) and isinstance(head, int)) or isinstance(layer, bool) or isinstance(head, bool):
            raise ValueError(f"layer and head must be integers, got {item!r}")  # noqa: TRY004 (bad input: ValueError)
        if not (0 <= layer < layers[kind] and 0 <= head < H):
            raise ValueError(f"{kind} has layers 0..{layers[kind] - 1} and heads 0..{H - 1}; "
                             f"got layer {layer}, head {head}")
        out.add((kind, layer, head))
    return frozenset(out)


class HeadAblation(ContextHooks):
    """Zero chosen heads' outputs (before the output projection) for passes made in this context.

    Same mechanism as the recorder: forward pre-hooks on each affected out_proj that act only for the
    context that entered this object, so other users of the shared model are untouched and no weight
    is ever edited. `heads` are switched off in every row of the batch; `rows` (instead), one set of heads per
    batch row, switches each row's own off (a batch of several users' sessions: transformer/decode/step.py). With no
    heads, nothing is registered.
    """

    var = _ablation

    def __init__(self, model: Transformer, heads=None, rows=None):
        super().__init__(model)
        self.heads = parse_heads(model, heads)
        self.rows = None if rows is None else [parse_heads(model, r) for r in rows]

    def register(self):
        for kind, layer, module in attention_modules(self.model):
            if self.rows is None:
                off = [(slice(None), h) for k, l, h in sorted(self.heads) if k == kind and l == layer]
            else:  # row b's heads: x[b, ..., h, :]
                off = [(b, h) for b, heads in enumerate(self.rows) for k, l, h in sorted(heads)
                       if k == kind and l == layer]
            if off:
                parts = self.model.attention_parts(module)
                yield parts.out_proj.register_forward_pre_hook(self._pre_hook(parts.n_heads, off))

    def _pre_hook(self, n_heads: int, off: list[tuple]):
        def pre(module, args):
            if not self.active():
                return None
            x = args[0]  # (B, T, H * d): the heads' outputs, concatenated
            x = x.reshape(*x.shape[:-1], n_heads, -1).clone()  # (B, T, H, d)
            for row, h in off:  # int indices are views: no index tensor to build on the host and upload
                x[row, ..., h, :] = 0
            return (x.flatten(-2),) + tuple(args[1:])  # (B, T, H * d)
        return pre
