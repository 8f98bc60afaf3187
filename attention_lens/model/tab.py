"""The Model tab: architecture, size, scores and training curves of the loaded checkpoint."""
from __future__ import annotations

import gradio as gr

from attention_lens.model import handlers as model_handlers
from attention_lens.model.figures import epoch_points, training_curves
from attention_lens.shell.components import Ctx
from attention_lens.shell.figures import figure
from attention_lens.shell.texts import each, label, text
from transformer.model.checkpoint import LOG, read_json
from transformer.model.metrics import read_metrics


def curves_note(log: dict, mode: str = "detail", lang: str = "en") -> str:
    """One line under the curves: why training loss sits above validation loss (the numbers from the log)."""
    args = log.get("args") or {}
    d, ls = args.get("dropout"), args.get("label_smoothing")
    return text("card.curves", mode, lang).format(dropout=f" ({d})" if d is not None else "",
                                            smoothing=f" (ε = {ls})" if ls is not None else "")


def pauses_note(log: dict, mode: str = "detail", lang: str = "en") -> str:
    """Where training was paused and resumed (the dotted lines), and how the curves count such an epoch."""
    pauses = epoch_points(log)[1]
    if not pauses:
        return ""
    epoch = "epoch" if mode == "detail" else "pass"
    where = "; ".join(f"in {epoch} {p['epoch']} after {p['step']:,}" + (f" of its {p['of']:,} steps" if p["of"] else
                                                                         " steps (still paused)") for p in pauses)
    times = {1: "once", 2: "twice"}.get(len(pauses), f"{len(pauses)} times")
    if lang == "de":  # the detailed 'where' lists steps in numbers and the words of transformer.interpret.history's log
        times = {1: "einmal", 2: "zweimal"}.get(len(pauses), f"{len(pauses)}-mal")
    return text("card.pauses", mode, lang).format(times=times, where=where)


def card(tr) -> str:
    """The card in both versions; the page's "Explain" box shows one (attention_lens/shell/texts.py)."""
    metrics = read_metrics(tr.checkpoint_dir) if tr.checkpoint_dir else {}
    return each(lambda mode, lang: model_handlers.model_card(tr, metrics, mode, lang))


def note(log: dict) -> str:
    return each(lambda mode, lang: curves_note(log, mode, lang) + pauses_note(log, mode, lang))


def build(ctx: Ctx) -> tuple[list, object]:
    """One card for every model, filled with the user's model (app.py: when the tab is opened or the model
    picked). Returns (outputs, content: a model's {component: value})."""
    shown = gr.Markdown(card(ctx.tr), elem_id="model_card")  # small: in the page; the curves come when opened
    curves = gr.Plot(label=label("training_curves"), elem_id="curves")
    under = gr.Markdown("", elem_id="curves_note")

    def content(tr) -> dict:
        """The tab's content for one model: its card, its training curves and the note under them (both hidden
        when the checkpoint has no training log)."""
        log = read_json(tr.checkpoint_dir / LOG, None) if tr.checkpoint_dir else None
        has = bool(log and log.get("epochs"))
        return {shown: card(tr), curves: gr.update(value=figure(training_curves(log)) if has else None, visible=has),
                under: gr.update(value=note(log) if has else "", visible=has)}
    return [shown, curves, under], content
