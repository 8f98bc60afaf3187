"""The "Inside this head" panel's payload: what Python sends, `assets/payload.js` decodes (its
`decodeHead`) and `assets/inside.js` shows.

One payload opens one head (kind, layer, head) for a whole decoded trajectory: the queries are every
position the trajectory holds (every source piece for encoder self-attention), so the panel shows any step's
row with no request: a decoder row never changes once computed (KV cache), and at step t the view shows
rows 0..t (and decoder keys 0..t). Keep this file and payload.js `decodeHead` in step: every key written here is
read there.

Keys: v, kind, layer, head, d_k, ids (the trajectory's token ids: the view matches them with what it shows),
queries / keys (pieces), ablated; q (Tq, d_k), k (Tk, d_k) and value_norms (Tk,) = ‖v_j W_Oʰ‖ as {"shape", "b64"}
little-endian float32 (`encode_floats`); v (Tk, d_k) as int16 with one float32 scale per key (`encode_rows16`,
error ≤ max|v_j| / 65534, under 1e-4 here); mask (Tq, Tk, True = masked) as `encode_mask`; norms {kind: (L, H, Tk)}:
‖v_j W_Oʰ‖ of every head of every kind as uint16 of value / max (`encode_unit16`), so the map's "contribution"
toggle needs nothing more. The browser computes the rest as the lesson's scaled_dot_product_attention does:
raw score q·k, scaled score raw/√d_k, masked, weights = softmax (equal to the captured attention to float32
rounding: tests/test_inside_browser.py), contribution = weight · value_norm, out = Σ_j weight_j v_j.
q and k travel as float32 (not uint16 like the maps): the panel prints scores, and a score is not in [0, 1].
Sending q, k and v rather than (Tq, Tk) matrices keeps one head of a 60-word sentence under 200 kB
(python -m benchmarks.inside).
"""
from __future__ import annotations

import base64

import numpy as np

from transformer.capture import KINDS

INSIDE_VERSION = 1


def encode_floats(a) -> dict:
    """float32 array -> {"shape", "b64"}: base64 little-endian float32 (payload.js `f32`)."""
    a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
    return {"shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def decode_floats(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["b64"]), dtype="<f4").reshape(d["shape"]).astype(np.float32)


def encode_rows16(a) -> dict:
    """(N, d) float array -> {"shape", "b64", "scale"}: little-endian int16 of value / scale_i, with one float32
    scale per row, max|row| / 32767 (payload.js `rows16`): error ≤ scale_i / 2."""
    a = np.asarray(a, dtype=np.float32)
    top = np.abs(a).max(axis=-1, keepdims=True)  # (N, 1)
    scale = np.where(top > 0, top / 32767.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(a / scale), -32767, 32767).astype("<i2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii"),
            "scale": encode_floats(scale[..., 0])["b64"]}


def decode_rows16(d: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<i2").astype(np.float32).reshape(d["shape"])
    scale = np.frombuffer(base64.b64decode(d["scale"]), dtype="<f4").astype(np.float32)
    return q * scale[:, None]


def encode_unit16(a) -> dict:
    """Non-negative floats -> {"shape", "b64", "max"}: little-endian uint16 of value / max * 65535 (payload.js
    `unit16`); relative resolution 1.5e-5, as the maps'."""
    a = np.asarray(a, dtype=np.float32)
    top = float(a.max(initial=0.0))
    q = np.clip(np.rint(a / (top if top > 0 else 1.0) * 65535.0), 0, 65535).astype("<u2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii"), "max": top}


def decode_unit16(d: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2").astype(np.float32).reshape(d["shape"])
    return q / 65535.0 * np.float32(d["max"])


def encode_mask(a) -> dict:
    """(Tq, Tk) bool, True = masked -> {"shape", "from": [first masked key of each row, Tk when none]} when every
    row masks a suffix of its keys (the causal mask, padding at the end), else {"shape", "bits"}."""
    a = np.asarray(a, dtype=bool)
    first = np.where(a.any(-1), a.argmax(-1), a.shape[-1])  # (Tq,)
    if (a == (np.arange(a.shape[-1])[None, :] >= first[:, None])).all():
        return {"shape": list(a.shape), "from": [int(f) for f in first]}
    return encode_bits(a)


def decode_mask(d: dict) -> np.ndarray:
    if "from" in d:
        return np.arange(d["shape"][1])[None, :] >= np.asarray(d["from"])[:, None]
    return decode_bits(d)


def encode_bits(a) -> dict:
    """bool array -> {"shape", "bits"}: row-major bits, least significant bit first (payload.js `keyMask`)."""
    a = np.asarray(a, dtype=bool)
    return {"shape": list(a.shape), "bits": base64.b64encode(np.packbits(a.reshape(-1), bitorder="little").tobytes())
            .decode("ascii")}


def decode_bits(d: dict) -> np.ndarray:
    n = int(np.prod(d["shape"]))
    raw = np.frombuffer(base64.b64decode(d["bits"]), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool).reshape(d["shape"])


def inside_payload(ins, ids: list[int]) -> dict:
    """A HeadInside over a whole trajectory (`ids`: its token ids) -> the panel's payload. `ins.norms`
    (DecodingSession.inside(..., norms=True)) must be there: the map's contribution toggle reads it."""
    if ins.norms is None:
        raise ValueError("inside_payload needs the norms of every head: session.inside(..., norms=True)")
    return {"v": INSIDE_VERSION, "kind": ins.kind, "layer": int(ins.layer), "head": int(ins.head),
            "d_k": int(ins.d_k), "ids": [int(i) for i in ids], "ablated": bool(ins.ablated),
            "queries": list(ins.query_tokens), "keys": list(ins.key_tokens),
            "q": encode_floats(ins.q), "k": encode_floats(ins.k), "v": encode_rows16(ins.v),
            "value_norms": encode_floats(ins.value_norms), "out_norms": encode_floats(ins.out_norms),
            "mask": encode_mask(ins.mask), "norms": {k: encode_unit16(ins.norms[k]) for k in KINDS}}


def decode_inside(p: dict) -> dict:
    """The payload's arrays as numpy (for tests and clients), with what the panel computes from them:
    raw (q·kᵀ), scores (raw/√d_k), weights (softmax of the masked scores), contribution (weights ·
    value_norms), out (weights·v)."""
    out = {name: decode_floats(p[name]) for name in ("q", "k", "value_norms")}
    out["v"] = decode_rows16(p["v"])
    out["mask"] = decode_mask(p["mask"])
    out["norms"] = {k: decode_unit16(p["norms"][k]) for k in KINDS}
    out["raw"] = out["q"].astype(np.float64) @ out["k"].T.astype(np.float64)
    out["scores"] = out["raw"] / np.sqrt(p["d_k"])
    out["weights"] = softmax_masked(out["scores"], out["mask"])
    out["contribution"] = out["weights"] * out["value_norms"][None, :]
    out["out"] = out["weights"] @ out["v"]
    return out


def softmax_masked(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row softmax of scores with masked keys left out (weight 0); a row with every key masked stays 0."""
    s = np.where(mask, -np.inf, scores)
    top = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
