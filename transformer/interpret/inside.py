"""Inside one head: softmax(q·kᵀ/√d_k)·v with the sentence's own numbers, and what each key contributes.

`DecodingSession.inside(kind, layer, head)` runs one teacher-forced pass of the session's sentence and
prefix under `HeadCapture`: forward hooks on the chosen attention module and its projections read what the
model computed there (the head's queries, keys and values, its mask, its attention weights and its output
before the output projection), on the model's device. `scores` and the contributions are computed from
them there too, and everything comes to the host in ONE copy (`capture.host_arrays`).

The contribution of key j to query i is ‖α_ij · v_j · W_Oʰ‖ (Kobayashi et al., EMNLP 2020, "Attention is
Not Only a Weight: Analyzing Transformers with Vector Norms"): the length of the vector this key adds to
the attention module's output through this head (v_j holds the value bias; the output bias belongs to no
key). As α_ij ≥ 0 it factorises: contribution = weights · ‖v_j W_Oʰ‖, so a key with a large weight and a
short transformed value contributes little. `value_norms` gives ‖v_j W_Oʰ‖ for every head at once.

The hooks follow `capture.ContextHooks`: registered for one request, acting only for passes made in the
context that entered them, removed in `finally`; nothing is stored on the shared model.

Where weight and contribution disagree, from the command line: transformer/decode/disagree.py.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Self

import numpy as np
import torch
from torch import Tensor

from ..model.model import Transformer
from ..model.protocol import model_device
from .capture import KINDS, ContextHooks, HeadAblation, attention_modules, host_arrays, layers_of, parse_heads

_head_capture: ContextVar[HeadCapture | None] = ContextVar("head_capture", default=None)
FIELDS = ("q", "k", "v", "raw", "scores", "mask", "weights", "out", "contribution", "value_norms", "out_norms")


@dataclass
class HeadInside:
    """One head of one kind at a session's step. Rows are queries, columns keys; float32 numpy (mask: bool).

    q (Tq, d_k), k (Tk, d_k), v (Tk, d_k): the head's projections; raw (Tq, Tk) = q·kᵀ; scores (Tq, Tk) =
    raw/√d_k before masking (raw times the module's own scaling, plus the bias it adds to its scores where it adds
    one: T5's relative position bias); mask (Tq, Tk) True where a key is masked (a future position in decoder
    self-attention, padding); weights (Tq, Tk): the attention the model computed, softmax of the masked scores;
    out (Tq, d_k) = weights·v; value_norms (Tk,) = ‖v_j W_Oʰ‖; contribution (Tq, Tk) = ‖α_ij v_j W_Oʰ‖
    = weights · value_norms; out_norms (Tq,) = ‖out_i W_Oʰ‖, the head's output in the model's space, on the
    contributions' scale: ‖Σ_j α_ij v_j W_Oʰ‖ ≤ Σ_j ‖α_ij v_j W_Oʰ‖ (the norm of a sum is at most the sum of the
    norms: where the keys' vectors point apart, they cancel). `norms` (when asked for): value_norms of every head,
    {kind: (L, H, Tk)}."""

    kind: str
    layer: int
    head: int
    step: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    raw: np.ndarray
    scores: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    out: np.ndarray
    contribution: np.ndarray
    value_norms: np.ndarray
    out_norms: np.ndarray
    query_tokens: list = field(default_factory=list)
    key_tokens: list = field(default_factory=list)
    ablated: bool = False  # this head is switched off in the session: it computes all this, and adds nothing
    norms: dict | None = None
    biased: bool = False  # the module adds a bias to its scores (T5's relative position bias) and scores include it

    @property
    def d_k(self) -> int:
        return self.q.shape[-1]

    @property
    def out_lengths(self) -> np.ndarray:
        """‖out_i‖ in the head's own d_k numbers, (Tq,)."""
        return np.linalg.norm(self.out.astype(np.float64), axis=-1).astype(np.float32)

    @property
    def contribution_totals(self) -> np.ndarray:
        """Σ_j contribution_ij, what ‖out_i W_Oʰ‖ (out_norms) is at most, (Tq,)."""
        return self.contribution.astype(np.float64).sum(-1).astype(np.float32)

    def contribution_share(self) -> np.ndarray:
        """contribution with each row normalised to sum to 1 (comparable with the weights), (Tq, Tk)."""
        s = self.contribution.sum(-1, keepdims=True)
        return np.divide(self.contribution, s, out=np.zeros_like(self.contribution), where=s > 0)

    def figure(self, row: int | None = None, words: dict | None = None):
        """Scores, weights and contributions side by side as a plotly Figure (`row` boxed in red); its words
        English unless `words` (figures.WORDS' keys) says them."""
        from .figures import inside_figure
        return inside_figure(self, row, words)


