"""attention-lens: watch our Transformer translate German to English, one token at a time.

    python app.py [--host 127.0.0.1] [--port 7860] [--share] [--auth user:password]
                  [--checkpoint DIR] [--device auto|cpu|cuda]
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
import warnings
from functools import partial
from pathlib import Path

import gradio as gr

from transformer import plots
from transformer.checkpoint import LOG, METRICS, CheckpointError, read_json
from transformer.decoding import DecodingSession, Translator
from transformer.device import describe

ROOT = Path(__file__).resolve().parent
ASSETS = ROOT / "assets"
VENDOR = ASSETS / "vendor"  # plotly.js cartesian bundle (1.5 MB instead of 4.8 MB: faster first load)
TOPK = 8
SESSION_TTL_S = 3600
QUEUE_MAX = 256
CONCURRENCY = 4

# -- handlers: plain functions of (translator, inputs) -> outputs ------------------------------------


def _fail(e: Exception):
    raise gr.Error(str(e), print_exception=False)


def _need(session) -> DecodingSession:
    if not isinstance(session, DecodingSession):
        raise gr.Error("Press Start first: there is no sentence being decoded.", print_exception=False)
    return session.fork()


def _doc(session: DecodingSession) -> str:
    return hashlib.sha1(json.dumps(session.source_ids).encode()).hexdigest()[:12]


_seq = itertools.count(1)  # every response differs, so the browser redraws even when nothing else changed


def views(session: DecodingSession, k: int = TOPK):
    """The three per-step outputs: translation text, attention payload, top-k payload."""
    maps = session.attention
    p = session.positions[session.cursor]
    tok = session.translator.tokenizer
    payload = plots.attention_payload(
        maps, maps.source_tokens, maps.target_tokens, cursor=session.cursor,
        next_piece=None if session.done else tok.piece(p.greedy),
        forced=[q.forced for q in session.positions[:session.cursor + 1]], done=session.done, doc=_doc(session))
    payload["seq"] = next(_seq)
    topk = {"items": session.topk(k), "done": session.done, "step": session.cursor}
    return session.translation, payload, topk


def outputs(session: DecodingSession, k: int = TOPK):
    return (session, *views(session, k))


def start(tr: Translator, text: str, k: int = TOPK):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session = tr.start(text)
        for w in caught:
            gr.Warning(str(w.message))
    except ValueError as e:
        _fail(e)
    return outputs(session, _k(k))


def step(tr: Translator, session, k: int = TOPK):
    s = _need(session)
    s.step()
    return outputs(s, _k(k))


def run(tr: Translator, session, k: int = TOPK):
    s = _need(session)
    s.run()
    return outputs(s, _k(k))


def back(tr: Translator, session, k: int = TOPK):
    s = _need(session)
    s.back()
    return outputs(s, _k(k))


def goto(tr: Translator, session, i, k: int = TOPK):
    s = _need(session)
    if isinstance(i, float) and i.is_integer():
        i = int(i)
    try:
        s.goto(i)
    except ValueError as e:
        _fail(e)
    return outputs(s, _k(k))


def reset(tr: Translator, session, k: int = TOPK):
    s = _need(session)
    return outputs(tr.start_ids(s.source_ids), _k(k))


def force(tr: Translator, session, piece, k: int = TOPK):
    s = _need(session)
    if not isinstance(piece, str) or not piece or len(piece) > 100:
        _fail(ValueError("force needs one piece of the vocabulary"))
    try:
        s.force(piece)
    except ValueError as e:
        _fail(e)
    return outputs(s, _k(k))


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


def build_demo(tr: Translator) -> gr.Blocks:
    gr.set_static_paths([str(VENDOR)])
    head = f'<script src="/gradio_api/file={VENDOR}/plotly-cartesian.min.js"></script>'
    css = (ASSETS / "lens.css").read_text()
    conc = dict(concurrency_limit=CONCURRENCY, concurrency_id="model")
    with gr.Blocks(title="attention-lens") as demo:
        gr.Markdown("# attention-lens\nWatch a Transformer translate German → English one token at a time, "
                    "and see what every layer and head attends to.")
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
                    attention = gr.HTML(None, html_template=(ASSETS / "lens.html").read_text(),
                                        css_template=css, js_on_load=(ASSETS / "lens.js").read_text(),
                                        head=head, elem_id="attention")
                with gr.Column(scale=1, min_width=240):
                    gr.Markdown("**Next piece: top-k**")
                    topk = gr.HTML(None, html_template='<div class="topk-list"></div><div class="topk-note"></div>',
                                   css_template=css, js_on_load=(ASSETS / "topk.js").read_text(),
                                   elem_id="topk")
                    k = gr.Slider(1, 20, value=TOPK, step=1, label="k", elem_id="k")
                    with gr.Accordion("Inspect a reference translation", open=False):
                        ref = gr.Textbox(label="English reference", elem_id="reference", lines=2, max_length=2000)
                        b_ref = gr.Button("Show its attention (teacher-forced)", elem_id="show_reference")
                    with gr.Accordion("Go to a step", open=False):
                        step_no = gr.Number(0, precision=0, label="step index (0 = only <s>)", elem_id="goto_index")
                        b_goto = gr.Button("Go", elem_id="goto")
        with gr.Tab("Model"):
            gr.Markdown(model_card(tr), elem_id="model_card")
            log = read_json(tr.checkpoint_dir / LOG, None) if tr.checkpoint_dir else None
            if log and log.get("epochs"):
                import plotly.graph_objects as go
                gr.Plot(go.Figure(plots.training_curves(log)), label="Training curves", elem_id="curves")

        outs = [state, translation, attention, topk]
        b_start.click(partial(start, tr), [source, k], outs, api_name="start", **conc)
        source.submit(partial(start, tr), [source, k], outs, api_visibility="private", **conc)
        b_step.click(partial(step, tr), [state, k], outs, api_name="step", **conc)
        b_run.click(partial(run, tr), [state, k], outs, api_name="run", **conc)
        b_back.click(partial(back, tr), [state, k], outs, api_name="back", **conc)
        b_reset.click(partial(reset, tr), [state, k], outs, api_name="reset", **conc)
        b_goto.click(partial(goto, tr), [state, step_no, k], outs, api_name="goto", **conc)
        k.release(partial(step_view, tr), [state, k], outs, api_name="topk", **conc)

        def on_force(session, kk, evt: gr.EventData):
            return force(tr, session, (evt._data or {}).get("piece") if evt is not None else None, kk)

        topk.click(on_force, [state, k], outs, api_visibility="private", **conc)
        piece_in = gr.Textbox(visible=False)
        b_force = gr.Button(visible=False)
        b_force.click(partial(force, tr), [state, piece_in, k], outs, api_name="force", **conc)
        b_ref.click(partial(reference, tr), [source, ref], [attention, topk], api_name="reference", **conc)

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


def step_view(tr: Translator, session, k: int = TOPK):
    """Re-render the current step (e.g. after k changed) without moving."""
    return outputs(_need(session), _k(k))


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
    print(f"model loaded on {describe(tr.device)}", flush=True)
    demo = build_demo(tr)
    demo.launch(server_name=a.host, server_port=a.port, share=a.share, auth=auth, footer_links=["api"])


if __name__ == "__main__":
    main()
