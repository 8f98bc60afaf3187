"""The architecture strip beside the Translate view (assets/translate/arch.js): the encoder and decoder stacks of the
loaded model, the kind and layer shown highlighted, a click opens a block in the view."""
from __future__ import annotations

import gradio as gr

from attention_lens.shell.components import Ctx, asset
from attention_lens.shell.texts import spans
from transformer.decode.decoding import Translator

TEMPLATE = ('<div class="arch"><svg class="arch-svg" data-role="svg" role="group" '
            'aria-label="the model: encoder and decoder layers and their sublayers" data-label="label.arch_aria"></svg>'
            f'<div class="arch-legend">{spans("arch.legend")}</div>'
            '<div class="arch-qkv" data-role="qkv"></div></div>')


def architecture(tr: Translator) -> dict:
    """What the strip draws, read from the model (the checkpoint decides the sizes)."""
    c = tr.config
    return {"encoder_layers": c.n_encoder_layers, "decoder_layers": c.n_decoder_layers, "heads": c.n_heads,
            "d_model": c.d_model}


def strip(ctx: Ctx) -> gr.HTML:
    return gr.HTML(architecture(ctx.tr), html_template=TEMPLATE, css_template=asset("translate/arch.css"),
                   js_on_load=asset("translate/arch.js"), elem_id="arch")