class HeadCapture(ContextHooks):
    """Records one attention module's queries, keys, values, mask, weights and per-head outputs (before
    the output projection) for passes made in this context; with `norms`, also ‖v_j W_Oʰ‖ of every head of
    every attention module. Everything stays on the device that computed it.

    `seen[name]` lists what each hook saw, one entry per forward call."""

    var = _head_capture

    def __init__(self, model: Transformer, kind: str, layer: int, norms: bool = False):
        super().__init__(model)
        modules = {(k, l): m for k, l, m in attention_modules(model)}
        if (kind, layer) not in modules:
            raise ValueError(f"no {kind} attention module at layer {layer}")
        self.module = modules[(kind, layer)]
        self.parts = model.attention_parts(self.module)
        self.norms = norms
        self.seen: dict = {name: [] for name in ("q", "k", "v", "mask", "bias", "weights", "out")}
        self.value_norms: dict = {}  # (kind, layer) -> (H, Tk) tensor

    def __enter__(self) -> Self:
        if self.model.training:
            raise RuntimeError("HeadCapture needs the model in eval mode (weights are computed only there)")
        return super().__enter__()

    def register(self):
        m, parts = self.module, self.parts
        for name in ("q", "k", "v"):
            yield getattr(parts, f"{name}_proj").register_forward_hook(self._linear(name))
        yield m.register_forward_hook(self._attention, with_kwargs=True)
        # first of the out_proj pre-hooks: the head's own output, before HeadAblation zeroes it
        yield parts.out_proj.register_forward_pre_hook(self._out, prepend=True)
        if self.norms:
            for kind, layer, module in attention_modules(self.model):
                other = self.model.attention_parts(module)
                yield other.v_proj.register_forward_hook(self._norms(kind, layer, other))

    def _linear(self, name: str):
        def hook(module, args, output):
            if self.active():
                self.seen[name].append(output.detach())  # (B, T, D)
        return hook

    def _attention(self, module, args, *rest):
        """(module, args, kwargs, output). PyTorch stores a with_kwargs hook before it records that the hook takes
        kwargs, so a pass in another thread in between calls it as (module, args, output): never this capture's own
        pass (that runs after registration), so ignored like any other thread's."""
        if not self.active() or len(rest) != 2:
            return
        kwargs, output = rest
        weights = self.model.attention_weights(output)  # (B, H, T, S)
        if weights is None:
            raise RuntimeError("attention weights were not computed (need_weights=False)")
        self.seen["mask"].append(self.model.attention_mask(args, kwargs))  # to (B, H, T, S), True = may attend; None
        self.seen["bias"].append(self.model.attention_bias(output))  # to (B, H, T, S), added to the scores; None
        self.seen["weights"].append(weights.detach())  # (B, H, T, S)

    def _out(self, module, args):
        if self.active():
            self.seen["out"].append(args[0].detach())  # (B, T, H * d): the heads' outputs, concatenated

    def _norms(self, kind: str, layer: int, attn):
        def hook(module, args, output):
            if self.active():
                self.value_norms[(kind, layer)] = value_norms(output.detach()[0], attn)  # (H, Tk)
        return hook


def value_norms(v: Tensor, attn) -> Tensor:
    """v (Tk, D): one sentence's values, all heads concatenated; attn: the module's AttentionParts -> (H, Tk) norms
    ‖v_j W_Oʰ‖ per head."""
    H, d = attn.n_heads, attn.d_head
    w = attn.out_proj.weight.detach().float().view(-1, H, d)  # (D_out, H, d): head h's slice of W_O
    vh = v.float().view(v.shape[0], H, d)  # (Tk, H, d)
    return torch.einsum("thd,ehd->hte", vh, w).norm(dim=-1)  # (H, Tk)


def one_call(seen: list, what: str):
    if len(seen) != 1:
        raise RuntimeError(f"expected one forward call recording {what}, saw {len(seen)}")
    return seen[0]


@torch.inference_mode()
def capture_inside(model: Transformer, src_ids: list[int], tgt_ids: list[int], kind: str, layer: int, head: int,
                   ablate=frozenset(), norms: bool = False) -> dict:
    """One teacher-forced pass (tgt_ids start with BOS: queries are its positions) under HeadCapture.
    -> {field: numpy array} for FIELDS, "biased" (whether the scores include the module's own score bias), and
    "norms" {kind: (L, H, Tk)} when asked; ONE host transfer."""
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; one of {KINDS}")
    parse_heads(model, [(kind, layer, head)])  # a clear error for a layer or head the model lacks
    dev = model_device(model)
    src = torch.tensor([src_ids], dtype=torch.long, device=dev)  # (1, S)
    tgt = torch.tensor([tgt_ids], dtype=torch.long, device=dev)  # (1, T)
    with HeadCapture(model, kind, layer, norms) as cap, HeadAblation(model, ablate):
        memory = model.encode(src)  # (1, S, D)
        if kind != "encoder_self" or norms:
            model.decode(tgt, memory)  # (1, T, D)
    arrays = head_tensors(cap, head)
    names = list(arrays)
    if norms:
        keys = [(k, l) for k, l, _ in attention_modules(model)]
        names += [f"norms/{k}/{l}" for k, l in keys]
        arrays.update({f"norms/{k}/{l}": cap.value_norms[(k, l)] for k, l in keys})
    host = dict(zip(names, host_arrays(*arrays.values())))  # the one copy to the host
    out = {n: host[n] for n in FIELDS}
    out["mask"] = out["mask"] > 0.5
    out["biased"] = cap.seen["bias"][0] is not None
    if norms:
        out["norms"] = {k: np.stack([host[f"norms/{k}/{l}"] for l in range(layers_of(model, k))])  # (L, H, Tk)
                        for k in KINDS}
    return out


