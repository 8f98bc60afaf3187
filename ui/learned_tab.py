"""The Attention being learned tab: cross-attention of example sentences at the points training recorded
(before training, inside epoch 1, after every epoch), with a slider over those points."""
from __future__ import annotations

import gradio as gr

from transformer.capture import layers_of
from transformer.history import HISTORY, AttentionHistory

from . import handlers as h
from .components import CONC, Ctx
from .learned_help import plain_epoch
from .texts import MODES, text, versions


def load_history(tr) -> AttentionHistory | None:
    try:
        return AttentionHistory.load(tr.checkpoint_dir / HISTORY) if tr.checkpoint_dir else None
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return None


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def intro(epochs: list) -> str:
    """What the history holds, in words, from the points it recorded (both versions: ui/texts.py)."""
    out = []
    for mode in MODES:
        parts = ([text("learned.before", mode)] if epochs[0] == 0 else []) \
            + ([text("learned.inside", mode).format(times=times(sum(0 < e < 1 for e in epochs)))]
               if any(0 < e < 1 for e in epochs) else []) \
            + ([text("learned.after", mode)] if epochs[-1] >= 1 else [])
        said = f"{', '.join(parts[:-1])}{' and ' if len(parts) > 1 else ''}{parts[-1]}"
        out.append(text("learned.intro", mode).format(parts=said)
                   + (" " + text("learned.late", mode) if epochs[0] >= 1 else ""))
    return versions(*out)


MISSING = f"This checkpoint has no attention history (`{HISTORY}`)."


def content(tr) -> list:
    """The tab's content for one model: its intro, the controls for its history (sentences, snapshots, layers,
    heads) and the plot, translation and words at its last snapshot; only the intro when it has no history."""
    history = load_history(tr)
    if history is None or not history.epochs:
        return [MISSING] + [gr.update(visible=False)] * 7
    L, H, n = layers_of(tr.model, "cross"), tr.config.n_heads, len(history.epochs)
    fig, text, where = h.learned_at(history, 0, n)
    return [intro(history.epochs),
            gr.update(choices=[(t, i) for i, t in enumerate(history.sentences)], value=0, visible=True),
            gr.update(minimum=1, maximum=max(2, n), value=n, visible=n > 1,
                      info=f"{n} points in training: {plain_epoch(history.epochs[0])} … {plain_epoch(history.epochs[-1])}"),
            gr.update(choices=["all layers"] + [f"layer {i + 1}" for i in range(L)], value="all layers", visible=True),
            gr.update(choices=["mean of heads"] + [f"head {i + 1}" for i in range(H)], value="mean of heads",
                      visible=True),
            gr.update(value=fig, visible=True), gr.update(value=text, visible=True), gr.update(value=where, visible=True)]


def build(ctx: Ctx) -> tuple[list, object]:
    """One set of controls for every model, filled with the user's model (app.py: when the tab is opened or the
    model picked; the history is read from the checkpoint at each request, 8 ms, so no copy per model stays in
    memory). Returns (outputs, content)."""
    intro_md = gr.Markdown("", elem_id="learned_intro")
    with gr.Row():
        example = gr.Dropdown([], value=None, label="sentence", elem_id="learned_example")
        point = gr.Slider(1, 2, value=1, step=1, label="snapshot", elem_id="learned_epoch")
        layer = gr.Dropdown(["all layers"], value="all layers", label="layer", elem_id="learned_layer")
        head = gr.Dropdown(["mean of heads"], value="mean of heads", label="head", elem_id="learned_head")
    where = gr.Markdown(elem_id="learned_point")
    text = gr.Textbox(label="Greedy translation at this point", interactive=False, elem_id="learned_translation")
    plot = gr.Plot(label="Cross-attention", elem_id="learned_plot")
    models = ctx.models

    def show(key, *args):
        return h.learned_at(load_history(models.get(key)), *args)

    inputs = [example, point, layer, head]
    for c in inputs:
        c.change(show, [ctx.model] + inputs, [plot, text, where], api_name=False, **CONC)
    return [intro_md, example, point, layer, head, plot, text, where], content
