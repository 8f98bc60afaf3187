"""The Head ablation tab: switch off heads for one request and compare with the intact model."""
from __future__ import annotations

import gradio as gr

from . import handlers as h
from .components import CONC, Ctx, lens_view, live_position, started_sentence
from .models import of_session


def build(ctx: Ctx) -> None:
    tr = ctx.tr
    gr.Markdown("Switch off heads (their outputs are zeroed for this request only; the shared model is "
                "never edited) and compare with the intact model on the sentence of the Translate tab, "
                "at the step it shows. A switched-off head still computes its attention weights (its maps below "
                "are greyed out, marked off): only its output is zeroed, so what it attends to never reaches the "
                "next layer.")
    started_sentence(ctx, "ablate_sentence")
    with gr.Row():
        enc = gr.CheckboxGroup(h.head_choices(tr, "encoder_self"), label="Encoder self-attention heads",
                               elem_id="ablate_enc")
        dec = gr.CheckboxGroup(h.head_choices(tr, "decoder_self"), label="Decoder self-attention heads",
                               elem_id="ablate_dec")
        cross = gr.CheckboxGroup(h.head_choices(tr, "cross"), label="Cross-attention heads", elem_id="ablate_cross")
    b_ablate = gr.Button("Compare", variant="primary", elem_id="ablate_run")
    note = gr.Textbox(label="", show_label=False, interactive=False, elem_id="ablate_note")
    with gr.Row():
        intact = gr.Textbox(label="Intact model (greedy)", interactive=False, elem_id="intact_translation")
        ablated = gr.Textbox(label="Heads switched off (greedy)", interactive=False, elem_id="ablated_translation")
    with gr.Row():
        probs = gr.Dataframe(headers=["position", "piece", "p intact", "p ablated", "change"],
                             label="Probability of each token of the intact translation", interactive=False,
                             elem_id="ablate_probs")
        topk = gr.Dataframe(headers=["rank", "intact", "p", "ablated", "p"], label="Top-k at the current step",
                            interactive=False, elem_id="ablate_topk")
    view = lens_view(ctx, "attention_ablated")

    # at the step the Translate view shows (ctx.position, read live by the js)
    b_ablate.click(of_session(h.ablate_at), [ctx.state, enc, dec, cross, ctx.k, ctx.position],
                   [intact, ablated, probs, topk, view, note], js=live_position(6, 5), api_name="ablate", **CONC)
