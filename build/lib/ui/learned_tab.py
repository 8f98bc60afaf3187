"""The Attention being learned tab: cross-attention of example sentences after every training epoch."""
from __future__ import annotations

from functools import partial

import gradio as gr

from transformer.history import HISTORY, AttentionHistory

from . import handlers as h
from .components import CONC, Ctx


def load_history(tr) -> AttentionHistory | None:
    try:
        return AttentionHistory.load(tr.checkpoint_dir / HISTORY) if tr.checkpoint_dir else None
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return None


def build(ctx: Ctx, demo: gr.Blocks) -> None:
    history = load_history(ctx.tr)
    if history is None or not history.epochs:
        gr.Markdown(f"This checkpoint has no attention history (`{HISTORY}`).")
        return
    L, H = len(ctx.tr.model.decoder), ctx.tr.config.n_heads
    gr.Markdown("Cross-attention of fixed example sentences, recorded at the end of every training "
                "epoch: watch the alignment emerge from noise.")
    with gr.Row():
        example = gr.Dropdown([(t, i) for i, t in enumerate(history.sentences)], value=0, label="sentence",
                              elem_id="learned_example")
        epoch = gr.Slider(history.epochs[0], history.epochs[-1], value=history.epochs[-1], step=1, label="epoch",
                          elem_id="learned_epoch")
        layer = gr.Dropdown(["all layers"] + [f"layer {i + 1}" for i in range(L)], value="all layers",
                            label="layer", elem_id="learned_layer")
        head = gr.Dropdown(["mean of heads"] + [f"head {i + 1}" for i in range(H)], value="mean of heads",
                           label="head", elem_id="learned_head")
    text = gr.Textbox(label="Greedy translation at this epoch", interactive=False, elem_id="learned_translation")
    plot = gr.Plot(label="Cross-attention", elem_id="learned_plot")

    inputs, show = [example, epoch, layer, head], partial(h.learned, history)
    for c in inputs:
        c.change(show, inputs, [plot, text], api_name=False, **CONC)
    demo.load(show, inputs, [plot, text], api_name=False)
