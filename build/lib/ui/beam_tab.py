"""The Beam search tab: the beam as a tree, and the attention of any hypothesis."""
from __future__ import annotations

from functools import partial

import gradio as gr

from . import handlers as h
from .components import CONC, SESSION_TTL_S, Ctx, lens_view


def build(ctx: Ctx) -> None:
    tr = ctx.tr
    gr.Markdown("Greedy decoding keeps one hypothesis; beam search keeps several. The tree shows every "
                "kept piece per step (rank 1 at the top); pick a hypothesis to see its attention.")
    with gr.Row():
        size = gr.Slider(1, 8, value=4, step=1, label="beam size", elem_id="beam_size")
        b_beam = gr.Button("Run beam search on the sentence above", variant="primary", elem_id="beam_run")
    state = gr.State(None, time_to_live=SESSION_TTL_S)
    tree = gr.Plot(label="Beam tree", elem_id="beam_tree")
    choice = gr.Dropdown([], label="Hypothesis", elem_id="beam_choice")
    view = lens_view(ctx, "attention_beam")

    b_beam.click(partial(h.beam, tr), [ctx.source, size], [state, tree, choice, view], api_name="beam", **CONC)
    choice.input(partial(h.beam_pick, tr), [state, choice], [tree, view], api_name="beam_pick", **CONC)
