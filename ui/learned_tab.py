"""The Attention being learned tab: cross-attention of example sentences at the points training recorded
(before training, inside epoch 1, after every epoch), with a slider over those points."""
from __future__ import annotations

from functools import partial

import gradio as gr

from transformer.capture import layers_of
from transformer.history import HISTORY, AttentionHistory, describe_epoch

from . import handlers as h
from .components import CONC, Ctx


def load_history(tr) -> AttentionHistory | None:
    try:
        return AttentionHistory.load(tr.checkpoint_dir / HISTORY) if tr.checkpoint_dir else None
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return None


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def intro(epochs: list) -> str:
    """What the history holds, in words, from the points it recorded."""
    parts = (["before training"] if epochs[0] == 0 else []) \
        + ([f"{times(sum(0 < e < 1 for e in epochs))} inside epoch 1"] if any(0 < e < 1 for e in epochs) else []) \
        + (["after every epoch"] if epochs[-1] >= 1 else [])
    text = (f"Cross-attention of fixed example sentences, recorded {', '.join(parts[:-1])}"
            f"{' and ' if len(parts) > 1 else ''}{parts[-1]}: move the slider to watch the alignment form.")
    if epochs[0] >= 1:
        text += " This checkpoint's history starts after epoch 1, so the untrained model is not in it."
    return text


def build(ctx: Ctx, when_opened) -> None:
    """`when_opened(fn, inputs, outputs)`: run fn when the tab is first opened in a page (ui/first_load.py)."""
    history = load_history(ctx.tr)
    if history is None or not history.epochs:
        gr.Markdown(f"This checkpoint has no attention history (`{HISTORY}`).")
        return
    L, H, n = layers_of(ctx.tr.model, "cross"), ctx.tr.config.n_heads, len(history.epochs)
    gr.Markdown(intro(history.epochs), elem_id="learned_intro")
    with gr.Row():
        example = gr.Dropdown([(t, i) for i, t in enumerate(history.sentences)], value=0, label="sentence",
                              elem_id="learned_example")
        point = gr.Slider(1, max(2, n), value=n, step=1, label="snapshot", elem_id="learned_epoch",
                          info=f"{n} snapshots: {describe_epoch(history.epochs[0])} … "
                               f"{describe_epoch(history.epochs[-1])}", visible=n > 1)
        layer = gr.Dropdown(["all layers"] + [f"layer {i + 1}" for i in range(L)], value="all layers",
                            label="layer", elem_id="learned_layer")
        head = gr.Dropdown(["mean of heads"] + [f"head {i + 1}" for i in range(H)], value="mean of heads",
                           label="head", elem_id="learned_head")
    where = gr.Markdown(elem_id="learned_point")
    text = gr.Textbox(label="Greedy translation at this point", interactive=False, elem_id="learned_translation")
    plot = gr.Plot(label="Cross-attention", elem_id="learned_plot")

    inputs, outs, show = [example, point, layer, head], [plot, text, where], partial(h.learned_at, history)
    for c in inputs:
        c.change(show, inputs, outs, api_name=False, **CONC)
    when_opened(show, inputs, outs)  # the plot at the last snapshot, computed once the tab is opened
