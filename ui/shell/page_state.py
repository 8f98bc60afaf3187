"""The page's state, in one place (docs/design.md, "The page's state"): what each user's page holds, and the one
event that owns each part. Nothing here is a module-level counter or a registry hung on an object's __dict__: the
state lives in the page (Gradio components) and in `ctx.page` (a `PageState`, built once per app).

| state                | where it lives                                  | owned by (the events that write it)         |
|----------------------|-------------------------------------------------|---------------------------------------------|
| the model            | the picker's value (`ctx.model`, in the page)   | the picker's input; the hint's switch; a link
|
| the sentence started | `ctx.state` (gr.State: a DecodingSession, which | Start (button, Enter, an example), the      |
|                      | carries its model)                              | hint's switch, a link; the picker ends it   |
| the mark of a start  | `PageState.started` (a hidden box; new value    | the same Start events, only when they start |
|                      | per start: `new_value`)                         | a sentence (a refused Start leaves it)      |
| each tab's results   | the tab's outputs, registered with `on_new`     | the tab's own button; cleared by the mark's |
|                      |                                                 | change and by every switch of model         |
| the first-load flags | which tab or fold was opened (the browser's     | the gate's opening event, once per page     |
|                      | window.__attentionLensOpened, __alTabsSeen)     | (ui/shell/first_load.py, ui/shell/panels.py)
          |

A button of the page whose event needs a started sentence answers without one in a note of its own (`started`
tells; `unstarted` says what to do), never with gr.Error into its outputs: every user reaches that state by picking a
model or reloading the page. The endpoints for programs keep gr.Error (ui/shell/inputs.py need_session).

The Gradio behaviours this state is shaped by (each worked around here once, each with a test that fails when
Gradio stops behaving so: tests/test_gradio_behaviour*.py):
- G1 `new_value`: Gradio runs a component's change event (and a gr.HTML's watch) only when its value differs from
  the one before; a mark, a note, must be new at every call to be seen again.

The clears hang on the mark's change, not on Start's own success, for a reason of the page's own: Start, Enter, an
example and a link all start a sentence and write the mark, and a Start that started nothing (its note says why)
must clear nothing. (The reason once given, that an empty update loses the props of a gr.HTML not mounted yet, does
not hold in Gradio 6.31: gr.skip() and gr.update() to a gr.HTML in a column never shown keep its value.)
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import gradio as gr

from transformer.decode.decoding import DecodingSession

# nothing to compute: outside the model's concurrency group, and no limit of its own
QUIET = {"api_visibility": "private", "show_progress": "hidden", "concurrency_limit": None}


@dataclass
class PageState:
    """The server-side description of the page's state (the values live in each user's page, see above)."""

    started: gr.Textbox | None = None  # the mark of a start (made by `mark`)
    results: list = field(default_factory=list)  # each tab's results: (outputs, values, idle)
    switches: list = field(default_factory=list)  # the events that switch the model (the picker, the hint's button)


def new_value() -> str:
    """A value no earlier one equals (G1): random, so no counter is shared by the users of the process."""
    return uuid.uuid4().hex


def started(session) -> bool:
    """Whether the user has a started sentence (the page's buttons that need one check this first)."""
    return isinstance(session, DecodingSession)


def unstarted(what: str, here: bool = False, words: dict | None = None) -> str:
    """What a page button that needs a started sentence says in its note without one (`what` it works on;
    here: a button of the Translate tab itself). `words`: the user's [label] table (ui/shell/texts.py
    labels(page_lang())):
    then `what` is its key and the note is in the page's language."""
    if words is not None:
        return words["unstarted_here" if here else "unstarted"].format(what=words.get(what, what))
    return f"Press Start{'' if here else ' in the Translate tab'} first: {what}"


def hidden(flag: bool = True):
    """A box's visibility: shown, or hidden but kept in the page (its view keeps its script and state)."""
    return gr.update(visible="hidden" if flag else True)


def mark(ctx) -> gr.Textbox:
    """The mark of a start (hidden): every event that starts a sentence writes `new_value()` into it."""
    ctx.page.started = gr.Textbox("", visible=False, label="sentences started")
    return ctx.page.started


def switch(ctx, event) -> None:
    """Register an event that switches the model: each tab's results are cleared after it."""
    ctx.page.switches.append(event)


def on_new(ctx, outputs: list, values, idle=None) -> None:
    """Each tab's results: show `values` in `outputs` whenever a new sentence is started or the model is switched;
    `idle` (default: `values`) when the switch left no sentence started. `values` / `idle`: a list of values (or
    gr.update) for `outputs`, or a function of the model's key ('de-en', ...) that returns them."""
    for given in (values, idle):
        if isinstance(given, (list, tuple)) and len(given) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs but {len(given)} values")
    ctx.page.results.append((list(outputs), values, values if idle is None else idle))


def cleared(ctx, key, sentence: bool = True) -> list:
    """Every registered output's value for a new sentence or model (key: the model's, '' for the default;
    sentence: whether one is started now)."""
    out = []
    for outputs, values, idle in ctx.page.results:
        values = values if sentence else idle
        got = list(values(key) if callable(values) else values)
        if len(got) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs but {len(got)} values")
        out += got
    return out


def wire(ctx) -> None:
    """Chain the clears after every start (the mark's change) and every switch of model (once, after all tabs
    are built)."""
    outputs = [o for outs, _, _ in ctx.page.results for o in outs]

    def clear(key="", session=None):  # the session after the event: a new one, or none (the picker's switch)
        return cleared(ctx, key, started(session))

    if ctx.page.started is not None:
        ctx.page.started.change(clear, [ctx.model, ctx.state], outputs, **QUIET)
    for event in ctx.page.switches:
        event.success(clear, [ctx.model, ctx.state], outputs, **QUIET)
