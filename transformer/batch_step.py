"""One decoder step for a batch's rows (transformer/batching.py's feed_rows), and the encoder's pass for a row
that joins a batch (batching.begin_row), compiled with TorchScript.

Why compiled: every torch call made from Python lets go of Python's GIL while it computes and must get it back
after, and in the app the event loop and the other model's batch want it too; a step of ~400 small calls then
waited far longer for the GIL than it computed. A TorchScript function runs its calls without the GIL, so the app's
other threads go on meanwhile and the step seldom waits for them between its calls (`python -m
benchmarks.batch_gil`: 15 sentences' batch beside a thread running pure Python, compiled 13x its time alone, run
op by op from Python 125x; docs/benchmarks.md).

Each computes what the model's modules compute op by op in Python, with the very same ATen calls on the same
operands in the same layouts (TorchScript adds no fusion on the CPU), so its rows are the same bits:
tests/test_batching.py.
This file keeps Python's own annotations (no `from __future__ import annotations`): TorchScript reads them.
"""
import math
import threading
import warnings
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention import scaled_dot_product_attention

# Per decoder layer, 8 Linears, in this order: self-attention q, k, v, out; cross-attention q, out; feed-forward 1, 2;
# and 3 layer norms: before self-attention, cross-attention, feed-forward (TorchScript reads no module constants).


