"""The attention view's payload: what Python sends and `assets/lens.js` decodes (see its `decode`/`render`).

Maps travel as base64 little-endian uint16 (weight * 65535, resolution 1.5e-5): a 15-word sentence's
three kinds of maps take ~38 kB instead of ~400 kB of JSON floats. Keep this file and lens.js in step:
every key written here is read there.
"""
from __future__ import annotations

import base64
import itertools

import numpy as np

from transformer import analysis
from transformer.capture import KINDS, AttentionMaps
from transformer.tokenizer import BOUNDARY_PIECES

VERSION = 1
_seq = itertools.count(1)  # every payload differs, so the browser redraws even when nothing else changed


def encode_array(a: np.ndarray) -> dict:
    """Weights in [0, 1] -> {"shape", "b64"}: lens.js `decode` turns it back into a Float32Array."""
    a = np.asarray(a, dtype=np.float32)
    q = np.clip(np.rint(a * 65535.0), 0, 65535).astype("<u2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    """The inverse of encode_array (what lens.js computes), for tests and clients."""
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2")
    return (q.astype(np.float32) / 65535.0).reshape(d["shape"])


def attention_payload(maps: AttentionMaps, source_tokens, target_tokens, *, cursor: int,
                      next_piece: str | None = None, forced: list[bool] | None = None, done: bool = False,
                      mode: str = "greedy", doc: str = "") -> dict:
    """Everything lens.js needs to draw one step: tokens and the three kinds of maps, compactly."""
    return {"v": VERSION, "doc": doc, "mode": mode, "source": list(source_tokens), "target": list(target_tokens),
            "cursor": int(cursor), "next": next_piece, "done": bool(done),
            "forced": list(forced) if forced is not None else [False] * len(target_tokens),
            "specials": list(BOUNDARY_PIECES),  # the key columns that "hide <s>/</s>" drops
            "maps": {k: encode_array(maps[k]) for k in KINDS}, "seq": next(_seq)}


def session_payload(session, words: bool = False, mode: str = "greedy") -> dict:
    """The payload for a DecodingSession at its cursor (pieces, or merged into words)."""
    maps = session.attention
    p = session.positions[session.cursor]
    forced = [q.forced for q in session.positions[:session.cursor + 1]]
    nxt = None if session.done else session.translator.tokenizer.piece(p.greedy)
    if words:
        return word_payload(maps, forced, cursor=session.cursor, next_piece=nxt, done=session.done, mode=mode)
    return attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=session.cursor, next_piece=nxt,
                             forced=forced, done=session.done, mode=mode)


def word_payload(maps: AttentionMaps, forced, *, cursor, next_piece, done, mode) -> dict:
    """Pieces merged into words: sum over a word's key pieces, mean over its query pieces."""
    ss, ts = analysis.word_spans(maps.source_tokens), analysis.word_spans(maps.target_tokens)
    merged = AttentionMaps(analysis.merge_words(maps.encoder_self, ss, ss).astype("float32"),
                           analysis.merge_words(maps.decoder_self, ts, ts).astype("float32"),
                           analysis.merge_words(maps.cross, ts, ss).astype("float32"))
    tw = analysis.word_labels(maps.target_tokens, ts)
    word_of = next(i for i, (a, b) in enumerate(ts) if a <= cursor < b)
    payload = attention_payload(merged, analysis.word_labels(maps.source_tokens, ss), tw, cursor=word_of,
                                next_piece=next_piece, forced=[any(forced[a:b]) for a, b in ts], done=done,
                                mode=mode, doc="words")
    payload.update(words=True, rows=list(tw), step=cursor)
    return payload
