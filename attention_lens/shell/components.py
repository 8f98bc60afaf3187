"""What every tab shares: asset paths, queue settings, the attention view component."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from attention_lens.shell.held import default_memory, gradio_sessions
from attention_lens.shell.page_state import PageState, new_value
from transformer.decode.decoding import Translator
from transformer.model.shipped import shipped

ASSETS = shipped("assets")  # the checkout's assets/, or those a wheel installed (transformer/model/shipped.py)
VENDOR = ASSETS / "vendor"  # plotly.js cartesian bundle (1.5 MB instead of 4.8 MB: faster first load)
SESSION_TTL_S = 3600
# Sessions whose state Gradio keeps at once (besides the live class's followers' places): past this it drops the least
# recently used one's state (its SessionState), and that user's next server event says "Press Start first" (stepping
# in their browser goes on: it needs no server). Set from --session-memory (attention_lens/shell/held.py, which also
# keeps the started sentences themselves within the same memory); this is the number for the default.
SESSIONS_MAX = gradio_sessions(default_memory())
QUEUE_MAX = 256
# How often Gradio's queue tells each waiting request its place ("queue: 5/28", seconds). Gradio's default, "auto",
# tells every waiting request of a concurrency group again each time one of them starts: with a class waiting, that
# is a message per waiting request per start, each written by the event loop that also answers everyone (a class of
# 60, benchmarks.classroom --students 60: 7,155 such messages over the run at "auto", 1,903 at 1 s, counted on the
# server, 2026-12-03). ATTENTION_LENS_QUEUE_STATUS_S=auto gives Gradio's default (benchmarks.classroom, docs).
_status = os.environ.get("ATTENTION_LENS_QUEUE_STATUS_S", "1")
QUEUE_STATUS_S: float | str = _status if _status == "auto" else float(_status)
# Batching across users (transformer/decode/batching.py): Start's and the API's decodings that reach one model together
# run
# in one batch, each bit for bit as alone. ATTENTION_LENS_BATCH=0 turns it off (benchmarks.classroom's "alone").
BATCHING = os.environ.get("ATTENTION_LENS_BATCH", "1") != "0"
BATCH_WINDOW_S = float(os.environ.get("ATTENTION_LENS_BATCH_MS", "50")) / 1000  # the most a batch waits for arrivals
BATCH_ROWS = 32
# Model events in flight at once, one limit shared by every model event (concurrency_id "model"): 4, one torch thread
# per request (a few cores busy, the rest waiting in order). The events that decode in a batch (DECODE below:
# Start and the API's decodings) share a limit of their own, DECODE_CONCURRENCY: a batch holds only what is in
# flight. `python -m benchmarks.classroom --students 30 --limits 4,8,16,32` (2026-12-02, 2 loaded cores): Start then
# ALTI+ of 30 students, wall 4.9-5.7 s unbatched at 4; batched at 4, 8, 16, 32: 4.0-4.6, 3.2-3.6, 3.2-3.3, 2.2-2.7 s
# (Start p95 3.7-4.4, 2.9-3.3, 2.6, 1.4-1.8 s against 4.7-5.3 s). The other events stay at 4: 32 of them at once (one
# limit for all, measured through HTTP with benchmarks.classroom) made ablation's p95 2.7x and beam's 1.9x today's.
# 64 decoding events at once, with Gradio's worker threads raised from 40 to 100 to hold them (2026-12-03,
# benchmarks.classroom --students 60 --mode batched, each student asking ALTI+ both as the page does and through
# /attribution, run alternately, twice each): /start p95 8.85 and 5.67 s against 9.67 and 10.91 s at 32, but RSS
# +151-172 MB against +134-135 MB, over the +150 MB a class may add: kept at 32. Again with the batch's step compiled
# (2026-12-03, 17:05-17:08, the same benchmark, limits in the order 32, 56, 56, 32, 64 worker threads for 56): 56 gave
# /start p95 2.23 and 2.26 s against 3.12 and 2.78 s, RSS +172 and +138 MB against +123 and +126 MB: kept at 32.
# 64, with MKL's per-thread buffer pools off (attention_lens/shell/memory.py; each of the 32 waiting handler threads had
# kept one, the
# RSS the two measurements above saw grow), 2026-12-03, 19:04-19:07, the same benchmark in the order 32, 64, 64, 32
# (Gradio's worker threads 40 at 32, 80 at 64): /start p95 3.70 and 3.66 s against 5.09 and 6.11 s at 32 (a loaded
# host), ALTI+ 2.19 and 2.63 s against 3.65 and 4.29 s, RSS at its peak +83 and +87 MB against +64 and +55 MB: 64.
# A class of up to 64 then decodes in one wave instead of two.
CONCURRENCY = int(os.environ.get("ATTENTION_LENS_CONCURRENCY", "4"))
DECODE_CONCURRENCY = 64 if BATCHING else CONCURRENCY
WORKER_THREADS = DECODE_CONCURRENCY + 16  # Gradio's threads for sync handlers (its default 40): the decoding events
# waiting for their batch, the model events (4) and the page's quiet events beside them
CONC = {"concurrency_limit": CONCURRENCY, "concurrency_id": "model"}  # every model event shares one limit
DECODE = {"concurrency_limit": DECODE_CONCURRENCY, "concurrency_id": "decode"}  # the events whose decoding is batched
# a step must not flash a spinner. The page's ALTI+ and saliency (attention_lens/translate/attribution_panel.py) are
# FAST too: a group of
# their own (limit 4, then 8) was measured (2026-12-03, benchmarks.classroom --mode batched, run alternately): 30
# students' ALTI+ p95 1.12-1.77 s at 4 and 0.96-1.22 s at 8 against 1.90-2.10 s shared, /start 2.24-3.00 s against
# 2.42-2.49 s; but 60 students' /start p95 11.53 and 13.52 s at 8 against 7.54 and 8.48 s shared (ALTI+ 1.52-1.71
# against 8.71-9.25 s): the first students' ALTI+ then runs beside the later students' Starts. A translation comes
# first: kept shared.
FAST = dict(CONC, show_progress="hidden", trigger_mode="multiple")


@dataclass
class Ctx:
    """What the tab builders share: the translator, the per-user session, and the Translate tab's inputs."""

    tr: Translator  # the first model: what shapes the page (layers, heads) before a sentence is started
    state: gr.State  # the user's DecodingSession (it carries its model: session.translator)
    css: str
    plotly_src: str  # URL of the vendored plotly.js: lens_export.js loads it to export a figure
    source: gr.Textbox | None = None
    k: gr.Slider | None = None
    words: gr.Checkbox | None = None
    view: gr.HTML | None = None  # fires the Translate view's events (see translate_tab.py, lens_player.js announce)
    models: object = None  # attention_lens.shell.models.Models: every model served
    model: gr.Dropdown | None = None  # the picker: this user's model (its value lives in their page)
    api_trigger: gr.Button | None = None  # hidden, never clicked: the trigger of the endpoints for programs only
    # the page's state: what owns what (attention_lens/shell/page_state.py)
    page: PageState = field(default_factory=PageState)
    translate: object = None  # the Translate tab's components (translate_tab.build)
    model_outputs: tuple | None = None  # (outputs, values(key, text)) a choice of model sets (translate_tab.wire_model)


