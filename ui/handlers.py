"""The app's handlers: plain functions of (translator, inputs) -> outputs, tested without a browser.

They never mutate the state they are given (they fork it), never touch process-wide state, and answer
bad input with gr.Error.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import gradio as gr
import numpy as np

from transformer import analysis, figures
from transformer.beam import beam_search, check_beam_size
from transformer.capture import KINDS
from transformer.decoding import DecodingSession, Translator, attend_ids
from transformer.device import describe
from transformer.history import AttentionHistory

from . import payload as P
from .figures import alignment_figure, beam_tree_figure, figure

TOPK = 8
LAYOUT = "maps are [layer][head][query][key]; decoder row t predicts target_tokens[t+1]"
MAX_API_WEIGHTS = 300_000  # /attention's nested lists: about 8 bytes of JSON a weight, so at most ~2.4 MB
EXPORTS_KEPT = 4  # the newest exports stay downloadable; older files (ours and Gradio's cached copies) go
EXPORT_PREFIX = "attention-lens-export-"
FILES_PER_EXPORT = 3
HEAD_RE = re.compile(r"^L(\d{1,2}) H(\d{1,2})$")


def fail(e: Exception):
    raise gr.Error(str(e), print_exception=False)


def need_session(session) -> DecodingSession:
    if not isinstance(session, DecodingSession):
        raise gr.Error("Press Start first: there is no sentence being decoded.", print_exception=False)
    return session.fork()


def check_k(k) -> int:
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 20:
        raise gr.Error(f"top-k must be an integer from 1 to 20, got {k!r}", print_exception=False)
    return k


# -- Translate: step-through decoding ----------------------------------------------------------------

def outputs(session: DecodingSession, k: int = TOPK, words: bool = False):
    """(state, translation so far, attention payload, top-k payload) for a session at its cursor."""
    k = check_k(k)
    topk = {"items": session.topk(k), "done": session.done, "step": session.cursor}
    return session, session.translation, P.session_payload(session, bool(words)), topk


def topk_rows(session: DecodingSession, k: int = P.TOPK_SENT) -> list[list[tuple[int, float]]]:
    """(token id, probability) of the k most probable pieces after every position of the session's history,
    ordered as DecodingSession.topk orders them (probability, then id). One projection for all positions."""
    if not session.positions:
        return []
    probs = session.translator.next_probs(np.stack([p.hidden for p in session.positions]))  # (T, V)
    probs = np.atleast_2d(probs)
    k = min(k, probs.shape[-1])
    kth = np.partition(probs, probs.shape[-1] - k, axis=-1)[:, probs.shape[-1] - k]  # (T,) the k-th largest
    rows = []
    for row, bound in zip(probs, kth):
        cand = np.flatnonzero(row >= bound)  # every tie at the boundary, in id order
        idx = cand[np.argsort(-row[cand], kind="stable")][:k]
        rows.append([(int(i), float(row[i])) for i in idx])
    return rows


def trajectory_outputs(session: DecodingSession, k: int = TOPK, words: bool = False, t0: float | None = None):
    """(state, translation at the cursor, trajectory payload of the whole history, top-k at the cursor)."""
    k = check_k(k)
    rows = topk_rows(session)
    tok = session.translator.tokenizer
    topk = {"items": [(tok.piece(i), p) for i, p in rows[session.cursor][:k]], "done": session.done,
            "step": session.cursor}
    elapsed = None if t0 is None else (time.perf_counter() - t0) * 1000
    payload = P.trajectory_payload(session, topk=rows, k=k, words=bool(words), elapsed_ms=elapsed)
    payload["roles"] = atlas_roles(session.translator.checkpoint_dir)  # the head atlas's role of every head
    return session, session.translation, payload, topk


@functools.lru_cache(maxsize=4)
def atlas_roles(checkpoint_dir) -> dict:
    """{kind: [[role per head] per layer]} from the checkpoint's head atlas ({} without one)."""
    from .atlas_tab import load_atlas_file, roles
    return roles(load_atlas_file(checkpoint_dir))


