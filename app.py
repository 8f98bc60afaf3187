"""attention-lens: watch our Transformer translate German to English, one token at a time.

    python app.py [--host 127.0.0.1] [--port 7860] [--share] [--auth user:password]
                  [--checkpoint DIR] [--device auto|cpu|cuda]
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
import warnings
from functools import partial
from pathlib import Path

import gradio as gr
import numpy as np
import torch

from transformer import analysis, plots
from transformer.beam import beam_search, check_beam_size
from transformer.capture import AttentionMaps
from transformer.checkpoint import LOG, METRICS, CheckpointError, read_json
from transformer.decoding import DecodingSession, Translator, attend_ids
from transformer.device import describe
from transformer.train import HISTORY

ROOT = Path(__file__).resolve().parent
ASSETS = ROOT / "assets"
VENDOR = ASSETS / "vendor"  # plotly.js cartesian bundle (1.5 MB instead of 4.8 MB: faster first load)
TOPK = 8
SESSION_TTL_S = 3600
QUEUE_MAX = 256
CONCURRENCY = 4


def checked(component, what: str):
    """Gradio's own number parsing raises TypeError on text: answer with a clear gr.Error instead.
    (Wraps the instance's preprocess; subclassing a component would make Gradio write a .pyi stub.)"""
    inner = component.preprocess

    def preprocess(payload):
        try:
            return inner(payload)
        except gr.Error:
            raise
        except (TypeError, ValueError) as e:
            raise gr.Error(f"{what} must be a number, got {str(payload)[:40]!r}", print_exception=False) from e

    component.preprocess = preprocess
    return component


# -- handlers: plain functions of (translator, inputs) -> outputs ------------------------------------


def _fail(e: Exception):
    raise gr.Error(str(e), print_exception=False)


def _need(session) -> DecodingSession:
    if not isinstance(session, DecodingSession):
        raise gr.Error("Press Start first: there is no sentence being decoded.", print_exception=False)
    return session.fork()


_seq = itertools.count(1)  # every response differs, so the browser redraws even when nothing else changed


def session_payload(session: DecodingSession, words: bool = False, mode: str = "greedy") -> dict:
    """The attention view's payload for a session at its cursor (pieces, or merged into words)."""
    maps = session.attention
    p = session.positions[session.cursor]
    tok = session.translator.tokenizer
    forced = [q.forced for q in session.positions[:session.cursor + 1]]
    nxt = None if session.done else tok.piece(p.greedy)
    if words:
        payload = word_payload(maps, forced, cursor=session.cursor, next_piece=nxt, done=session.done, mode=mode)
    else:
        payload = plots.attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=session.cursor,
                                          next_piece=nxt, forced=forced, done=session.done, mode=mode)
    payload["seq"] = next(_seq)
    return payload


def word_payload(maps, forced, *, cursor, next_piece, done, mode) -> dict:
    """Pieces merged into words: sum over a word's key pieces, mean over its query pieces."""
    ss, ts = analysis.word_spans(maps.source_tokens), analysis.word_spans(maps.target_tokens)
    merged = AttentionMaps(analysis.merge_words(maps.encoder_self, ss, ss).astype("float32"),
                           analysis.merge_words(maps.decoder_self, ts, ts).astype("float32"),
                           analysis.merge_words(maps.cross, ts, ss).astype("float32"))
    tw = analysis.word_labels(maps.target_tokens, ts)
    word_of = next(i for i, (a, b) in enumerate(ts) if a <= cursor < b)
    payload = plots.attention_payload(merged, analysis.word_labels(maps.source_tokens, ss), tw, cursor=word_of,
                                      next_piece=next_piece, forced=[any(forced[a:b]) for a, b in ts], done=done,
                                      mode=mode, doc="words")
    payload.update(words=True, rows=list(tw), step=cursor)
    return payload


def views(session: DecodingSession, k: int = TOPK, words: bool = False):
    """The three per-step outputs: translation text, attention payload, top-k payload."""
    topk = {"items": session.topk(k), "done": session.done, "step": session.cursor}
    return session.translation, session_payload(session, bool(words)), topk


def outputs(session: DecodingSession, k: int = TOPK, words: bool = False):
    return (session, *views(session, k, words))


def start(tr: Translator, text: str, k: int = TOPK, words: bool = False):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session = tr.start(text)
        for w in caught:
            gr.Warning(str(w.message))
    except ValueError as e:
        _fail(e)
    return outputs(session, _k(k), words)


