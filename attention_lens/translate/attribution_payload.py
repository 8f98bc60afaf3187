"""The Translate view's attribution payload: what Python sends and `assets/translate/attribution.js` decodes (its
`load`).

One payload holds one method's attribution (transformer/interpret/attribution.py, an `Attribution`) of a whole decoded
trajectory: every row at once, so stepping with ALTI+ or saliency on asks nothing. Row t is the decoder position
whose input is target piece t and which predicts piece t+1; its `source` (S values) and `target` (t+1 values)
together sum to 1. Nothing is computed here: it only encodes.

Keys: v, method, title (the method's name), ids (the trajectory's token ids: the view matches them with what it
shows), key (the browser's own name for the request, echoed), source / target (pieces), source_rows (T, S) as
attention_lens.translate.payload.encode_array (uint16 of value * 65535), target_rows (T, T) as encode_tril (row t's
first t+1 values),
ms (the server's time for it, when given).
"""
from __future__ import annotations

import numpy as np

from attention_lens.translate.payload import encode_array, encode_tril
from transformer.interpret.attribution import METHOD_TITLES

ATTRIBUTION_VERSION = 1
KEY_MAX = 200  # the browser's request name is echoed: at most this many characters of it


def attribution_payload(att, ids: list[int], key: str = "", elapsed_ms: float | None = None) -> dict:
    """An Attribution over a whole trajectory (`ids`: its token ids) -> the view's payload."""
    out = {"v": ATTRIBUTION_VERSION, "method": att.method, "title": METHOD_TITLES.get(att.method, att.method),
           "ids": [int(i) for i in ids], "key": str(key)[:KEY_MAX],
           "source": list(att.source_tokens), "target": list(att.target_tokens),
           "source_rows": encode_array(np.clip(att.source, 0, 1)),  # (T, S)
           "target_rows": encode_tril(np.clip(att.target, 0, 1))}  # (T, T), row t's first t+1 values
    if elapsed_ms is not None:
        out["ms"] = round(float(elapsed_ms), 1)
    return out