def start(tr: Translator, text: str, k: int = TOPK, words: bool = False):
    """Decode the whole sentence greedily and send every step at once: the browser steps through it locally.
    The session keeps the whole history with its cursor at 0, so /step, /back, ... (gradio_client) move
    along it as before."""
    t0 = time.perf_counter()
    check_k(k)
    try:
        session = tr.start(text)
    except ValueError as e:
        fail(e)
    for note in session.notes:  # e.g. the input was cut: told to this request's user alone
        gr.Warning(note)
    session.run()
    session.goto(0)
    state, text, payload, topk = trajectory_outputs(session, k, words, t0)
    topk["notes"] = list(session.notes)  # also in the answer, for programs (gradio_client)
    return state, text, payload, topk


def step(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.step()
    return outputs(s, k, words)


def run(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.run()
    return outputs(s, k, words)


def back(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    s.back()
    return outputs(s, k, words)


def goto(tr: Translator, session, i, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    if isinstance(i, float) and i.is_integer():
        i = int(i)
    try:
        s.goto(i)
    except ValueError as e:
        fail(e)
    return outputs(s, k, words)


def reset(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    return outputs(tr.start_ids(s.source_ids), k, words)


def step_view(tr: Translator, session, k: int = TOPK, words: bool = False):
    """Re-render the current step (e.g. after k changed) without moving."""
    return outputs(need_session(session), k, words)


def force(tr: Translator, session, piece, k: int = TOPK, words: bool = False):
    s = need_session(session)
    check_k(k)
    check_piece(piece)
    try:
        s.force(piece)
    except ValueError as e:
        fail(e)
    return outputs(s, k, words)


def check_piece(piece) -> None:
    if not isinstance(piece, str) or not piece or len(piece) > 100:
        fail(ValueError("force needs one piece of the vocabulary"))


def force_at(tr: Translator, session, position, piece, k: int = TOPK, words: bool = False):
    """Force `piece` at the position the browser shows and decode greedily to the end: the new trajectory,
    shown at the forced step (one request for the whole what-if)."""
    t0 = time.perf_counter()
    check_k(k)
    check_piece(piece)
    s = at_position(tr, session, position)
    try:
        s.force(piece)
    except ValueError as e:
        fail(e)
    at = s.cursor
    s.run()
    s.goto(at)
    return trajectory_outputs(s, k, words, t0)


def at_position(tr: Translator, session, position=None) -> DecodingSession:
    """A copy of the session at the position the browser shows. `position`: None or "" (the session's own
    cursor), or {"step": t, "ids": [token ids 0..t], "forced": [0/1 per position]} (a dict, or its JSON as
    the view writes it into #view_pos). When the session's history does not hold those pieces (e.g. the view
    went back to the greedy trajectory after a forced one), the position is decoded again from the source."""
    s = need_session(session)
    if position is None or position == "":
        return s
    if isinstance(position, str):
        try:
            position = json.loads(position) if len(position) < 20_000 else None
        except ValueError:
            position = None
    ids = position.get("ids") if isinstance(position, dict) else None
    forced = position.get("forced", [0] * len(ids)) if isinstance(ids, list) else None
    V, bos = len(tr.tokenizer), tr.config.bos_id
    ok = (isinstance(ids, list) and isinstance(forced, list) and 1 <= len(ids) <= s.limit + 1
          and len(forced) == len(ids) and ids[0] == bos
          and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < V for i in ids)
          and position.get("step", len(ids) - 1) == len(ids) - 1)
    if not ok:
        fail(ValueError("position must be {\"step\": t, \"ids\": [the t+1 token ids from <s>], \"forced\": [...]}"))
    if [p.token for p in s.positions[:len(ids)]] == ids:
        s.cursor = len(ids) - 1
        return s
    r = tr.start_ids(s.source_ids, ablate=s.ablated or None)
    for token, f in zip(ids[1:], forced[1:]):
        try:
            if not f and token == r.positions[r.cursor].greedy:
                r.step()
            else:
                r.force(token)
        except ValueError as e:
            fail(e)
    return r


def reference(tr: Translator, text: str, ref: str):
    """Teacher-forced attention of a reference translation the user typed."""
    try:
        maps = tr.attend(text, ref)
    except ValueError as e:
        fail(e)
    payload = P.attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=len(maps.target_tokens) - 1,
                                  done=True, mode="reference", doc="ref")
    return payload, {"items": [], "done": True}


def export_maps(tr: Translator, session) -> list[str]:
    """The current maps (all kinds, layers, heads) with their tokens: .npz, .json, and an .html page of figures.

    Files live in a bounded cache: each export removes all but the newest EXPORTS_KEPT exports, both our
    own folders and the copies Gradio made of them in its cache, so a public link's disk cannot fill."""
    s = need_session(session)
    maps = s.attention
    out = Path(tempfile.mkdtemp(prefix=EXPORT_PREFIX, dir=export_root()))
    name = f"{EXPORT_PREFIX}step{s.cursor}"
    np.savez_compressed(out / f"{name}.npz", encoder_self=maps.encoder_self, decoder_self=maps.decoder_self,
                        cross=maps.cross, source_tokens=np.array(maps.source_tokens),
                        target_tokens=np.array(maps.target_tokens), translation=np.array(s.translation))
    d = maps.to_dict(decimals=6)
    d.update(translation=s.translation, step=s.cursor,
             layout=LAYOUT)
    (out / f"{name}.json").write_text(json.dumps(d, ensure_ascii=False))
    (out / f"{name}.html").write_text(figures_html(maps), encoding="utf-8")
    prune_exports()
    return [str(out / f"{name}.npz"), str(out / f"{name}.json"), str(out / f"{name}.html")]


def figures_html(maps) -> str:
    """One standalone page: each kind's layers × heads grid (AttentionMaps.figure), plotly.js inlined once."""
    from .components import VENDOR
    parts = [maps.figure(kind).to_html(full_html=False, include_plotlyjs=False) for kind in KINDS]
    js = (VENDOR / "plotly-cartesian.min.js").read_text(encoding="utf-8").replace("</script", "<\\/script")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>attention-lens maps</title>"
            f"<script>{js}</script></head><body>" + "".join(parts) + "</body></html>")


_prune_lock = threading.Lock()


def export_root() -> Path:
    root = Path(tempfile.gettempdir()) / f"{EXPORT_PREFIX}{os.getpid()}"
    root.mkdir(exist_ok=True)
    return root


def gradio_cache() -> Path:
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")


def prune_exports(keep: int = EXPORTS_KEPT) -> None:
    """Keep the newest `keep` export folders of ours and the newest keep * FILES_PER_EXPORT export files in
    Gradio's cache."""
    with _prune_lock:
        ours = sorted(export_root().glob(f"{EXPORT_PREFIX}*"), key=_mtime, reverse=True)
        for folder in ours[keep:]:
            shutil.rmtree(folder, ignore_errors=True)
        cached = sorted(gradio_cache().glob(f"*/{EXPORT_PREFIX}*"), key=_mtime, reverse=True)
        for f in cached[FILES_PER_EXPORT * keep:]:
            f.unlink(missing_ok=True)
            try:
                f.parent.rmdir()  # Gradio's per-file hash folder, when now empty
            except OSError:
                pass


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def export_at(tr: Translator, session, position=None) -> list[str]:
    """export_maps at the position the browser shows."""
    return export_maps(tr, at_position(tr, session, position))


def noop():
    """Does nothing: the benchmark times a Gradio round trip with it."""
    return None


# -- Head ablation -----------------------------------------------------------------------------------

def head_choices(tr: Translator, kind: str) -> list[str]:
    layers = len(tr.model.encoder) if kind == "encoder_self" else len(tr.model.decoder)
    return [f"L{l + 1} H{h + 1}" for l in range(layers) for h in range(tr.config.n_heads)]


def parse_head_labels(kind: str, labels) -> list[tuple[str, int, int]]:
    if labels is None:
        return []
    if not isinstance(labels, (list, tuple)):
        raise gr.Error(f"heads must be a list of labels such as 'L1 H2', got {str(labels)[:40]!r}",
                       print_exception=False)
    out = []
    for lab in labels:
        m = HEAD_RE.match(lab) if isinstance(lab, str) else None
        if not m:
            raise gr.Error(f"not a head label (expected e.g. 'L1 H2'): {str(lab)[:40]!r}", print_exception=False)
        out.append((kind, int(m.group(1)) - 1, int(m.group(2)) - 1))
    return out


def ablate(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK):
    """Intact vs heads-switched-off: translations, top-k at the current step, chosen-token probabilities, maps."""
    s = need_session(session)
    k = check_k(k)
    heads = (parse_head_labels("encoder_self", enc_heads) + parse_head_labels("decoder_self", dec_heads)
             + parse_head_labels("cross", cross_heads))
    if not heads:
        raise gr.Error("Tick at least one head to switch off.", print_exception=False)
    try:
        a = tr.start_ids(s.source_ids, ablate=heads)
    except ValueError as e:
        fail(e)
    for token in s.target_ids[1:]:  # follow the intact prefix; dashed chips mark where the ablated model disagrees
        a._append(token, forced=token != a.positions[a.cursor].greedy)
    intact_run = tr.start_ids(s.source_ids).run()
    ablated_run = tr.start_ids(s.source_ids, ablate=heads).run()
    ids = intact_run.target_ids
    p0, p1 = tr.token_probs(s.source_ids, ids), tr.token_probs(s.source_ids, ids, heads)
    pieces = tr.tokenizer.pieces(ids)
    probs = [[i + 1, pieces[i + 1], round(float(x), 4), round(float(y), 4), round(float(y - x), 4)]
             for i, (x, y) in enumerate(zip(p0, p1))]
    ti, ta = s.topk(k), a.topk(k)
    topk = [[r + 1, ti[r][0], round(ti[r][1], 4), ta[r][0], round(ta[r][1], 4)] for r in range(k)]
    summary = (f"{len(heads)} head(s) switched off. Top-k below is at step {s.cursor} of the Translate tab, "
               f"after the same prefix for both models.")
    return (intact_run.translation, ablated_run.translation, probs, topk, P.session_payload(a, mode="ablated"),
            summary)


def ablate_at(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK, position=None):
    """ablate at the position the browser shows (at_position)."""
    return ablate(tr, at_position(tr, session, position), enc_heads, dec_heads, cross_heads, k)


# -- Beam search -------------------------------------------------------------------------------------

def beam(tr: Translator, text: str, size):
    """Beam search: the tree, the hypotheses, and the attention of the best one."""
    try:
        size = check_beam_size(int(size) if isinstance(size, float) and size.is_integer() else size)
        result = beam_search(tr.model, tr.source_ids(text), size)
    except ValueError as e:
        fail(e)
    choices = [f"{i + 1}. {tr.tokenizer.decode(h.ids)}  (log-prob {h.score:.2f}, normalised {h.normalized:.3f}"
               f"{'' if h.finished else ', unfinished'})" for i, h in enumerate(result.hypotheses)]
    state = {"source_ids": result.source_ids, "hyps": [h.ids for h in result.hypotheses],
             "paths": [h.path for h in result.hypotheses], "tree": result.tree}
    fig = beam_tree_figure(result.tree, tr.tokenizer.piece, highlight_path=result.hypotheses[0].path)
    return state, figure(fig), gr.update(choices=choices, value=choices[0]), beam_payload(tr, state, 0)


def beam_payload(tr: Translator, state: dict, i: int) -> dict:
    tgt = [tr.config.bos_id] + list(state["hyps"][i])
    maps = attend_ids(tr.model, state["source_ids"], tgt)
    return P.attention_payload(maps, tr.tokenizer.pieces(state["source_ids"]), tr.tokenizer.pieces(tgt),
                               cursor=len(tgt) - 1, done=True, mode="beam", doc="beam")


def beam_pick(tr: Translator, state, choice):
    if not isinstance(state, dict) or not state.get("hyps"):
        raise gr.Error("Run the beam search first.", print_exception=False)
    m = re.match(r"^(\d+)\.", choice if isinstance(choice, str) else "")
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < len(state["hyps"]):
        raise gr.Error("pick one of the listed hypotheses", print_exception=False)
    fig = beam_tree_figure(state["tree"], tr.tokenizer.piece, highlight_path=state["paths"][i])
    return figure(fig), beam_payload(tr, state, i)


# -- Across layers -----------------------------------------------------------------------------------

def across_layers(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15):
    """Encoder attention rollout, and the source-target alignment from cross-attention (lines + matrix)."""
    s = need_session(session)
    maps = s.attention
    layer = None if layer_choice in (None, "all layers") else choice_index(layer_choice, "layer", maps.cross.shape[0])
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise gr.Error("threshold must be in (0, 1]", print_exception=False)
    roll = analysis.rollout(maps.encoder_self)[-1]  # (S, S) through all encoder layers
    src = [figures.label(p) for p in maps.source_tokens]
    fig_roll = figures.heatmap(roll, src, src, "Encoder attention rollout (all layers, residual-aware)")
    # row t of cross-attention is the query at target token t: it predicts token t+1
    predicted = list(maps.target_tokens[1:]) + ([] if s.done else [tr.tokenizer.piece(s.positions[s.cursor].greedy)])
    align = analysis.alignment(maps.cross, layer)[:len(predicted)]  # (T', S)
    which = "all layers" if layer is None else f"layer {layer + 1}"
    fig_lines = alignment_figure(align, maps.source_tokens, predicted, threshold=float(threshold))
    fig_lines["layout"]["title"] = {"text": f"Source pieces each target piece attended to while being predicted "
                                            f"({which}, mean of heads)"}
    fig_mat = figures.heatmap(align, src, [figures.label(p) for p in predicted],
                              f"Alignment matrix ({which}): rows are predicted target pieces")
    return fig_roll, figure(fig_lines), fig_mat


def across_layers_at(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                     position=None):
    """across_layers at the position the browser shows (at_position)."""
    return across_layers(tr, at_position(tr, session, position), layer_choice, threshold)


def across_layers_follow(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                         position=None):
    """across_layers_at when the tab is shown or the step changes: quietly nothing before Start."""
    if not isinstance(session, DecodingSession):
        return gr.skip(), gr.skip(), gr.skip()
    return across_layers_at(tr, session, layer_choice, threshold, position)


def choice_index(text, what: str, n: int) -> int:
    """'layer 2' -> 1 for a dropdown of n '<what> i' choices; gr.Error otherwise."""
    m = re.match(rf"^{what} (\d+)$", str(text))
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < n:
        raise gr.Error(f"{what} must be '{what} 1'..'{what} {n}'", print_exception=False)
    return i


# -- Attention being learned --------------------------------------------------------------------------

def learned(history: AttentionHistory | None, example, epoch, layer: str = "all layers",
            head: str = "mean of heads"):
    """Cross-attention of one example sentence after one training epoch, and its greedy translation then."""
    if history is None or not history.epochs:
        raise gr.Error("this checkpoint has no attention history", print_exception=False)
    if isinstance(example, float) and example.is_integer():
        example = int(example)
    if isinstance(epoch, float) and epoch.is_integer():
        epoch = int(epoch)
    try:
        cross, src, tgt = history.cross(example, epoch), history.source(example), history.target(example, epoch)
    except (ValueError, KeyError, TypeError) as e:
        raise gr.Error(f"pick one of the example sentences and an epoch from {history.epochs[0]} to "
                       f"{history.epochs[-1]} ({e})", print_exception=False) from None
    L, H = cross.shape[:2]
    ls = range(L) if layer in (None, "all layers") else [choice_index(layer, "layer", L)]
    hs = range(H) if head in (None, "mean of heads") else [choice_index(head, "head", H)]
    w = cross[list(ls)][:, list(hs)].mean(axis=(0, 1))  # (T, S)
    rows = figures.row_labels(tgt, None)[:w.shape[0]]
    fig = figures.heatmap(w, [figures.label(p) for p in src], rows, f"Cross-attention after epoch {epoch}", zmax=1.0)
    text = "".join(p for p in tgt if p not in ("<s>", "</s>")).replace("▁", " ").strip()
    return fig, text


# -- API-only endpoints ------------------------------------------------------------------------------

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


# -- Model card --------------------------------------------------------------------------------------

def model_card(tr: Translator, metrics: dict) -> str:
    c = tr.config
    test = metrics.get("test", {}).get("test_2016_flickr/greedy", {})
    rows = [("Architecture", f"encoder-decoder Transformer, pre-LN, {c.n_encoder_layers}+{c.n_decoder_layers} layers, "
                             f"{c.n_heads} heads, d_model {c.d_model}, FFN {c.d_ff}, sinusoidal positions"),
            ("Parameters", f"{tr.model.num_parameters():,}"),
            ("Vocabulary", f"{c.vocab_size} joint German+English SentencePiece pieces, tied embeddings"),
            ("Device", describe(tr.device))]
    if test:
        rows.append(("test_2016_flickr (greedy)", f"BLEU {test.get('bleu')} cased, {test.get('bleu_lc')} lowercased, "
                                                   f"chrF {test.get('chrf')}"))
    if metrics.get("val_bleu") is not None:
        rows.append(("Validation BLEU", f"{metrics['val_bleu']} ({metrics.get('weights', '')})"))
    if metrics.get("train_seconds"):
        rows.append(("Training", f"{metrics.get('epochs')} epochs, {metrics['train_seconds'] / 60:.0f} min on "
                                 f"{metrics.get('device', '?')}"))
    return "| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