def step(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = _need(session)
    s.step()
    return outputs(s, _k(k), words)


def run(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = _need(session)
    s.run()
    return outputs(s, _k(k), words)


def back(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = _need(session)
    s.back()
    return outputs(s, _k(k), words)


def goto(tr: Translator, session, i, k: int = TOPK, words: bool = False):
    s = _need(session)
    if isinstance(i, float) and i.is_integer():
        i = int(i)
    try:
        s.goto(i)
    except ValueError as e:
        _fail(e)
    return outputs(s, _k(k), words)


def reset(tr: Translator, session, k: int = TOPK, words: bool = False):
    s = _need(session)
    return outputs(tr.start_ids(s.source_ids), _k(k), words)


def force(tr: Translator, session, piece, k: int = TOPK, words: bool = False):
    s = _need(session)
    if not isinstance(piece, str) or not piece or len(piece) > 100:
        _fail(ValueError("force needs one piece of the vocabulary"))
    try:
        s.force(piece)
    except ValueError as e:
        _fail(e)
    return outputs(s, _k(k), words)


def reference(tr: Translator, text: str, ref: str):
    """Teacher-forced attention of a reference translation the user typed."""
    try:
        maps = tr.attend(text, ref)
    except ValueError as e:
        _fail(e)
    T = len(maps.target_tokens)
    payload = plots.attention_payload(maps, maps.source_tokens, maps.target_tokens, cursor=T - 1, done=True,
                                      mode="reference", doc="ref")
    payload["seq"] = next(_seq)
    return payload, {"items": [], "done": True}


def _k(k) -> int:
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 20:
        raise gr.Error(f"top-k must be an integer from 1 to 20, got {k!r}", print_exception=False)
    return k


# -- beyond step-through: ablation, beam, across layers, export, attention being learned -------------

KIND_LABELS = {"encoder_self": "encoder self", "decoder_self": "decoder self", "cross": "cross"}
HEAD_RE = re.compile(r"^L(\d{1,2}) H(\d{1,2})$")


def head_choices(tr: Translator, kind: str) -> list[str]:
    layers = len(tr.model.encoder) if kind == "encoder_self" else len(tr.model.decoder)
    return [f"L{l + 1} H{h + 1}" for l in range(layers) for h in range(tr.config.n_heads)]


def parse_head_labels(tr: Translator, kind: str, labels) -> list[tuple[str, int, int]]:
    out = []
    for lab in labels or []:
        m = HEAD_RE.match(lab) if isinstance(lab, str) else None
        if not m:
            raise gr.Error(f"not a head label (expected e.g. 'L1 H2'): {str(lab)[:40]!r}", print_exception=False)
        out.append((kind, int(m.group(1)) - 1, int(m.group(2)) - 1))
    return out


def ablate(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK):
    """Intact vs heads-switched-off: translations, top-k at the current step, chosen-token probabilities, maps."""
    s = _need(session)
    k = _k(k)
    heads = (parse_head_labels(tr, "encoder_self", enc_heads) + parse_head_labels(tr, "decoder_self", dec_heads)
             + parse_head_labels(tr, "cross", cross_heads))
    if not heads:
        raise gr.Error("Tick at least one head to switch off.", print_exception=False)
    try:
        a = tr.start_ids(s.source_ids, ablate=heads)
    except ValueError as e:
        _fail(e)
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
    return intact_run.translation, ablated_run.translation, probs, topk, session_payload(a, mode="ablated"), summary


def beam(tr: Translator, text: str, size):
    """Beam search: the tree, the hypotheses, and the attention of the best one."""
    try:
        size = check_beam_size(int(size) if isinstance(size, float) and size.is_integer() else size)
        result = beam_search(tr.model, tr.source_ids(text), size)
    except ValueError as e:
        _fail(e)
    choices = beam_labels(tr, result)
    state = {"source_ids": result.source_ids, "hyps": [h.ids for h in result.hypotheses],
             "paths": [h.path for h in result.hypotheses], "tree": result.tree}
    fig = plots.beam_tree_figure(result.tree, tr.tokenizer.piece, highlight_path=result.hypotheses[0].path)
    return (state, go_figure(fig), gr.update(choices=choices, value=choices[0]), beam_payload(tr, state, 0))


def beam_labels(tr: Translator, result) -> list[str]:
    return [f"{i + 1}. {tr.tokenizer.decode(h.ids)}  (log-prob {h.score:.2f}, normalised {h.normalized:.3f}"
            f"{'' if h.finished else ', unfinished'})" for i, h in enumerate(result.hypotheses)]


def beam_payload(tr: Translator, state: dict, i: int) -> dict:
    tgt = [tr.config.bos_id] + list(state["hyps"][i])
    maps = attend_ids(tr.model, state["source_ids"], tgt)
    payload = plots.attention_payload(maps, tr.tokenizer.pieces(state["source_ids"]), tr.tokenizer.pieces(tgt),
                                      cursor=len(tgt) - 1, done=True, mode="beam", doc="beam")
    payload["seq"] = next(_seq)
    return payload


def beam_pick(tr: Translator, state, choice):
    if not isinstance(state, dict) or not state.get("hyps"):
        raise gr.Error("Run the beam search first.", print_exception=False)
    m = re.match(r"^(\d+)\.", choice or "")
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < len(state["hyps"]):
        raise gr.Error("pick one of the listed hypotheses", print_exception=False)
    fig = plots.beam_tree_figure(state["tree"], tr.tokenizer.piece, highlight_path=state["paths"][i])
    return go_figure(fig), beam_payload(tr, state, i)


def across_layers(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15):
    """Encoder attention rollout, and the source-target alignment from cross-attention (lines + matrix)."""
    s = _need(session)
    maps = s.attention
    L = maps.cross.shape[0]
    if layer_choice in (None, "all layers"):
        layer = None
    else:
        m = re.match(r"^layer (\d+)$", str(layer_choice))
        layer = int(m.group(1)) - 1 if m else -1
        if not 0 <= layer < L:
            raise gr.Error(f"layer must be 'all layers' or 'layer 1'..'layer {L}'", print_exception=False)
    if not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise gr.Error("threshold must be in (0, 1]", print_exception=False)
    roll = analysis.rollout(maps.encoder_self)[-1]  # (S, S) through all encoder layers
    src = [plots.label(p) for p in maps.source_tokens]
    fig_roll = plots.heatmap_figure(roll, src, src, "Encoder attention rollout (all layers, residual-aware)")
    # row t of cross-attention is the query at target token t: it predicts token t+1
    predicted = list(maps.target_tokens[1:]) + ([] if s.done else [tr.tokenizer.piece(s.positions[s.cursor].greedy)])
    align = analysis.alignment(maps.cross, layer)[:len(predicted)]  # (T', S)
    which = "all layers" if layer is None else f"layer {layer + 1}"
    fig_lines = plots.alignment_figure(align, maps.source_tokens, predicted, threshold=float(threshold))
    fig_lines["layout"]["title"] = {"text": f"Source pieces each target piece attended to while being predicted ({which}, mean of heads)"}
    fig_mat = plots.heatmap_figure(align, src, [plots.label(p) for p in predicted],
                                   f"Alignment matrix ({which}): rows are predicted target pieces")
    return go_figure(fig_roll), go_figure(fig_lines), go_figure(fig_mat)


def export_maps(tr: Translator, session) -> list[str]:
    """The current maps (all kinds, layers, heads) with their tokens, as .npz and .json files."""
    s = _need(session)
    maps = s.attention
    out = Path(tempfile.mkdtemp(prefix="attention-lens-"))
    name = f"attention_step{s.cursor}"
    np.savez_compressed(out / f"{name}.npz", encoder_self=maps.encoder_self, decoder_self=maps.decoder_self,
                        cross=maps.cross, source_tokens=np.array(maps.source_tokens),
                        target_tokens=np.array(maps.target_tokens), translation=np.array(s.translation))
    d = maps.to_dict(decimals=6)
    d.update(translation=s.translation, step=s.cursor,
             layout="maps are [layer][head][query][key]; decoder row t predicts target_tokens[t+1]")
    (out / f"{name}.json").write_text(json.dumps(d, ensure_ascii=False))
    return [str(out / f"{name}.npz"), str(out / f"{name}.json")]


class History:
    """Cross-attention of fixed example sentences recorded at the end of every training epoch."""

    def __init__(self, path: Path):
        self.z = np.load(path) if path.exists() else None
        self.sentences = [str(x) for x in self.z["sentences"]] if self.z is not None else []
        self.epochs = [int(e) for e in self.z["epochs"]] if self.z is not None else []

    def view(self, example: int, epoch: int, layer: str = "all layers", head: str = "mean of heads"):
        if not self.epochs:
            raise gr.Error("this checkpoint has no attention history", print_exception=False)
        if not isinstance(example, int) or not 0 <= example < len(self.sentences):
            raise gr.Error("pick one of the example sentences", print_exception=False)
        if epoch not in self.epochs:
            raise gr.Error(f"epoch must be one of {self.epochs[0]}..{self.epochs[-1]}", print_exception=False)
        cross = self.z[f"cross_{example}_e{epoch}"].astype(np.float32)  # (L, H, T, S)
        L, H = cross.shape[:2]
        ls = range(L) if layer in (None, "all layers") else [_index(layer, "layer", L)]
        hs = range(H) if head in (None, "mean of heads") else [_index(head, "head", H)]
        w = cross[list(ls)][:, list(hs)].mean(axis=(0, 1))  # (T, S)
        src = [str(p) for p in self.z[f"src_{example}"]]
        tgt = [str(p) for p in self.z[f"tgt_{example}_e{epoch}"]]
        rows = plots.row_labels(tgt, None)[:w.shape[0]]
        fig = plots.heatmap_figure(w, [plots.label(p) for p in src], rows,
                                   f"Cross-attention after epoch {epoch}", zmax=1.0)
        text = "".join(p for p in tgt if p not in ("<s>", "</s>")).replace("▁", " ").strip()
        return go_figure(fig), text


def _index(label: str, what: str, n: int) -> int:
    m = re.match(rf"^{what} (\d+)$", str(label))
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < n:
        raise gr.Error(f"{what} must be '{what} 1'..'{what} {n}'", print_exception=False)
    return i


def go_figure(fig: dict):
    import plotly.graph_objects as go
    return go.Figure(fig)


# -- API-only endpoints ------------------------------------------------------------------------------


def api_translate(tr: Translator, text: str) -> str:
    try:
        return tr.translate(text)
    except ValueError as e:
        _fail(e)


def api_attention(tr: Translator, text: str) -> dict:
    """Greedy translation of `text` with all three kinds of attention as nested lists."""
    try:
        s = tr.start(text).run()
    except ValueError as e:
        _fail(e)
    d = s.attention.to_dict(decimals=5)
    d["translation"] = s.translation
    d["layout"] = "maps are [layer][head][query][key]; decoder row t predicts target_tokens[t+1]"
    return d


# -- the page ------------------------------------------------------------------------------------------


def model_card(tr: Translator) -> str:
    c = tr.config
    m = read_json(tr.checkpoint_dir / METRICS, {}) if tr.checkpoint_dir else {}
    test = m.get("test", {}).get("test_2016_flickr/greedy", {})
    rows = [("Architecture", f"encoder-decoder Transformer, pre-LN, {c.n_encoder_layers}+{c.n_decoder_layers} layers, "
                             f"{c.n_heads} heads, d_model {c.d_model}, FFN {c.d_ff}, sinusoidal positions"),
            ("Parameters", f"{tr.model.num_parameters():,}"),
            ("Vocabulary", f"{c.vocab_size} joint German+English SentencePiece pieces, tied embeddings"),
            ("Device", describe(tr.device))]
    if test:
        rows.append(("test_2016_flickr (greedy)", f"BLEU {test.get('bleu')} cased, {test.get('bleu_lc')} lowercased, "
                                                   f"chrF {test.get('chrf')}"))
    if m.get("val_bleu") is not None:
        rows.append(("Validation BLEU", f"{m['val_bleu']} ({m.get('weights', '')})"))
    if m.get("train_seconds"):
        rows.append(("Training", f"{m.get('epochs')} epochs, {m['train_seconds'] / 60:.0f} min on {m.get('device', '?')}"))
    return "| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)


def examples() -> list[str]:
    path = ASSETS / "examples_de.txt"
    return [l.strip() for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] if path.exists() else []


def lens_view(elem_id: str, css: str, head: str) -> gr.HTML:
    """An attention view (assets/lens.*): heatmap + layers x heads grid, drawn in the browser."""
    return gr.HTML(None, html_template=(ASSETS / "lens.html").read_text(), css_template=css,
                   js_on_load=(ASSETS / "lens.js").read_text(), head=head, elem_id=elem_id)


def build_demo(tr: Translator) -> gr.Blocks:
    gr.set_static_paths([str(VENDOR)])
    head = f'<script src="/gradio_api/file={VENDOR}/plotly-cartesian.min.js"></script>'
    css = (ASSETS / "lens.css").read_text()
    conc = dict(concurrency_limit=CONCURRENCY, concurrency_id="model")
    fast = dict(conc, show_progress="hidden", trigger_mode="multiple")  # a step must not flash a spinner
    history = History(tr.checkpoint_dir / HISTORY) if tr.checkpoint_dir else History(Path("/nonexistent"))
    L_dec, H = len(tr.model.decoder), tr.config.n_heads
    with gr.Blocks(title="attention-lens", delete_cache=(3600, 3600)) as demo:
        gr.Markdown("# attention-lens\nWatch a Transformer translate German → English one token at a time, "
                    "and see what every layer and head attends to.  \n"
                    "**1.** Type or pick a German sentence and press **Start**. **2.** Press **Step ▶** to let the "
                    "model choose the next piece (or click another piece in the top-k list to force it). "
                    "**3.** Read the heatmaps: each row is one token asking *where should I look?*, each column a "
                    "token it can look at; brighter means more attention.")
        state = gr.State(None, time_to_live=SESSION_TTL_S)
        with gr.Tab("Translate"):
            with gr.Row():
                source = gr.Textbox(label="German sentence", elem_id="source", lines=2, max_length=2000, scale=4,
                                    placeholder="Ein Hund rennt durch den Schnee.")
                with gr.Column(scale=1, min_width=220):
                    with gr.Row():
                        b_start = gr.Button("Start", variant="primary", elem_id="start")
                        b_reset = gr.Button("Reset", elem_id="reset")
                    with gr.Row():
                        b_back = gr.Button("◀ Back", elem_id="back")
                        b_step = gr.Button("Step ▶", elem_id="step")
                        b_run = gr.Button("Run ▶▶", elem_id="run")
            gr.Examples(examples(), inputs=source, label="Examples")
            translation = gr.Textbox(label="Translation so far", elem_id="translation", interactive=False)
            with gr.Row():
                with gr.Column(scale=4):
                    attention = lens_view("attention", css, head)
                with gr.Column(scale=1, min_width=240):
                    gr.Markdown("**Next piece: top-k** (click one to force it)")
                    topk = gr.HTML(None, html_template='<div class="topk-list"></div><div class="topk-note"></div>',
                                   css_template=css, js_on_load=(ASSETS / "topk.js").read_text(), elem_id="topk")
                    k = checked(gr.Slider(1, 20, value=TOPK, step=1, label="k", elem_id="k"), "top-k")
                    words = gr.Checkbox(False, label="merge pieces into words", elem_id="words",
                                        info="sum over a word's key pieces, mean over its query pieces")
                    with gr.Accordion("Inspect a reference translation", open=False):
                        ref = gr.Textbox(label="English reference", elem_id="reference", lines=2, max_length=2000)
                        b_ref = gr.Button("Show its attention (teacher-forced)", elem_id="show_reference")
                    with gr.Accordion("Go to a step", open=False):
                        step_no = checked(gr.Number(0, precision=None, step=1, label="step index (0 = only <s>)",
                                                    elem_id="goto_index"), "step index")
                        b_goto = gr.Button("Go", elem_id="goto")
                    with gr.Accordion("Export the maps", open=False):
                        b_export = gr.Button("All kinds, layers and heads: .npz + .json", elem_id="export")
                        files = gr.File(label="Files", file_count="multiple", elem_id="export_files")
        with gr.Tab("Head ablation", elem_id="tab_ablation"):
            gr.Markdown("Switch off heads (their outputs are zeroed for this request only; the shared model is "
                        "never edited) and compare with the intact model on the sentence of the Translate tab.")
            with gr.Row():
                enc_heads = gr.CheckboxGroup(head_choices(tr, "encoder_self"), label="Encoder self-attention heads",
                                             elem_id="ablate_enc")
                dec_heads = gr.CheckboxGroup(head_choices(tr, "decoder_self"), label="Decoder self-attention heads",
                                             elem_id="ablate_dec")
                cross_heads = gr.CheckboxGroup(head_choices(tr, "cross"), label="Cross-attention heads",
                                               elem_id="ablate_cross")
            b_ablate = gr.Button("Compare", variant="primary", elem_id="ablate_run")
            ablate_note = gr.Textbox(label="", show_label=False, interactive=False, elem_id="ablate_note")
            with gr.Row():
                intact_text = gr.Textbox(label="Intact model (greedy)", interactive=False, elem_id="intact_translation")
                ablated_text = gr.Textbox(label="Heads switched off (greedy)", interactive=False,
                                          elem_id="ablated_translation")
            with gr.Row():
                prob_table = gr.Dataframe(headers=["position", "piece", "p intact", "p ablated", "change"],
                                          label="Probability of each token of the intact translation",
                                          interactive=False, elem_id="ablate_probs")
                topk_table = gr.Dataframe(headers=["rank", "intact", "p", "ablated", "p"],
                                          label="Top-k at the current step", interactive=False, elem_id="ablate_topk")
            ablated_view = lens_view("attention_ablated", css, head)
        with gr.Tab("Beam search", elem_id="tab_beam"):
            gr.Markdown("Greedy decoding keeps one hypothesis; beam search keeps several. The tree shows every "
                        "kept piece per step (rank 1 at the top); pick a hypothesis to see its attention.")
            with gr.Row():
                beam_size = gr.Slider(1, 8, value=4, step=1, label="beam size", elem_id="beam_size")
                b_beam = gr.Button("Run beam search on the sentence above", variant="primary", elem_id="beam_run")
            beam_state = gr.State(None, time_to_live=SESSION_TTL_S)
            beam_tree = gr.Plot(label="Beam tree", elem_id="beam_tree")
            beam_choice = gr.Dropdown([], label="Hypothesis", elem_id="beam_choice")
            beam_view = lens_view("attention_beam", css, head)
        with gr.Tab("Across layers", elem_id="tab_layers"):
            gr.Markdown("For the current step of the Translate tab: attention rollout through the encoder "
                        "(Abnar & Zuidema 2020), and which source pieces each target piece attended to.")
            with gr.Row():
                layer_pick = gr.Dropdown(["all layers"] + [f"layer {i + 1}" for i in range(L_dec)],
                                         value="all layers", label="cross-attention layer", elem_id="align_layer")
                threshold = gr.Slider(0.05, 1.0, value=0.15, step=0.05, label="draw links with weight ≥",
                                      elem_id="align_threshold")
                b_layers = gr.Button("Show", variant="primary", elem_id="layers_run")
            align_lines = gr.Plot(label="Alignment", elem_id="align_lines")
            with gr.Row():
                align_matrix = gr.Plot(label="Alignment matrix", elem_id="align_matrix")
                rollout_plot = gr.Plot(label="Encoder rollout", elem_id="rollout")
        with gr.Tab("Attention being learned", elem_id="tab_learned"):
            if history.epochs:
                gr.Markdown("Cross-attention of fixed example sentences, recorded at the end of every training "
                            "epoch: watch the alignment emerge from noise.")
                with gr.Row():
                    ex = gr.Dropdown([(t, i) for i, t in enumerate(history.sentences)], value=0, label="sentence",
                                     elem_id="learned_example")
                    epoch = gr.Slider(history.epochs[0], history.epochs[-1], value=history.epochs[-1], step=1,
                                      label="epoch", elem_id="learned_epoch")
                    l_layer = gr.Dropdown(["all layers"] + [f"layer {i + 1}" for i in range(L_dec)],
                                          value="all layers", label="layer", elem_id="learned_layer")
                    l_head = gr.Dropdown(["mean of heads"] + [f"head {i + 1}" for i in range(H)],
                                         value="mean of heads", label="head", elem_id="learned_head")
                learned_text = gr.Textbox(label="Greedy translation at this epoch", interactive=False,
                                          elem_id="learned_translation")
                learned_plot = gr.Plot(label="Cross-attention", elem_id="learned_plot")
                l_inputs = [ex, epoch, l_layer, l_head]
                learned = lambda e, ep, la, he: history.view(int(e) if e is not None else -1, int(ep), la, he)
                for c in l_inputs:
                    c.change(learned, l_inputs, [learned_plot, learned_text], api_name=False, **conc)
                demo.load(learned, l_inputs, [learned_plot, learned_text], api_name=False)
            else:
                gr.Markdown("This checkpoint has no attention history (`attention_history.npz`).")
        with gr.Tab("Model"):
            gr.Markdown(model_card(tr), elem_id="model_card")
            log = read_json(tr.checkpoint_dir / LOG, None) if tr.checkpoint_dir else None
            if log and log.get("epochs"):
                gr.Plot(go_figure(plots.training_curves(log)), label="Training curves", elem_id="curves")

        outs = [state, translation, attention, topk]
        b_start.click(partial(start, tr), [source, k, words], outs, api_name="start", **conc)
        source.submit(partial(start, tr), [source, k, words], outs, api_visibility="private", **conc)
        b_step.click(partial(step, tr), [state, k, words], outs, api_name="step", **fast)
        b_run.click(partial(run, tr), [state, k, words], outs, api_name="run", **fast)
        b_back.click(partial(back, tr), [state, k, words], outs, api_name="back", **fast)
        b_reset.click(partial(reset, tr), [state, k, words], outs, api_name="reset", **fast)
        b_goto.click(partial(goto, tr), [state, step_no, k, words], outs, api_name="goto", **fast)
        k.release(partial(step_view, tr), [state, k, words], outs, api_name="topk", **conc)
        words.input(partial(step_view, tr), [state, k, words], outs, api_visibility="private", **conc)

        def on_force(session, kk, ww, evt: gr.EventData):
            return force(tr, session, (evt._data or {}).get("piece") if evt is not None else None, kk, ww)

        topk.click(on_force, [state, k, words], outs, api_visibility="private", **fast)
        piece_in = gr.Textbox(visible=False)
        b_force = gr.Button(visible=False)
        b_force.click(partial(force, tr), [state, piece_in, k, words], outs, api_name="force", **conc)
        b_ref.click(partial(reference, tr), [source, ref], [attention, topk], api_name="reference", **conc)
        b_export.click(partial(export_maps, tr), [state], [files], api_name="export", **conc)
        b_ablate.click(partial(ablate, tr), [state, enc_heads, dec_heads, cross_heads, k],
                       [intact_text, ablated_text, prob_table, topk_table, ablated_view, ablate_note],
                       api_name="ablate", **conc)
        b_beam.click(partial(beam, tr), [source, beam_size], [beam_state, beam_tree, beam_choice, beam_view],
                     api_name="beam", **conc)
        beam_choice.input(partial(beam_pick, tr), [beam_state, beam_choice], [beam_tree, beam_view],
                          api_name="beam_pick", **conc)
        b_layers.click(partial(across_layers, tr), [state, layer_pick, threshold],
                       [rollout_plot, align_lines, align_matrix], api_name="layers", **conc)

        def translate_text(text: str) -> str:
            """German text -> English translation (greedy)."""
            return api_translate(tr, text)

        def attention_json(text: str) -> dict:
            """German text -> source/target pieces, translation and all three attention maps as nested lists."""
            return api_attention(tr, text)

        gr.api(translate_text, api_name="translate", concurrency_limit=CONCURRENCY, concurrency_id="model")
        gr.api(attention_json, api_name="attention", concurrency_limit=CONCURRENCY, concurrency_id="model")
    demo.queue(max_size=QUEUE_MAX, default_concurrency_limit=CONCURRENCY)
    return demo


def step_view(tr: Translator, session, k: int = TOPK, words: bool = False):
    """Re-render the current step (e.g. after k changed) without moving."""
    return outputs(_need(session), _k(k), words)


def parse_auth(value: str | None):
    if not value:
        return None
    if ":" not in value:
        raise SystemExit("--auth must look like user:password")
    user, password = value.split(":", 1)
    if not user or not password:
        raise SystemExit("--auth must look like user:password (both non-empty)")
    return (user, password)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--share", action="store_true", help="create a public Gradio share link (use with --auth)")
    p.add_argument("--auth", help="user:password required to open the app")
    p.add_argument("--checkpoint", default=None, help="checkpoint directory (default: checkpoints/de-en)")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda")
    a = p.parse_args(argv)
    auth = parse_auth(a.auth)
    if a.share and not auth:
        print("WARNING: --share without --auth: anyone with the link can use this app and its compute.",
              file=sys.stderr)
    try:
        tr = Translator.load(a.checkpoint, a.device)
    except (CheckpointError, ValueError) as e:
        raise SystemExit(f"error: {e}")
    if tr.device.type == "cpu":
        # A step is one position: tiny matrix products where thread start-up costs more than it saves.
        # One thread per request keeps a step fastest and lets CONCURRENCY requests share the cores.
        torch.set_num_threads(1)
    print(f"model loaded on {describe(tr.device)}", flush=True)
    demo = build_demo(tr)
    demo.launch(server_name=a.host, server_port=a.port, share=a.share, auth=auth, footer_links=["api"])


if __name__ == "__main__":
    main()
