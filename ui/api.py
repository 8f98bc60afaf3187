"""The API-only endpoints (gradio_client): /translate, /attention, /attention_compact."""
from __future__ import annotations

import gradio as gr

from transformer.capture import KINDS
from transformer.decoding import DecodingSession, Translator

from . import payload as P
from .exports import LAYOUT
from .inputs import fail

MAX_API_WEIGHTS = 300_000  # /attention's nested lists: about 8 bytes of JSON a weight, so at most ~2.4 MB


def api_translate(tr: Translator, text: str) -> str:
    try:
        return tr.translate(text)
    except ValueError as e:
        fail(e)


def decoded(tr: Translator, text: str) -> DecodingSession:
    """`text` greedily decoded to the end, with its maps; gr.Error for unusable text."""
    try:
        return tr.start(text).run()
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
    (ui.payload.decode_array reads it back). Bounded by the longest accepted input."""
    s = decoded(tr, text)
    maps = s.attention
    return {"source_tokens": maps.source_tokens, "target_tokens": maps.target_tokens, "translation": s.translation,
            "encoding": "base64 little-endian uint16, weight = value / 65535; maps are [layer][head][query][key]",
            **{k: P.encode_array(maps[k]) for k in KINDS}}
