"""The attention view's payload: what Python sends and `assets/lens.js` decodes (see its `decode`/`load`).

Maps travel as base64 little-endian uint16 (weight * 65535, resolution 1.5e-5): a 15-word sentence's
three kinds of maps take ~38 kB instead of ~400 kB of JSON floats. Keep this file and lens.js in step:
every key written here is read there.

Two kinds of payload:
- one step (`attention_payload`, v1): the maps at one cursor, drawn as they are (other tabs, the API's
  /reference and step-by-step endpoints);
- a whole trajectory (`trajectory_payload`, v2): every position of a decoded sentence at once (Start, a forced
  piece, a reference translation followed teacher-forced: mode "reference"), so the browser steps through it
  with no request. The maps hold all T positions; the view at step t shows rows
  0..t of decoder_self/cross (and columns 0..t of decoder_self). `steps` holds the per-step data.
"""
from __future__ import annotations

import base64
import itertools

import numpy as np

from transformer import analysis
from transformer.capture import KINDS, AttentionMaps
from transformer.tokenizer import BOUNDARY_PIECES, SPECIAL_PIECES

VERSION = 1
TRAJECTORY_VERSION = 2
TOPK_SENT = 20  # top-k entries per step in a trajectory payload: the k slider shows 1..20 of them locally
_seq = itertools.count(1)  # every payload differs, so the browser redraws even when nothing else changed


def encode_array(a: np.ndarray) -> dict:
    """Weights in [0, 1] -> {"shape", "b64"}: lens.js `decode` turns it back into a Float32Array."""
    a = np.asarray(a, dtype=np.float32)
    q = np.clip(np.rint(a * 65535.0), 0, 65535).astype("<u2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii")}


def encode_tril(a: np.ndarray) -> dict:
    """(..., T, T) lower-triangular maps (decoder self-attention) -> only row t's first t+1 weights, packed
    row after row for every leading index: T(T+1)/2 values per map instead of T*T."""
    a = np.asarray(a, dtype=np.float32)
    T = a.shape[-1]
    rows, cols = np.tril_indices(T)
    d = encode_array(a[..., rows, cols])
    d.update(shape=list(a.shape), packed="tril")
    return d


def decode_array(d: dict) -> np.ndarray:
    """The inverse of encode_array / encode_tril (what lens.js computes), for tests and clients."""
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2").astype(np.float32) / 65535.0
    if d.get("packed") == "tril":
        shape = d["shape"]
        out = np.zeros(shape, dtype=np.float32)
        rows, cols = np.tril_indices(shape[-1])
        out[..., rows, cols] = q.reshape(*shape[:-2], len(rows))
        return out
    return q.reshape(d["shape"])


def encode_ints(values) -> dict:
    """Non-negative integers < 65536 -> {"shape", "b64"} of little-endian uint16 (lens.js `ints`)."""
    a = np.asarray(values, dtype=np.int64)
    if a.size and (a.min() < 0 or a.max() > 65535):
        raise ValueError("encode_ints: values must be in 0..65535")
    return {"shape": list(a.shape), "b64": base64.b64encode(a.astype("<u2").tobytes()).decode("ascii")}