def live_position(n_inputs: int, index: int) -> str:
    """A Gradio `js=` function for an event whose input `index` (of n_inputs) is ctx.view, the Translate view: it
    puts the position the view shows *now* there (assets/shell/lens.js `position`: the step and the pieces leading to
    it), so the request carries the step the browser owns. Without a view (a program's call) the value is "" and
    the handler reads the session's own cursor (attention_lens/translate/handlers.py at_position)."""
    return (f'(...a) => {{ const v = document.getElementById("attention")?.lens; '  # the view, on its element
            f"if (v && v.position) a[{index}] = v.position(); return a.slice(0, {n_inputs}); }}")


def api_only(ctx: Ctx) -> gr.Button:
    """The hidden trigger of an endpoint for programs only (never clicked by the page): the Translate tab's one
    (attention_lens/translate/tab.py), or a new one for a tab built without it."""
    if ctx.api_trigger is None:
        ctx.api_trigger = gr.Button("api", visible=False)
    return ctx.api_trigger


def asset(name: str) -> str:
    """The text of assets/<name>, NAME its path there ("translate/inside.js": the folder of the view that owns it)."""
    return (ASSETS / name).read_text(encoding="utf-8")


STRICT = '"use strict";\n'  # a part's body: a name it assigns without declaring it is an error, not a page global


