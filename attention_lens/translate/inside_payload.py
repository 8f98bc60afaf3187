"""The "Inside this head" panel's payload: what Python sends, `assets/shell/payload.js` decodes (its
`decodeHead`) and `assets/translate/inside.js` shows.

One payload opens one head (kind, layer, head) for a whole decoded trajectory: the queries are every
position the trajectory holds (every source piece for encoder self-attention), so the panel shows any step's
row with no request: a decoder row never changes once computed (KV cache), and at step t the view shows
rows 0..t (and decoder keys 0..t). Keep this file and payload.js `decodeHead` in step: every key written here is
read there.

Keys: version, kind, layer, head, d_k, ids (the trajectory's token ids: the view matches them with what it shows),
queries / keys (pieces), ablated; the library's numbers (transformer.interpret.inside.HeadInside), nothing computed here
or
in the browser: raw (q·kᵀ) and scores (raw/√d_k, before masking), (Tq, Tk), out (Tq, d_k) = weights·v, q (Tq, d_k),
k (Tk, d_k), value_norms (Tk,) = ‖v_j W_Oʰ‖ and out_norms (Tq,) as {"shape", "b64"} little-endian float32
(`encode_floats`); weights and contribution (Tq, Tk) as float32 of their unmasked cells only (`encode_visible`:
masked cells are 0); v (Tk, d_k) as int16 with one float32 scale per key (`encode_rows16`, error ≤ max|v_j| /
65534, under 1e-4 here: the panel draws it, it computes nothing from it); mask (Tq, Tk, True = masked) as
`encode_mask`; norms {kind: (L, H, Tk)}: ‖v_j W_Oʰ‖ of every head of every kind as uint16 of value / max
(`encode_unit16`), so the map's "contribution" toggle needs nothing more. The panel shows a row's numbers in the
order the lesson's scaled_dot_product_attention computes them (q·k, ÷√d_k, mask, softmax, weights, Σ_j weight_j
v_j), each read from here. Scores travel as float32 (not uint16 like the maps): the panel prints them, and a score
is not in [0, 1]. One head of a 60-word sentence: `python -m benchmarks.inside`.
"""
from __future__ import annotations

import base64

import numpy as np

from transformer.interpret.capture import KINDS

INSIDE_VERSION = 1


def encode_floats(a) -> dict:
    """float32 array -> {"shape", "b64"}: base64 little-endian float32 (payload.js `f32`)."""
    a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
    return {"shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def encode_rows16(a) -> dict:
    """(N, d) float array -> {"shape", "b64", "scale"}: little-endian int16 of value / scale_i, with one float32
    scale per row, max|row| / 32767 (payload.js `rows16`): error ≤ scale_i / 2."""
    a = np.asarray(a, dtype=np.float32)
    top = np.abs(a).max(axis=-1, keepdims=True)  # (N, 1)
    scale = np.where(top > 0, top / 32767.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(a / scale), -32767, 32767).astype("<i2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii"),
            "scale": encode_floats(scale[..., 0])["b64"]}


def encode_unit16(a) -> dict:
    """Non-negative floats -> {"shape", "b64", "max"}: little-endian uint16 of value / max * 65535 (payload.js
    `unit16`); relative resolution 1.5e-5, as the maps'."""
    a = np.asarray(a, dtype=np.float32)
    top = float(a.max(initial=0.0))
    q = np.clip(np.rint(a / (top if top > 0 else 1.0) * 65535.0), 0, 65535).astype("<u2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii"), "max": top}


def encode_mask(a) -> dict:
    """(Tq, Tk) bool, True = masked -> {"shape", "from": [first masked key of each row, Tk when none]} when every
    row masks a suffix of its keys (the causal mask, padding at the end), else {"shape", "bits"}."""
    a = np.asarray(a, dtype=bool)
    first = np.where(a.any(-1), a.argmax(-1), a.shape[-1])  # (Tq,)
    if (a == (np.arange(a.shape[-1])[None, :] >= first[:, None])).all():
        return {"shape": list(a.shape), "from": [int(f) for f in first]}
    return encode_bits(a)


def encode_bits(a) -> dict:
    """bool array -> {"shape", "bits"}: row-major bits, least significant bit first (payload.js `keyMask`)."""
    a = np.asarray(a, dtype=bool)
    return {"shape": list(a.shape), "bits": base64.b64encode(np.packbits(a.reshape(-1), bitorder="little").tobytes())
            .decode("ascii")}


def encode_visible(a, mask) -> dict:
    """(Tq, Tk) floats that are 0 wherever `mask` is True (weights, contributions) -> {"shape", "b64"} of float32:
    only each row's unmasked values, row after row (payload.js `visible` puts the zeros back)."""
    a, mask = np.asarray(a, dtype="<f4"), np.asarray(mask, dtype=bool)
    return {"shape": list(a.shape), "b64": encode_floats(a[~mask])["b64"]}


def inside_payload(ins, ids: list[int]) -> dict:
    """A HeadInside over a whole trajectory (`ids`: its token ids) -> the panel's payload. `ins.norms`
    (DecodingSession.inside(..., norms=True)) must be there: the map's contribution toggle reads it."""
    if ins.norms is None:
        raise ValueError("inside_payload needs the norms of every head: session.inside(..., norms=True)")
    return {"version": INSIDE_VERSION, "kind": ins.kind, "layer": int(ins.layer), "head": int(ins.head),
            "d_k": int(ins.d_k), "ids": [int(i) for i in ids], "ablated": bool(ins.ablated),
            "biased": bool(ins.biased),  # scores are q·k plus the module's position bias, not q·k/√d_k
            "queries": list(ins.query_tokens), "keys": list(ins.key_tokens),
            "q": encode_floats(ins.q), "k": encode_floats(ins.k), "v": encode_rows16(ins.v),
            "raw": encode_floats(ins.raw), "scores": encode_floats(ins.scores), "out": encode_floats(ins.out),
            "weights": encode_visible(ins.weights, ins.mask),
            "contribution": encode_visible(ins.contribution, ins.mask),
            "value_norms": encode_floats(ins.value_norms), "out_norms": encode_floats(ins.out_norms),
            "out_lengths": encode_floats(ins.out_lengths),
            "contribution_totals": encode_floats(ins.contribution_totals),
            "mask": encode_mask(ins.mask), "norms": {k: encode_unit16(ins.norms[k]) for k in KINDS}}
