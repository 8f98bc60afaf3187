"""The Model tab: architecture, size, scores and training curves of the loaded checkpoint."""
from __future__ import annotations

import gradio as gr

from transformer.checkpoint import LOG, read_json
from transformer.metrics import read_metrics

from . import handlers as h
from .components import Ctx
from .figures import figure, training_curves


def build(ctx: Ctx) -> None:
    tr = ctx.tr
    gr.Markdown(h.model_card(tr, read_metrics(tr.checkpoint_dir) if tr.checkpoint_dir else {}), elem_id="model_card")
    log = read_json(tr.checkpoint_dir / LOG, None) if tr.checkpoint_dir else None
    if log and log.get("epochs"):
        gr.Plot(figure(training_curves(log)), label="Training curves", elem_id="curves")