def script(main: str, *parts: str) -> str:
    """A view's js_on_load made of files of assets/, each in a scope of its own. Every part file (in `parts`) is
    compiled as Gradio compiles a js_on_load, `new Function(...)` (so it sees only the page, never a name of another
    file): the body of a function of `view`, what the view gives it, returning what it gives. The main file is the
    js_on_load itself, given Gradio's arguments and `parts`, the parts' functions by file name without .js
    (parts.payload(), parts.lens_maps(view)), which it calls. Gradio 6.31 runs a js_on_load as one function body
    (`new Function("element", "trigger", "props", "server", "upload", "watch", js_on_load)`, frontend HTML.svelte),
    so it holds no static `import`; ES modules of their own would be a request each on the first load
    (docs/benchmarks.md)."""
    fns = "".join(f"  {Path(n).stem}: new Function(\"view\", {json.dumps(STRICT + asset(n), ensure_ascii=False)}),\n"
                  for n in parts)
    head = f"const parts = Object.freeze({{\n{fns}}});  // attention_lens/shell/components.py script\n" if parts else ""
    return head + asset(main)


# The attention view's parts, by concept (assets/shell/lens.js says what each holds and mounts them)
LENS_PARTS = ("shell/payload.js", "shell/lens_maps.js", "shell/lens_draw.js", "shell/lens_labels.js",
              "shell/lens_player.js", "shell/lens_export.js")


def lens_view(ctx: Ctx, elem_id: str) -> gr.HTML:
    """An attention view (assets/lens.*): heatmap + layers x heads grid, drawn in the browser."""
    return gr.HTML(None, html_template=asset("shell/lens.html"), css_template=ctx.css,
                   js_on_load=script("shell/lens.js", *LENS_PARTS), elem_id=elem_id, plotly_src=ctx.plotly_src)


def started_sentence(ctx: Ctx, elem_id: str, hint: bool = False, head: str | None = None) -> gr.HTML:
    """The sentence every tab uses, the one started in the Translate tab, named (assets/shell/sentence.js); with
    hint=True instead: the note under the Translate tab's box, shown while the box holds another sentence, and
    what a Start that started nothing said of the box's text (its value: box_note_value, box "source").
    `head`: HTML put into the page's head when it loads (the Translate tab's layout CSS)."""
    template = ('<div class="source-said" role="alert" hidden></div><div class="source-hint" hidden></div>' if hint
                else '<div class="started-sentence"></div>')
    return gr.HTML(None, html_template=template, css_template=ctx.css, js_on_load=asset("shell/sentence.js"),
                   elem_id=elem_id, head=head)


def box_note(ctx: Ctx, elem_id: str, boxes: list[str]) -> gr.HTML:
    """The note under input boxes (assets/shell/box_note.js): why the last request of a button started nothing (its
    value: box_note_value), said by the page while the boxes (their elem_ids) still hold what was sent; gone once
    one of them is edited, a sentence is started, or the next request is taken. Gradio's own message on a box (a
    validator's) is replaced by the box's status at any later server event of the page, so it could vanish ms
    after it showed."""
    return gr.HTML("", html_template='<div class="source-said box-note" role="alert" hidden></div>',
                   css_template=ctx.css, js_on_load=asset("shell/box_note.js"), elem_id=elem_id, boxes=",".join(boxes),
                   elem_classes=["al-box-note"], padding=False)  # lens.css: .source-said; layout.css: no gap when empty


def box_note_value(texts: dict, problem: str = "") -> str:
    """A box_note's value: the boxes' texts as sent ({elem_id: text}) and why nothing started ("": it started);
    a JSON text, new at every call (attention_lens/shell/page_state.py G1: else a second identical note would not be
    shown)."""
    return json.dumps({"n": new_value(), "texts": {k: v if isinstance(v, str) else "" for k, v in texts.items()},
                       "said": problem}, ensure_ascii=False)
