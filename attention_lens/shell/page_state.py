"""The page's state, in one place (docs/design.md, "The page's state"): what each user's page holds, and the one
event that owns each part. Nothing here is a module-level counter or a registry hung on an object's __dict__: the
state lives in the page (Gradio components) and in `ctx.page` (a `PageState`, built once per app).

| state                | where it lives                                  | owned by (the events that write it)         |
|----------------------|-------------------------------------------------|---------------------------------------------|
| the model            | the picker's value (`ctx.model`, in the page)   | the picker's input; the hint's switch; a link
|
| the sentence started | `ctx.state` (gr.State: a DecodingSession, which | Start (button, Enter, an example), the      |
|                      | carries its model)                              | hint's switch, a link; the picker and a     |
|                      |                                                 | refused Start (an empty box) end it         |
| what is started      | `PageState.started` (a hidden box: one new value| the events that write the two above, in the |
|                      | for each model and sentence: `new_value`)       | same answer, through `written`              |
| each tab's results   | the tab's results box (`results`), drawn for    | the tab's own events, which read the mark   |
|                      | the mark it was computed for (`drawn_for`)      | and answer `drawn_for(mark)`                |
| the first-load flags | which tab or fold was opened (the browser's     | the gate's opening event (a gr.Tab's select,|
|                      | first-load bundle's flags: first_load.py)       | a gr.Accordion's expand), once per page     |

Each tab's results are drawn from the page's state, not cleared after it: a results box drawn for a mark shows only
while that mark is the page's mark (one rule of the browser, written by `FOLLOW` when the mark changes). A switch of
model, a new sentence, a link or a lesson's view writes a new mark, and every tab's old results are no longer
drawn, by construction: no tab registers a clear, and an answer of the old state that comes late is drawn for the
old mark, so it stays undrawn. A results box never drawn for a mark holds nothing yet (empty tables and plots).

A button of the page whose event needs a started sentence answers without one in a note of its own (`started`
tells; `unstarted` says what to do), never with gr.Error into its outputs: every user reaches that state by picking a
model or reloading the page. The endpoints for programs keep gr.Error (attention_lens/shell/inputs.py need_session).

The Gradio behaviours this state is shaped by (each worked around here once, each with a test that fails when
Gradio stops behaving so: tests/test_gradio_behaviour*.py):
- G1 `new_value`: Gradio runs a component's change event (and a gr.HTML's watch) only when its value differs from
  the one before; a mark, a note, must be new at every call to be seen again.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import gradio as gr

from transformer.decode.decoding import DecodingSession

# nothing to compute: outside the model's concurrency group, and no limit of its own
QUIET = {"api_visibility": "private", "show_progress": "hidden", "concurrency_limit": None}
RESULTS = "al-results"  # the class of every tab's results box

# the browser's one rule: a results box drawn for another mark than the page's is not drawn (a js-only event of the
# mark's change; the mark is a hex uuid or "", checked again here since a page may send anything). Not drawn, yet laid
# out: invisible, no height, its content clipped, so a plot or table written into it is laid out at its width while
# the box still waits for its new class (display: none there left Plotly and the Dataframe at a wrong width)
FOLLOW = ("(m) => { m = /^[0-9a-f]*$/.test(m || '') ? (m || '') : ''; "
          "let s = document.getElementById('al-page-state'); "
          "if (!s) { s = document.createElement('style'); s.id = 'al-page-state'; document.head.append(s); } "
          f"s.textContent = `.{RESULTS}[class*='for-']:not(.for-${{m}}) {{ visibility: hidden !important; "
          "height: 0 !important; min-height: 0 !important; overflow: hidden !important; }`; }")


@dataclass
class PageState:
    """The server-side description of the page's state (the values live in each user's page, see above): the
    components that hold it, set by `mark`."""

    started: gr.Textbox | None = None  # the mark of what is started
    model: gr.Dropdown | None = None  # the picker
    session: gr.State | None = None  # the started sentence (a DecodingSession)
    translation: gr.Textbox | None = None  # the translation so far, drawn from the sentence
    view: gr.HTML | None = None  # the Translate view, drawn from the sentence's payload


def new_value() -> str:
    """A value no earlier one equals (G1): random, so no counter is shared by the users of the process."""
    return uuid.uuid4().hex


def started(session) -> bool:
    """Whether the user has a started sentence (the page's buttons that need one check this first)."""
    return isinstance(session, DecodingSession)


def unstarted(what: str, here: bool = False, words: dict | None = None) -> str:
    """What a page button that needs a started sentence says in its note without one (`what` it works on;
    here: a button of the Translate tab itself). `words`: the user's [label] table (attention_lens/shell/texts.py
    labels(page_lang())):
    then `what` is its key and the note is in the page's language."""
    if words is not None:
        return words["unstarted_here" if here else "unstarted"].format(what=words.get(what, what))
    return f"Press Start{'' if here else ' in the Translate tab'} first: {what}"


def mark(ctx, translation: gr.Textbox, view: gr.HTML) -> gr.Textbox:
    """The mark of what is started (hidden): every event that starts a sentence or switches the model writes
    `new_value()` into it, in the same answer as the state (`written`); its change draws the results of that mark
    alone. `translation`, `view`: the Translate tab's components drawn from the started sentence."""
    page = ctx.page
    page.started = gr.Textbox("", visible=False, label="sentences started")
    page.started.change(None, [page.started], None, js=FOLLOW)  # in the browser: no request
    page.model, page.session, page.translation, page.view = ctx.model, ctx.state, translation, view
    return page.started


def written(page: PageState, started=None, model: str | None = None) -> dict:
    """The part of an answer ({component: value}) of an event that writes the page's sentence, and its model when
    `model` is given: the session and what draws it (`started`: (session, translation, payload) as
    translate.handlers.for_page gives it; None: no sentence, the views emptied) with a new mark, so no tab draws its
    results of the state before. Every event that writes the model or the sentence answers with this."""
    session, translation, payload = started if started is not None else (None, "", None)
    out = {page.session: session, page.translation: translation, page.view: payload, page.started: new_value()}
    if model is not None:
        out[page.model] = model
    return out


def results(**kw) -> gr.Column:
    """A tab's results box: its outputs of one model and sentence, drawn only for the mark they were computed for
    (the tab's events answer `drawn_for(mark)` for it)."""
    return gr.Column(elem_classes=[RESULTS], **kw)


def drawn_for(mark) -> dict:
    """The results box's update in an answer computed for the page's `mark` (the value of `ctx.page.started` the
    event read): drawn while that mark is the page's."""
    mark = mark if isinstance(mark, str) and re.fullmatch(r"[0-9a-f]*", mark) else ""
    return gr.update(elem_classes=[RESULTS, f"for-{mark}"])
