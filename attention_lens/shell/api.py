"""The API-only endpoints (gradio_client): /translate, /attention, /attention_compact, /inside, /attribution."""
from __future__ import annotations

import gradio as gr
import numpy as np

from attention_lens.shell.exports import LAYOUT
from attention_lens.shell.inputs import fail
from attention_lens.translate import payload as P
from attention_lens.translate.attribution import check_method
from transformer.decode.decoding import DecodingSession, Translator
from transformer.interpret.capture import KINDS

MAX_API_WEIGHTS = 300_000  # /attention's nested lists: about 8 bytes of JSON a weight, so at most ~2.4 MB


def api_translate(tr: Translator, text: str) -> str:
    try:
        return tr.translate(text)
    except ValueError as e:
        fail(e)


def decoded(tr: Translator, text: str) -> DecodingSession:
    """`text` greedily decoded to the end, with its maps; gr.Error for unusable text."""
    try:
        # batched with other users' sentences when the app batches (transformer/decode/batching.py)
        return tr.decode(text)
    except ValueError as e:
        fail(e)


def api_attention(tr: Translator, text: str) -> dict:
    """Greedy translation of `text` with all three kinds of attention as nested lists."""
    s = decoded(tr, text)
    maps = s.attention
    n = sum(maps[k].size for k in KINDS)
    if n > MAX_API_WEIGHTS:
        raise gr.Error(f"this input gives {n:,} attention weights; /attention answers at most {MAX_API_WEIGHTS:,} "
                       f"as nested lists (about 2.4 MB). Use /attention_compact (uint16, base64) or a shorter "
                       f"input.", print_exception=False)
    d = maps.to_dict(decimals=4)
    d["translation"] = s.translation
    d["layout"] = LAYOUT
    return d


def api_attention_compact(tr: Translator, text: str) -> dict:
    """Like api_attention, with each map as {"shape", "b64"}: base64 little-endian uint16 of weight * 65535
    (attention_lens.translate.payload.decode_array reads it back). Bounded by the longest accepted input."""
    s = decoded(tr, text)
    maps = s.attention
    return {"source_tokens": maps.source_tokens, "target_tokens": maps.target_tokens, "translation": s.translation,
            "encoding": "base64 little-endian uint16, weight = value / 65535; maps are [layer][head][query][key]",
            **{k: P.encode_array(maps[k]) for k in KINDS}}


INSIDE_ARRAYS = ("q", "k", "v", "scores", "mask", "weights", "out", "contribution", "value_norms")


def api_inside(tr: Translator, text: str, kind: str, layer: int, head: int, step: int | None = None) -> dict:
    """Inside one head (0-based layer and head) at `step` (0 = only <s>; None: the last) of the greedy
    decoding of `text`: DecodingSession.inside's arrays as nested lists (5 decimals; mask as booleans), bounded
    like /attention: at most MAX_API_WEIGHTS numbers (about 3.3 MB of JSON for scores of two digits before the
    point), else a clear error."""
    s = decoded(tr, text)
    translation = s.translation  # the whole greedy translation; the step's prefix is in query_tokens
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    try:
        if step is not None:
            s.goto(step)
        ins = s.inside(kind, layer, head)
    except ValueError as e:
        fail(e)
    n = sum(getattr(ins, a).size for a in INSIDE_ARRAYS)
    if n > MAX_API_WEIGHTS:
        raise gr.Error(f"this head at this step gives {n:,} numbers; /inside answers at most {MAX_API_WEIGHTS:,}. "
                       f"Ask for an earlier step or a shorter input.", print_exception=False)
    arrays = {a: (getattr(ins, a).tolist() if a == "mask" else np.round(getattr(ins, a), 5).tolist())
              for a in INSIDE_ARRAYS}
    return {"kind": ins.kind, "layer": ins.layer, "head": ins.head, "step": ins.step, "d_k": ins.d_k,
            "query_tokens": ins.query_tokens, "key_tokens": ins.key_tokens, "translation": translation,
            "layout": "rows are queries, columns keys; scores = q·kᵀ/√d_k before masking; mask True = masked; "
                      "weights = softmax of the masked scores; out = weights·v; contribution = ‖weight·v·W_O‖ "
                      "= weights * value_norms", **arrays}


ATTRIBUTION_ROWS, ATTRIBUTION_COLUMNS = 60, 200  # /attribution's bound: at most 60 rows of 200 source + 60 target


def api_attribution(tr: Translator, text: str, method: str = "alti") -> dict:
    """Where each piece of the greedy translation of `text` comes from (transformer/interpret/attribution.py: "alti",
    "saliency" or "attention"): row t is the position reading target piece t, which predicts piece t+1; its
    `source` (S values) and `target` (the pieces 0..t) sum to 1. Bounded: at most ATTRIBUTION_ROWS rows (the
    first ones; `notes` says so when cut) over at most ATTRIBUTION_COLUMNS source pieces (else a clear error),
    4 decimals: at most 60 × (200 + 60) numbers."""
    check_method(method)
    s = decoded(tr, text)
    if len(s.source_ids) > ATTRIBUTION_COLUMNS:
        raise gr.Error(f"the input has {len(s.source_ids)} pieces; /attribution answers at most "
                       f"{ATTRIBUTION_COLUMNS} source columns. Use a shorter input.", print_exception=False)
    att = s.attribution(method)
    n = min(len(att.target_tokens), ATTRIBUTION_ROWS)
    notes = [f"only the first {n} of {len(att.target_tokens)} rows"] if n < len(att.target_tokens) else []
    return {"method": method, "source_tokens": att.source_tokens, "target_tokens": att.target_tokens[:n],
            "translation": s.translation, "source": np.round(att.source[:n].astype(np.float64), 4).tolist(),
            "target": np.round(att.target[:n, :n].astype(np.float64), 4).tolist(), "notes": notes,  # short JSON
            "layout": "row t reads target_tokens[t] and predicts target_tokens[t+1]; source[t][j] is source piece "
                      "j's share, target[t][i] target piece i's (0 after t); a row's source + target sums to 1"}
