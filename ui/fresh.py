"""What a tab shows belongs to the sentence, the model and the position it names (issue 26, item 1).

A tab whose results were computed on request (Head ablation's Compare, Beam search's tree, Across layers' plots,
the Translate tab's exported files) registers what to show instead once a new sentence is started or the model is
switched: `on_new(ctx, outputs, values)`, from its builder. `wire(ctx)`, called once every tab is built, chains
one clearing event after each sentence started (the button, Enter in the box, an example: `ctx.translate.started`
changes) and each switch of model (the picker, the hint's button: `ctx.translate.switch_events`), so no tab ever
shows the results of an earlier sentence under a new sentence's name; a Start that started nothing (the note under
the box says why) clears nothing. `values` is a list of values (or gr.update) for `outputs`, or a
function of the model's key ('de-en', ...) that returns them; `idle`, the same, is shown instead when no sentence
is started after it (the picker's switch of model is a new start with no sentence: issue 39, item 1).

A button of the page whose event needs a started sentence answers without one in a note of its own (`started`
tells; the message names what to do), never with gr.Error into its outputs: every user reaches that state by
picking a model or reloading the page. The endpoints for programs keep gr.Error (ui/inputs.py need_session).
"""
from __future__ import annotations

import gradio as gr

from transformer.decoding import DecodingSession

from .components import Ctx

# nothing to compute: outside the model's concurrency group, and no limit of its own
QUIET = dict(api_visibility="private", show_progress="hidden", concurrency_limit=None)


def started(session) -> bool:
    """Whether the user has a started sentence (the page's buttons that need one check this first)."""
    return isinstance(session, DecodingSession)


def unstarted(what: str, here: bool = False) -> str:
    """What a page button that needs a started sentence says in its note without one (`what` it works on;
    here: a button of the Translate tab itself)."""
    return f"Press Start{'' if here else ' in the Translate tab'} first: {what}"


def on_new(ctx: Ctx, outputs: list, values, idle=None) -> None:
    """Show `values` in `outputs` whenever a new sentence is started or the model is switched; `idle` (default:
    `values`) when the switch left no sentence started."""
    for given in (values, idle):
        if isinstance(given, (list, tuple)) and len(given) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs but {len(given)} values")
    ctx.__dict__.setdefault("fresh", []).append((list(outputs), values, values if idle is None else idle))


def cleared(ctx: Ctx, key, sentence: bool = True) -> list:
    """Every registered output's value for a new sentence or model (key: the model's, '' for the default;
    sentence: whether one is started now)."""
    out = []
    for outputs, values, idle in ctx.__dict__.get("fresh", []):
        values = values if sentence else idle
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
    outputs = [o for outs, _, _ in entries for o in outs]

    def clear(key="", session=None):  # the session after the event: a new one, or none (the picker's switch)
        return cleared(ctx, key, started(session))

    if getattr(c, "started", None) is not None:  # a new sentence started (a Start that started nothing: no change)
        c.started.change(clear, [ctx.model, ctx.state], outputs, **QUIET)
    for event in getattr(c, "switch_events", []):
        event.success(clear, [ctx.model, ctx.state], outputs, **QUIET)


def hidden(flag: bool = True):
    """A box's visibility: shown, or hidden but kept in the page (its view keeps its script and state)."""
    return gr.update(visible="hidden" if flag else True)
