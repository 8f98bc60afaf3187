"""The attention view's payload: what Python sends and `assets/shell/payload.js` decodes (its `decodeView`) for lens.js.

Maps travel as base64 little-endian uint16 (weight * 65535, resolution 1.5e-5): a 15-word sentence's
three kinds of maps take ~38 kB instead of ~400 kB of JSON floats. Keep this file and payload.js in step:
every key written here is read there, or (ui, input, cursor, roles, word_specials) by the view's other parts.

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

from transformer.interpret import analysis
from transformer.interpret.capture import KINDS, AttentionMaps
from transformer.model.tokenizer import BOUNDARY_PIECES, SPECIAL_PIECES

VERSION = 1
TRAJECTORY_VERSION = 2
_seq = itertools.count(1)  # every payload differs, so the browser redraws even when nothing else changed


def encode_array(a: np.ndarray) -> dict:
    """Weights in [0, 1] -> {"shape", "b64"}: payload.js `weights16` turns it back into a Float32Array."""
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
    """The inverse of encode_array / encode_tril (what payload.js `weights16` computes), for tests and clients."""
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2").astype(np.float32) / 65535.0
    if d.get("packed") == "tril":
        shape = d["shape"]
        out = np.zeros(shape, dtype=np.float32)
        rows, cols = np.tril_indices(shape[-1])
        out[..., rows, cols] = q.reshape(*shape[:-2], len(rows))
        return out
    return q.reshape(d["shape"])


def encode_ints(values) -> dict:
    """Non-negative integers < 65536 -> {"shape", "b64"} of little-endian uint16 (payload.js `u16`)."""
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
            "spans": {"source": _spans(source_tokens), "target": _spans(target_tokens)},  # word merging: lens_maps.js
            "maps": {k: encode_array(maps[k]) for k in KINDS}, "seq": next(_seq)}


def _spans(pieces) -> list[list[int]]:
    return [[a, b] for a, b in analysis.word_spans(list(pieces))]


def step_texts(texts: list[str]) -> dict:
    """The translation after every step: {"text": full, "ends": [length at step t]} when each one is a prefix
    of the last (the usual case), else {"texts": [one string per step]}. The lengths count UTF-16 code units,
    as JavaScript's String.length and slice do (payload.js `textAt`): a character outside the Basic Multilingual
    Plane (an emoji) is 2 of them but 1 Python character. `step_text` reads one back in Python."""
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


def trajectory_payload(traj, *, k: int = 8, words: bool = False, mode: str = "greedy", doc: str = "",
                       elapsed_ms: float | None = None, started: str | None = None) -> dict:
    """A `transformer.decode.trajectory.Trajectory` encoded for the Translate view (every step of the history, shown
    at `traj.cursor`); nothing is computed here.

    Keys: the one-step keys at the cursor (source, target, cursor, next, done, forced: what a v1 payload
    says there), `maps` over all T positions (decoder_self packed lower-triangular), and `steps`:
    ids, pieces, forced, done, greedy (index into `vocab`), topk {k, ids (T, k) into `vocab`, p (T, k)},
    the translation after each step (step_texts), word spans; `roles` of the head atlas; `ui`: the k and
    words the view starts with. A Start's (`started`: the sentence started) also `input` (that sentence, which
    every tab names) and `caveats` (what to read its translation with, shown beside it: assets/translate/caveats.js)."""
    c, T = traj.cursor, traj.n
    vocab: dict[int, int] = {}
    index = lambda i: vocab.setdefault(int(i), len(vocab))
    greedy = [index(g) for g in traj.greedy]
    top_ids = [[index(i) for i in row] for row in traj.topk_ids.tolist()]
    piece_of = traj.piece_names  # every id's text comes from the library
    out = {"v": TRAJECTORY_VERSION, "doc": doc, "mode": mode, "seq": next(_seq),
           "source": list(traj.source), "target": traj.pieces[:c + 1], "cursor": int(c),
           "next": None if traj.done[c] else piece_of[traj.greedy[c]], "done": traj.done[c],
           "forced": traj.forced[:c + 1],
           "specials": list(BOUNDARY_PIECES), "word_specials": list(SPECIAL_PIECES),
           "maps": {"encoder_self": encode_array(traj.maps.encoder_self),
                    "decoder_self": encode_tril(traj.maps.decoder_self), "cross": encode_array(traj.maps.cross)},
           "steps": {"n": T, "ids": traj.ids, "pieces": traj.pieces, "forced": [int(f) for f in traj.forced],
                     "differs": [int(d) for d in traj.differs], "done": [int(d) for d in traj.done],
                     "greedy": greedy, "vocab": [piece_of[i] for i in vocab],
                     "topk": {"k": len(top_ids[0]) if top_ids else 0, "ids": encode_ints(top_ids),
                              "p": encode_array(traj.topk_p)},
                     "spans": {"source": [list(s) for s in traj.source_spans],
                               "target": [list(s) for s in traj.target_spans]},
                     **step_texts(traj.texts)},
           "roles": traj.roles, "languages": list(traj.languages),
           "model": traj.model_key,  # the picker's key: a link names the model by it (assets/shell/link.js)
           "ui": {"k": int(k), "words": bool(words)},
           **({"ms": round(float(elapsed_ms), 1)} if elapsed_ms is not None else {})}
    if traj.ablated:
        out["ablated"] = [[kind, int(layer), int(head)] for kind, layer, head in traj.ablated]
    if started is not None:
        out["input"] = started
        out["caveats"] = [{"kind": c["kind"], "message": c["message"]} for c in traj.caveats]
    return out


def session_payload(view, mode: str = "greedy") -> dict:
    """A `transformer.decode.trajectory.StepView` (DecodingSession.view: one step, pieces or words) encoded; `ablated`
    lists the heads the session switches off (their weights are computed, their outputs zeroed)."""
    out = attention_payload(view.maps, view.source, view.target, cursor=view.cursor, next_piece=view.next_piece,
                            forced=view.forced, done=view.done, mode=mode, differs=view.differs,
                            doc="words" if view.words else "")
    if view.words:
        out.update(words=True, rows=list(view.target), step=view.step)
        del out["spans"]  # already merged: the view must not merge again
    if view.ablated:  # [kind, layer, head] switched off: the view greys their maps
        out["ablated"] = sorted([k, int(l), int(h)] for k, l, h in view.ablated)
    return out
