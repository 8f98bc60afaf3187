"""Test-side readers of the page's payloads (attention_lens/translate/payload.py,
attention_lens/translate/attribution_payload.py,
attention_lens/translate/inside_payload.py): each turns an encoding back into numpy, as assets/payload.js does in the
browser. They
decode; they compute nothing, so a test compares what the page receives with the library (transformer.interpret.inside,
transformer.interpret.attribution, the session)
and never with a copy of the library's arithmetic."""
from __future__ import annotations

import base64

import numpy as np

from attention_lens.translate.payload import decode_array, decode_ints, step_text
from transformer.interpret.capture import KINDS


def decode_floats(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["b64"]), dtype="<f4").reshape(d["shape"]).astype(np.float32)


def decode_rows16(d: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<i2").astype(np.float32).reshape(d["shape"])
    scale = np.frombuffer(base64.b64decode(d["scale"]), dtype="<f4").astype(np.float32)
    return q * scale[:, None]


def decode_unit16(d: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2").astype(np.float32).reshape(d["shape"])
    return q / 65535.0 * np.float32(d["max"])


def decode_mask(d: dict) -> np.ndarray:
    if "from" in d:
        return np.arange(d["shape"][1])[None, :] >= np.asarray(d["from"])[:, None]
    return decode_bits(d)


def decode_bits(d: dict) -> np.ndarray:
    n = int(np.prod(d["shape"]))
    raw = np.frombuffer(base64.b64decode(d["bits"]), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool).reshape(d["shape"])


def decode_visible(d: dict, mask) -> np.ndarray:
    out = np.zeros(d["shape"], dtype=np.float32)
    out[~np.asarray(mask, dtype=bool)] = decode_floats({"shape": [-1], "b64": d["b64"]})
    return out


def decode_trajectory(p: dict) -> dict:
    """A trajectory payload's per-step data as Python values (for tests and clients): maps as float32
    arrays over all T positions, top-k as [(piece, p)] per step, greedy pieces, translations per step."""
    s = p["steps"]
    vocab = s["vocab"]
    ids, probs = decode_ints(s["topk"]["ids"]), decode_array(s["topk"]["p"])
    texts = [step_text(s, t) for t in range(s["n"])]
    return {"maps": {k: decode_array(p["maps"][k]) for k in KINDS}, "pieces": s["pieces"], "ids": s["ids"],
            "forced": [bool(f) for f in s["forced"]], "done": [bool(d) for d in s["done"]],
            "greedy": [vocab[i] for i in s["greedy"]], "texts": texts,
            "topk": [[(vocab[i], float(q)) for i, q in zip(ri, rp)] for ri, rp in zip(ids, probs)]}


def decode_attribution(p: dict) -> tuple[np.ndarray, np.ndarray]:
    """(source (T, S), target (T, T)) float32 from a payload, as attribution.js decodes them (tests, clients)."""
    return decode_array(p["source_rows"]), decode_array(p["target_rows"])


def decode_inside(p: dict) -> dict:
    """An "Inside this head" payload's arrays as numpy, as payload.js `decodeHead` reads them."""
    out = {name: decode_floats(p[name]) for name in ("q", "k", "value_norms", "out_norms", "raw", "scores", "out")}
    out["v"] = decode_rows16(p["v"])
    out["mask"] = decode_mask(p["mask"])
    out["weights"], out["contribution"] = (decode_visible(p[n], out["mask"]) for n in ("weights", "contribution"))
    out["norms"] = {k: decode_unit16(p["norms"][k]) for k in KINDS}
    return out