def decode_ints(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2").astype(np.int64).reshape(d["shape"])


def attention_payload(maps: AttentionMaps, source_tokens, target_tokens, *, cursor: int,
                      next_piece: str | None = None, forced: list[bool] | None = None, done: bool = False,
                      mode: str = "greedy", doc: str = "", differs: list[bool] | None = None) -> dict:
    """Everything lens.js needs to draw one step: tokens and the three kinds of maps, compactly.
    forced: pieces a user forced; differs: pieces the model would not have chosen there (see `differs`)."""
    return {"v": VERSION, "doc": doc, "mode": mode, "source": list(source_tokens), "target": list(target_tokens),
            "cursor": int(cursor), "next": next_piece, "done": bool(done),
            "forced": list(forced) if forced is not None else [False] * len(target_tokens),
            "differs": [bool(d) for d in differs] if differs is not None else [False] * len(target_tokens),
            "specials": list(BOUNDARY_PIECES),  # the key columns that "hide <s>/</s>" drops
            "word_specials": list(SPECIAL_PIECES),  # each a word of its own when merging (analysis.word_spans)
            "spans": {"source": _spans(source_tokens), "target": _spans(target_tokens)},
            "maps": {k: encode_array(maps[k]) for k in KINDS}, "seq": next(_seq)}


def _spans(pieces) -> list[list[int]]:
    return [[a, b] for a, b in analysis.word_spans(list(pieces))]


def differs(positions) -> list[bool]:
    """Per position of a history: its piece is not the one the model would have chosen after the positions
    before it (never <s>). True where a user forced another piece, and where the pieces were given rather
    than chosen (a reference translation; the intact prefix that a model with heads switched off follows)."""
    return [False] + [positions[i].token != positions[i - 1].greedy for i in range(1, len(positions))]


def step_texts(tokenizer, ids: list[int]) -> dict:
    """The translation after every step: {"text": full, "ends": [length at step t]} when each one is a prefix
    of the last (the usual case), else {"texts": [one string per step]}. The lengths count UTF-16 code units,
    as JavaScript's String.length and slice do (lens.js `text`): a character outside the Basic Multilingual
    Plane (an emoji) is 2 of them but 1 Python character. `step_text` reads one back in Python."""
    texts = [tokenizer.decode(ids[:t + 1]) for t in range(len(ids))]
    full = texts[-1]
    if all(full.startswith(x) for x in texts):
        return {"text": full, "ends": [utf16_len(x) for x in texts]}
    return {"texts": texts}


def utf16_len(text: str) -> int:
    """len(text) in UTF-16 code units (JavaScript's length; surrogates of a broken pair count 1 each)."""
    return len(text) + sum(ord(ch) > 0xFFFF for ch in text)


def step_text(steps: dict, t: int) -> str:
    """The translation after step t from a payload's `steps` (the text up to ends[t] UTF-16 code units)."""
    if "texts" in steps:
        return steps["texts"][t]
    end, text = steps["ends"][t], steps["text"]
    i = n = 0
    while n < end:  # advance by characters until `end` code units are covered
        n += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return text[:i]


def trajectory_payload(session, *, topk: list[list[tuple[int, float]]], k: int = 8, words: bool = False,
                       mode: str = "greedy", doc: str = "", elapsed_ms: float | None = None) -> dict:
    """Everything the Translate view needs for every step of `session`'s history (positions 0..T-1), shown
    at `session.cursor`. topk[t]: the TOPK_SENT (token id, probability) pairs after position t.

    Keys: the one-step keys at the cursor (source, target, cursor, next, done, forced: what a v1 payload
    says there), `maps` over all T positions (decoder_self packed lower-triangular), and `steps`:
    ids, pieces, forced, done, greedy (index into `vocab`), topk {k, ids (T, k) into `vocab`, p (T, k)},
    the translation after each step (step_texts), word spans; `ui`: the k and words the view starts with."""
    tr = session.translator
    tok = tr.tokenizer
    positions = session.positions
    T, c = len(positions), session.cursor
    full = session.fork()
    full.cursor = T - 1
    maps = full.attention
    ids = [p.token for p in positions]
    pieces = tok.pieces(ids)
    eos = tr.config.eos_id
    done = [ids[t] == eos or t >= session.limit for t in range(T)]
    forced = [bool(p.forced) for p in positions]
    vocab: dict[int, int] = {}
    index = lambda i: vocab.setdefault(int(i), len(vocab))
    greedy = [index(p.greedy) for p in positions]
    top_ids = [[index(i) for i, _ in row] for row in topk]
    top_p = [[p for _, p in row] for row in topk]
    source = maps.source_tokens
    return {"v": TRAJECTORY_VERSION, "doc": doc, "mode": mode, "seq": next(_seq),
            "source": list(source), "target": pieces[:c + 1], "cursor": int(c),
            "next": None if done[c] else tok.piece(positions[c].greedy), "done": done[c], "forced": forced[:c + 1],
            "specials": list(BOUNDARY_PIECES), "word_specials": list(SPECIAL_PIECES),
            "maps": {"encoder_self": encode_array(maps.encoder_self), "decoder_self": encode_tril(maps.decoder_self),
                     "cross": encode_array(maps.cross)},
            "steps": {"n": T, "ids": ids, "pieces": pieces, "forced": [int(f) for f in forced],
                      "differs": [int(d) for d in differs(positions)],
                      "done": [int(d) for d in done], "greedy": greedy,
                      "vocab": tok.pieces(list(vocab)),
                      "topk": {"k": len(top_ids[0]) if top_ids else 0, "ids": encode_ints(top_ids),
                               "p": encode_array(np.asarray(top_p, dtype=np.float32))},
                      "spans": {"source": _spans(source), "target": _spans(pieces)},
                      **step_texts(tok, ids)},
            "ui": {"k": int(k), "words": bool(words)},
            **({"ms": round(float(elapsed_ms), 1)} if elapsed_ms is not None else {})}


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


def session_payload(session, words: bool = False, mode: str = "greedy") -> dict:
    """The payload for a DecodingSession at its cursor (pieces, or merged into words); `ablated` lists the heads
    the session switches off (their weights are computed, their outputs zeroed)."""
    maps = session.attention
    p = session.positions[session.cursor]
    forced = [q.forced for q in session.positions[:session.cursor + 1]]
    diff = differs(session.positions[:session.cursor + 1])
    nxt = None if session.done else session.translator.tokenizer.piece(p.greedy)
    if words:
        out = word_payload(maps, forced, cursor=session.cursor, next_piece=nxt, done=session.done, mode=mode,
                           differs=diff)
    else:
        out = attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=session.cursor, next_piece=nxt,
                                forced=forced, done=session.done, mode=mode, differs=diff)
    if session.ablated:  # [kind, layer, head] switched off: the view greys their maps
        out["ablated"] = sorted([k, int(l), int(h)] for k, l, h in session.ablated)
    return out


def word_payload(maps: AttentionMaps, forced, *, cursor, next_piece, done, mode, differs=None) -> dict:
    """Pieces merged into words: sum over a word's key pieces, mean over its query pieces."""
    ss, ts = analysis.word_spans(maps.source_tokens), analysis.word_spans(maps.target_tokens)
    merged = AttentionMaps(analysis.merge_words(maps.encoder_self, ss, ss).astype("float32"),
                           analysis.merge_words(maps.decoder_self, ts, ts).astype("float32"),
                           analysis.merge_words(maps.cross, ts, ss).astype("float32"))
    tw = analysis.word_labels(maps.target_tokens, ts)
    word_of = next(i for i, (a, b) in enumerate(ts) if a <= cursor < b)
    payload = attention_payload(merged, analysis.word_labels(maps.source_tokens, ss), tw, cursor=word_of,
                                next_piece=next_piece, forced=[any(forced[a:b]) for a, b in ts], done=done,
                                mode=mode, doc="words",
                                differs=[any(differs[a:b]) for a, b in ts] if differs is not None else None)
    payload.update(words=True, rows=list(tw), step=cursor)
    del payload["spans"]  # already merged: the view must not merge again
    return payload
