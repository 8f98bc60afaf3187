"""What a tab shows belongs to the sentence, the model and the position it names (issue 26, item 1).

A tab whose results were computed on request (Head ablation's Compare, Beam search's tree, Across layers' plots,
the Translate tab's exported files) registers what to show instead once a new sentence is started or the model is
switched: `on_new(ctx, outputs, values)`, from its builder. `wire(ctx)`, called once every tab is built, chains
one clearing event after each sentence started (the button, Enter in the box, an example: `ctx.translate.started`
changes) and each switch of model (the picker, the hint's button: `ctx.translate.switch_events`), so no tab ever
shows the results of an earlier sentence under a new sentence's name; a Start that started nothing (the note under
the box says why) clears nothing. `values` is a list of values (or gr.update) for `outputs`, or a
function of the model's key ('de-en', ...) that returns them.
"""
from __future__ import annotations

import gradio as gr

from .components import Ctx

# nothing to compute: outside the model's concurrency group, and no limit of its own
QUIET = dict(api_visibility="private", show_progress="hidden", concurrency_limit=None)


def on_new(ctx: Ctx, outputs: list, values) -> None:
    """Show `values` in `outputs` whenever a new sentence is started or the model is switched."""
    if isinstance(values, (list, tuple)) and len(values) != len(outputs):
        raise ValueError(f"{len(outputs)} outputs but {len(values)} values")
    ctx.__dict__.setdefault("fresh", []).append((list(outputs), values))


def cleared(ctx: Ctx, key) -> list:
    """Every registered output's value for a new sentence or model (key: the model's, '' for the default)."""
    out = []
    for outputs, values in ctx.__dict__.get("fresh", []):
        got = list(values(key) if callable(values) else values)
        if len(got) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs but {len(got)} values")
        out += got
    return out


def wire(ctx: Ctx) -> None:
    """Chain the clears after every Start and every switch of model (once, after all tabs are built)."""
    c = getattr(ctx, "translate", None)
    if c is None:
        return
    if getattr(c, "files", None) is not None:  # the Translate tab's exports were of the sentence before
        on_new(ctx, [c.files], [None])
    entries = ctx.__dict__.get("fresh", [])
    outputs = [o for outs, _ in entries for o in outs]

    def clear(key=""):
        return cleared(ctx, key)

    if getattr(c, "started", None) is not None:  # a new sentence started (a Start that started nothing: no change)
        c.started.change(clear, [ctx.model], outputs, **QUIET)
    for event in getattr(c, "switch_events", []):
        event.success(clear, [ctx.model], outputs, **QUIET)


def hidden(flag: bool = True):
    """A box's visibility: shown, or hidden but kept in the page (its view keeps its script and state)."""
    return gr.update(visible="hidden" if flag else True)