def _split(x: Tensor, H: int) -> Tensor:
    B, T, D = x.size(0), x.size(1), x.size(2)
    return x.view(B, T, H, D // H).transpose(1, 2)  # (B, H, T, d)


def _merge(out: Tensor, off: Tensor) -> Tensor:
    """(B, H, 1, d) head outputs -> (B, 1, H*d); `off` (B, 1, H, 1) bool: the heads switched off in each row,
    zeroed as HeadAblation's pre-hook zeroes them (an empty tensor: none in any row)."""
    B, H, T, d = out.size(0), out.size(1), out.size(2), out.size(3)
    x = out.transpose(1, 2).reshape(B, T, H * d)  # (B, 1, D)
    if off.numel() > 0:
        x = x.reshape(B, T, H, d).masked_fill(off, 0.0).flatten(-2)  # (B, 1, D)
    return x


def _linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """x (B, 1, K), w the weightᵀ expanded to (B, K, N): each row as F.linear computes a single row."""
    return torch.baddbmm(b, x, w)  # (B, 1, N)


def decoder_step(tokens: List[int], t: int, emb: Tensor, pe: Tensor, pad_id: int, H: int, weights: List[Tensor],
                 biases: List[Tensor], norms: List[Tensor], eps: List[float], keys: List[Tensor],
                 values: List[Tensor], cross_k: List[Tensor], cross_v: List[Tensor], runs: List[int],
                 off: List[Tensor], err_scale: float
                 ) -> Tuple[Tensor, Tensor, List[Tensor], List[Tensor], List[Tensor], List[Tensor], List[Tensor]]:
    """The decoder's pass over position t of B rows, as model.embed_tokens and the decoder's modules compute it.
    tokens: the B tokens fed; emb (V, D): the tied embedding and output projection; pe: the position table;
    weights/biases: 8 per layer; norms: (weight, bias) of 3 per layer then of the final norm, eps one per norm;
    keys/values: per layer (B, H, t, d) so far (empty lists at the first position); runs: [lo, hi, ...] the runs of
    rows with one source length, cross_k/cross_v (G, H, S, d) per run and layer (run g, layer i at g·L + i); off:
    per layer the self-attention's then the cross-attention's switched-off heads (see _merge); err_scale: the
    bound on a row's logit error per unit of its ‖hidden‖ (batching._err_scale).
    -> hidden (B, 1, D); what the host needs, flattened and joined into one float32 tensor: the greedy ids (B; a
    float holds every id below 2²⁴ exactly), which rows are near a tie (B: 1.0 or 0.0; their ids are to be projected
    alone), the self-attention rows (B, L, H, t+1), each run's cross-attention rows (G, L, H, S); keys and values per
    layer (B, H, t+1, d); and per row its new position's keys, values (L, H, d) and hidden state (D,)."""
    ids = torch.tensor(tokens, dtype=torch.long, device=emb.device).view(-1, 1)  # (B, 1)
    x = torch.embedding(emb, ids, pad_id) * math.sqrt(emb.size(1)) + pe[t:t + 1]  # (B, 1, D)
    L = len(weights) // 8
    new_keys: List[Tensor] = []
    new_values: List[Tensor] = []
    self_w: List[Tensor] = []
    cross_w: List[List[Tensor]] = [[] for _ in range(len(runs) // 2)]
    for i in range(L):
        w, b, n = weights[8 * i:8 * i + 8], biases[8 * i:8 * i + 8], 6 * i
        h = torch.layer_norm(x, [x.size(-1)], norms[n], norms[n + 1], eps[3 * i])  # (B, 1, D)
        k, v = _split(_linear(h, w[1], b[1]), H), _split(_linear(h, w[2], b[2]), H)  # (B, H, 1, d)
        new_keys.append(torch.cat([keys[i], k], 2) if len(keys) > 0 else k)  # (B, H, t+1, d)
        new_values.append(torch.cat([values[i], v], 2) if len(values) > 0 else v)
        q = _split(_linear(h, w[0], b[0]), H)  # (B, H, 1, d)
        out, a = scaled_dot_product_attention(q, new_keys[i], new_values[i])  # (B, H, 1, d), (B, H, 1, t+1)
        self_w.append(a[:, :, 0])
        x = x + _linear(_merge(out, off[2 * i]), w[3], b[3])  # (B, 1, D)
        h = torch.layer_norm(x, [x.size(-1)], norms[n + 2], norms[n + 3], eps[3 * i + 1])
        q = _split(_linear(h, w[4], b[4]), H)  # (B, H, 1, d)
        outs: List[Tensor] = []
        for g in range(len(runs) // 2):  # rows lo..hi-1 share a source length: no padding
            lo, hi = runs[2 * g], runs[2 * g + 1]
            o, a = scaled_dot_product_attention(q[lo:hi], cross_k[g * L + i], cross_v[g * L + i])  # (G, H, 1, ·)
            outs.append(o)
            cross_w[g].append(a[:, :, 0])  # (G, H, S)
        out = torch.cat(outs) if len(outs) > 1 else outs[0]  # (B, H, 1, d)
        x = x + _linear(_merge(out, off[2 * i + 1]), w[5], b[5])
        h = torch.layer_norm(x, [x.size(-1)], norms[n + 4], norms[n + 5], eps[3 * i + 2])
        x = x + _linear(torch.relu(_linear(h, w[6], b[6])), w[7], b[7])
    hidden = torch.layer_norm(x, [x.size(-1)], norms[6 * L], norms[6 * L + 1], eps[3 * L])
    row = hidden[:, 0]  # (B, D)
    # (B, V), by blocks of 512 pieces: a block's packed copy (512 kB) comes from the heap, where the whole (8 MB) was
    # mapped and faulted in at every step with MKL's buffer pools off (ui/memory.py): 7.4 ms against 4.4 ms for 30 rows
    logits = torch.cat([row @ e.t() for e in emb.split(512)], 1)
    top = logits.topk(2, dim=-1).values  # (B, 2)
    err = err_scale * torch.linalg.vector_norm(row, 2.0, [-1])  # (B,)
    near = top[:, 0] - top[:, 1] <= 2 * err  # (B,)
    host = [logits.argmax(-1).to(torch.float32), near.to(torch.float32),  # ids < 2²⁴: exact as floats
            torch.stack(self_w, 1).reshape(-1)]
    host += [torch.stack(ws, 1).reshape(-1) for ws in cross_w]
    ks = torch.stack([k[:, :, -1] for k in new_keys], 1)  # (B, L, H, d): this position's keys
    vs = torch.stack([v[:, :, -1] for v in new_values], 1)
    return hidden, torch.cat(host), new_keys, new_values, ks.unbind(0), vs.unbind(0), hidden[:, -1].unbind(0)


def encoder_pass(ids: List[int], emb: Tensor, pe: Tensor, pad_id: int, H: int, weights: List[Tensor],
                 biases: List[Tensor], norms: List[Tensor], eps: List[float], off: List[Tensor], cross: List[Tensor]
                 ) -> Tuple[Tensor, Tensor, Tensor]:
    """The encoder's pass over one source, as Translator.start_ids computes it under its hooks: model.encode, each
    layer's self-attention weights (what AttentionRecorder records) and the decoder's cross-attention keys and values
    of the memory. weights/biases: per encoder layer q, k, v, out, feed-forward 1, 2 (nn.Linear's own, not
    transposed); norms: (weight, bias) of 2 per layer then of the final norm, eps one per norm; off: per layer the
    switched-off heads (1, 1, H, 1) bool or an empty tensor (HeadAblation's pre-hook); cross: per decoder layer its
    cross-attention's k_proj weight, bias, v_proj weight, bias.
    -> the self-attention weights (L_enc, H, S, S), cross-attention keys and values (L_dec, H, S, d)."""
    src = torch.tensor(ids, dtype=torch.long, device=emb.device).view(1, -1)  # (1, S)
    x = torch.embedding(emb, src, pad_id) * math.sqrt(emb.size(1)) + pe[0:src.size(1)]  # (1, S, D)
    maps: List[Tensor] = []
    for i in range(len(off)):
        w, b, n = weights[6 * i:6 * i + 6], biases[6 * i:6 * i + 6], 4 * i
        h = torch.layer_norm(x, [x.size(-1)], norms[n], norms[n + 1], eps[2 * i])  # (1, S, D)
        k, v = _split(F.linear(h, w[1], b[1]), H), _split(F.linear(h, w[2], b[2]), H)  # (1, H, S, d)
        q = _split(F.linear(h, w[0], b[0]), H)
        out, a = scaled_dot_product_attention(q, k, v)  # (1, H, S, d), (1, H, S, S)
        maps.append(a[0])
        x = x + F.linear(_merge(out, off[i]), w[3], b[3])  # (1, S, D)
        h = torch.layer_norm(x, [x.size(-1)], norms[n + 2], norms[n + 3], eps[2 * i + 1])
        x = x + F.linear(torch.relu(F.linear(h, w[4], b[4])), w[5], b[5])
    L = len(off)
    memory = torch.layer_norm(x, [x.size(-1)], norms[4 * L], norms[4 * L + 1], eps[2 * L])  # (1, S, D)
    ks: List[Tensor] = []
    vs: List[Tensor] = []
    for j in range(len(cross) // 4):
        ks.append(_split(F.linear(memory, cross[4 * j], cross[4 * j + 1]), H)[0])  # (H, S, d)
        vs.append(_split(F.linear(memory, cross[4 * j + 2], cross[4 * j + 3]), H)[0])
    return torch.stack(maps), torch.stack(ks), torch.stack(vs)


def gather_rows(cross_k: List[Tensor], cross_v: List[Tensor], runs: List[int], keys: List[Tensor],
                values: List[Tensor], keep: List[int], pos_k: List[List[Tensor]], pos_v: List[List[Tensor]]
                ) -> Tuple[List[Tensor], List[Tensor], List[Tensor], List[Tensor]]:
    """What batching.Rows holds, as it stacked it op by op: each run's cross-attention keys and values (G, H, S, d),
    stacked contiguous per layer from its rows' own (L, H, S, d) (run g, layer i at g·L + i; runs: [lo, hi, ...]);
    the keys and values so far per layer (B, H, t, d): `keys`/`values` narrowed to the rows `keep` when it names
    any, else stacked from each row's positions' (L, H, d) (pos_k/pos_v; empty lists at the first position)."""
    L = cross_k[0].size(0)
    ck: List[Tensor] = []
    cv: List[Tensor] = []
    for g in range(len(runs) // 2):
        for i in range(L):
            ck.append(torch.stack([c[i] for c in cross_k[runs[2 * g]:runs[2 * g + 1]]]))
            cv.append(torch.stack([c[i] for c in cross_v[runs[2 * g]:runs[2 * g + 1]]]))
    if len(keep) > 0:
        idx = torch.tensor(keep, dtype=torch.long, device=cross_k[0].device)
        keys = [k.index_select(0, idx) for k in keys]
        values = [v.index_select(0, idx) for v in values]
    elif len(pos_k) > 0 and len(pos_k[0]) > 0:
        k = torch.stack([torch.stack(ps, 2) for ps in pos_k])  # (B, L, H, t, d)
        v = torch.stack([torch.stack(ps, 2) for ps in pos_v])
        keys, values = k.unbind(1), v.unbind(1)  # (B, H, t, d) per layer
    return ck, cv, keys, values


_FUNCTIONS = {"decoder_step": decoder_step, "encoder_pass": encoder_pass, "gather_rows": gather_rows}
_compiled: Dict[str, torch.jit.ScriptFunction] = {}
_lock = threading.Lock()


def compiled(name: str, weight: Tensor):
    """decoder_step, encoder_pass or gather_rows, compiled (once per process, at its first use) for a model whose
    `weight` is a plain tensor; as written, run by Python, for a tensor subclass (the tests' emulated accelerator:
    TorchScript would drop its __torch_function__, and with it what the subclass checks)."""
    if type(weight) not in (Tensor, torch.nn.Parameter):
        return _FUNCTIONS[name]
    with _lock:
        if name not in _compiled:
            _compiled[name] = _script(_FUNCTIONS[name])
        return _compiled[name]


def _script(fn):
    """fn compiled by TorchScript. torch 2.13 calls `torch.jit.script` deprecated in favour of `torch.compile` and
    `torch.export`, but those generate fused code of their own on a CPU, whose rows would not be the bits a row alone
    gets; TorchScript runs the very ATen calls. Its warning is therefore silenced here, and a torch without
    `torch.jit.script` gets fn as written (the same bits, with a GIL hand-over at each call)."""
    script = getattr(torch.jit, "script", None)
    if script is None:
        return fn
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)
        return script(fn)

