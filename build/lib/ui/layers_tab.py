"""The Across layers tab: encoder attention rollout and the source-target alignment."""
from __future__ import annotations

from functools import partial

import gradio as gr

from . import handlers as h
from .components import CONC, Ctx


def build(ctx: Ctx) -> None:
    L = len(ctx.tr.model.decoder)
    gr.Markdown("For the current step of the Translate tab: attention rollout through the encoder "
                "(Abnar & Zuidema 2020), and which source pieces each target piece attended to.")
    with gr.Row():
        layer = gr.Dropdown(["all layers"] + [f"layer {i + 1}" for i in range(L)], value="all layers",
                            label="cross-attention layer", elem_id="align_layer")
        threshold = gr.Slider(0.05, 1.0, value=0.15, step=0.05, label="draw links with weight ≥",
                              elem_id="align_threshold")
        b_show = gr.Button("Show", variant="primary", elem_id="layers_run")
    lines = gr.Plot(label="Alignment", elem_id="align_lines")
    with gr.Row():
        matrix = gr.Plot(label="Alignment matrix", elem_id="align_matrix")
        rollout = gr.Plot(label="Encoder rollout", elem_id="rollout")

    b_show.click(partial(h.across_layers, ctx.tr), [ctx.state, layer, threshold], [rollout, lines, matrix],
                 api_name="layers", **CONC)