def head_tensors(cap: HeadCapture, head: int) -> dict:
    """The head's slice of what the capture saw, and what follows from it, as float32 tensors on the device."""
    d = cap.parts.d_head
    cols = slice(head * d, (head + 1) * d)
    q = one_call(cap.seen["q"], "queries")[0, :, cols].float()  # (Tq, d)
    k = one_call(cap.seen["k"], "keys")[0, :, cols].float()  # (Tk, d)
    v = one_call(cap.seen["v"], "values")[0, :, cols].float()  # (Tk, d)
    weights = one_call(cap.seen["weights"], "weights")[0, head].float()  # (Tq, Tk)
    out = one_call(cap.seen["out"], "outputs")[0, :, cols].float()  # (Tq, d)
    allowed = one_call(cap.seen["mask"], "the mask")
    mask = torch.zeros_like(weights) if allowed is None else \
        (~allowed).float().expand(1, 1, *weights.shape)[0, 0]  # (Tq, Tk), 1 where masked
    raw = q @ k.T  # (Tq, Tk) q·kᵀ
    scores = raw * cap.parts.scaling  # (Tq, Tk), before masking: q·kᵀ/√d, or the model's own scaling
    bias = one_call(cap.seen["bias"], "the score bias")
    if bias is not None:  # e.g. T5's relative position bias, (1 or B, H, Tq, Tk)
        scores = scores + bias.detach().float().expand(1, -1, *scores.shape)[0, head]
    w_o = cap.parts.out_proj.weight.detach()[:, cols].float()  # (D, d): this head's slice of W_O
    norms = (v @ w_o.T).norm(dim=-1)  # (Tk,) ‖v_j W_Oʰ‖
    contribution = weights * norms[None, :]  # (Tq, Tk) ‖α_ij v_j W_Oʰ‖, as α_ij ≥ 0
    out_norms = (out @ w_o.T).norm(dim=-1)  # (Tq,) ‖out_i W_Oʰ‖: the head's output in the model's space
    return {"q": q, "k": k, "v": v, "raw": raw, "scores": scores, "mask": mask.contiguous(), "weights": weights,
            "out": out, "contribution": contribution, "value_norms": norms, "out_norms": out_norms}


def session_inside(session, kind: str, layer: int, head: int, norms: bool = False) -> HeadInside:
    """`DecodingSession.inside`: the head at the session's cursor (queries: positions 0..cursor)."""
    for name, value in (("layer", layer), ("head", head)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")  # noqa: TRY004 (bad input: ValueError)
    layer, head = int(layer), int(head)
    tr = session.translator
    tgt = session.target_ids
    a = capture_inside(tr.model, session.source_ids, tgt, kind, layer, head, session.ablated, norms)
    src_t, tgt_t = session.source_tokens, tr.tokenizer.pieces(tgt)
    queries = src_t if kind == "encoder_self" else tgt_t
    keys = tgt_t if kind == "decoder_self" else src_t
    return HeadInside(kind, layer, head, session.cursor, *(a[n] for n in FIELDS), query_tokens=list(queries),
                      key_tokens=list(keys), ablated=(kind, layer, head) in session.ablated, norms=a.get("norms"),
                      biased=a["biased"])


# -- where weight and contribution disagree (python -m transformer.disagree) ---------------------------------

def disagreements(ins: HeadInside) -> list[dict]:
    """Rows whose highest-weight key is not their highest-contribution key, in row order; `gap` is how much
    more weight the top-weight key has than the top-contribution key."""
    out = []
    for i in range(ins.weights.shape[0]):
        w, c = ins.weights[i], ins.contribution[i]
        jw, jc = int(np.argmax(w)), int(np.argmax(c))
        if jw != jc:
            out.append({"kind": ins.kind, "layer": ins.layer, "head": ins.head, "row": i,
                        "query": ins.query_tokens[i], "top_weight_key": ins.key_tokens[jw],
                        "top_contribution_key": ins.key_tokens[jc],
                        "weights": (float(w[jw]), float(w[jc])), "contributions": (float(c[jw]), float(c[jc])),
                        "value_norms": (float(ins.value_norms[jw]), float(ins.value_norms[jc])),
                        "gap": float(w[jw] - w[jc])})
    return out


def find_disagreements(session, kinds=KINDS) -> list[dict]:
    """disagreements() of every head of the given kinds at the session's cursor, most striking first."""
    c = session.translator.config
    found = []
    for kind in kinds:
        for layer in range(layers_of(c, kind)):
            for head in range(c.n_heads):
                found += disagreements(session.inside(kind, layer, head))
    return sorted(found, key=lambda r: -r["gap"])  # the largest weight gap that the value norms overturn first
