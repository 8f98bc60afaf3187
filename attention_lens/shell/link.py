"""The page's tools in the intro row: the guided tour (assets/shell/tour.js) and a link to the view shown
(assets/shell/link.js), with the line under the intro row where a link's ignored parameters are said.

The tour needs nothing from the server: its code travels in the page's config, and driver.js (assets/vendor)
is fetched only when it starts. A link (`/?model=de-en&text=...&step=2&kind=cross&layer=2&head=3&row=1&
measure=contribution&tab=atlas`) is read in the browser; its model and sentence come here once, through the
link box's one event, which sets the picker and the box and starts the sentence as Start does; the browser
then moves the view to the link's step, head, row, colours and tab, with no further request. The other tabs' views
travel as <tab>_<name> parameters (assets/shell/views.js), restored by setting their controls and pressing their button;
a lesson (attention_lens/shell/lesson.py) is a list of such links with notes, in one parameter.
"""
from __future__ import annotations

import html
import json
from types import SimpleNamespace

import gradio as gr

from attention_lens.shell import lesson, page_state
from attention_lens.shell.components import CONC, VENDOR, Ctx, asset
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.shared_start import STARTS
from transformer.train.data import examples_path, read_glossed_examples

MAX_TEXT = 2000  # the source box's max_length: a link's sentence obeys the same limit
LINK_CSS = ("#link_note:has(.link-note[hidden]) { display: none !important; }"
            # the line floats over the screen's bottom, as a note that goes by itself does (in the flow,
            # "View 1 added" pushed the page down 84 px; over the top, it lay on the tabs once the page was scrolled)
            # a live class's bar (attention_lens/live/page.py) at the same bottom: the line stands above it
            # (assets/live/live.js --class-bar-room: its height and a gap; 0 without a bar), never over it
            "#link_note { position: fixed !important; left: 50%;"
            " bottom: calc(8px + env(safe-area-inset-bottom) + var(--class-bar-room, 0px));"
            " transform: translateX(-50%); z-index: 1000;"
            " width: min(960px, calc(100vw - 16px)) !important; box-shadow: 0 4px 16px rgba(0,0,0,.18);"
            " border-radius: 6px; pointer-events: none; }"  # what it covers stays clickable; its own controls:
            "#link_note .link-note input, #link_note .link-note button { pointer-events: auto; }"
            # a phone: above the fixed bar of Back / Step / Run / Play (assets/translate/layout.css)
            # and its words on one line with ✕, the link on the next (side by side, the words took three lines)
            "@media (max-width: 599px) { #link_note {"
            " bottom: calc(72px + env(safe-area-inset-bottom) + var(--class-bar-room, 0px)); }"
            " #link_note .link-note { flex-wrap: wrap; } #link_note .link-note [data-role=text] { flex: 1 1 0; }"
            " #link_note .link-note [data-role=close] { order: 1; }"
            " #link_note .link-note input { order: 2; flex: 1 1 100%; } }"
            "#intro #title p { line-height: 1.3; }"  # two lines of title fit the row's height
            # as the gr.Markdown it was (attention_lens/app.py)
            "#intro #title .html-container { padding: 0 !important; }"
            "#intro #tour_box, #intro #link_box { flex: 0 0 auto !important; width: auto !important; }"
            "#intro #tour_box .html-container, #intro #link_box .html-container { padding: 0 !important; }")
# their words: the catalogue's [label] (attention_lens/shell/texts.py), put in by assets/shell/explain.js apply() in the
# page's language
TOUR_HTML = ('<div class="tour-box" data-js="${driver_js}" data-css="${driver_css}" data-examples="${examples}">'
             '<button type="button" id="tour" data-tip="label.tour_tip"'
             ' title="A guided tour of the page in ten stops; it never blocks the page">▶ Tour</button>'
             '<button type="button" class="tour-no" data-role="dismiss" hidden data-tip="label.no_thanks"'
             ' data-label="label.no_thanks" title="no thanks" aria-label="no thanks">✕</button></div>')
LINK_HTML = ('<div class="link-box" data-models="${models}" data-model="${model}"><button type="button" id="copy_link" '
             'data-tip="label.copy_link_tip" data-text="label.copy_link" '
             'title="Copy a link that opens this page showing exactly this view">Copy link</button>'
             '<button type="button" id="lesson_open" data-tip="label.lesson_tip" data-text="label.lesson" '
             'title="Make a lesson: views in order, a note each, one link">Lesson…</button>'
             '<div class="link-what" data-text="label.link_what">model, sentence, step, head, tab and its view</div>'
             '</div>')
BOX_CSS = (".tour-box, .link-box { white-space: nowrap; font-size: 13px; }"
           ".tour-box { display: flex; gap: 2px; align-items: center; }"
           ".tour-box button, .link-box button { font: inherit; padding: 3px 10px; margin: 0; border-radius: 6px;"
           " cursor: pointer;"
           " border: 1px solid var(--border-color-primary, #d1d5db); background: var(--background-fill-secondary,"
           " #f9fafb); color: var(--body-text-color, #111); }"
           ".tour-box button:hover, .link-box button:hover { border-color: #f97316; }"
           "#lesson_open { margin-left: 4px; }"
           ".tour-box button.offer { background: #fff7ed; border-color: #fb923c; color: #9a3412; }"
           ".tour-box .tour-no { padding: 3px 6px; border: none; background: none; color: #888; }"
           ".link-what { font-size: 10.5px; color: var(--body-text-color-subdued, #666); line-height: 13px; }")
NOTE_CSS = (".link-note { font-size: 13px; padding: 4px 10px; border-radius: 6px; background: #fffbeb;"
            " border: 1px solid #fcd34d; color: #713f12; display: flex; gap: 8px; align-items: center; }"
            ".link-note input { flex: 1; min-width: 200px; font: inherit; font-size: 12px; padding: 1px 4px; }"
            ".link-note [data-role=text] { overflow-wrap: anywhere; }"
            ".link-note button { border: none; background: none; cursor: pointer; color: #92400e; }")


def tools(models) -> SimpleNamespace:
    """The Tour and Copy link buttons (two gr.HTML: #tour_box, #link_box), for the intro row."""
    src = f"/gradio_api/file={VENDOR}"
    tour = gr.HTML(None, html_template=TOUR_HTML, css_template=BOX_CSS, js_on_load=asset("shell/tour.js"),
                   elem_id="tour_box", driver_js=f"{src}/driver.js.iife.js", driver_css=f"{src}/driver.css",
                   examples=html.escape(json.dumps(first_examples(models), ensure_ascii=False)))
    box = gr.HTML(None, html_template=LINK_HTML, css_template=BOX_CSS, js_on_load=asset("shell/link.js"),
                  elem_id="link_box", models=",".join(models.by_key), model=models.default,
                  head=f"<style>{LINK_CSS}</style>")
    return SimpleNamespace(tour=tour, box=box)


def first_examples(models) -> dict[str, str]:
    """{model key: its first example sentence}: what the tour starts when the box is empty (assets/shell/tour.js)."""
    out = {}
    for key, tr in models:
        glossed = read_glossed_examples(examples_path(tr.config.src_lang))
        if glossed:
            out[key] = glossed[0][0]
    return out


def note() -> gr.HTML:
    """The line under the intro row: what a link ignored and why, or the link just copied (hidden when empty; it
    closes by itself), then the lesson box (attention_lens/shell/lesson.py: hidden until a lesson is made or opened)."""
    said = gr.HTML(None, html_template='<div class="link-note" hidden><span data-role="text"></span>'
                   '<button type="button" data-role="close" title="hide" aria-label="hide" data-tip="label.hide"'
                   ' data-label="label.hide">✕</button></div>',
                   css_template=NOTE_CSS, elem_id="link_note")
    lesson.build()
    return said


def opened(models, text, key, now, k, words):
    """What a link opens: (model key, Start's outputs or None, notes). An unknown model is ignored (the one in
    use stays); a sentence over the box's limit, or one the model cannot read (Start's own check), is not
    started; each said in a note."""
    notes = []
    if not (key is None or key == "" or models.known(key)):  # a list or a dict too (a link's JSON holds anything)
        notes.append(f"model {str(key)[:40]!r} (this app serves {', '.join(models.by_key)})")
        key = None
    key = key or now or models.default
    if text is None:
        return key, None, notes
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        size = len(text) if isinstance(text, str) else 0
        notes.append(f"text ({size} characters; a sentence of 1 to {MAX_TEXT})")
        return key, None, notes
    try:
        return key, STARTS.start(key, models.get(key), text, k, words), notes  # one decode per view
    except gr.Error as e:
        notes.append(f"text: {e.message}")
        return key, None, notes


def wire(ctx: Ctx, parts: SimpleNamespace) -> None:
    """The link box's event: the browser sends {model, text, id} when the page was opened with a link; the
    answer sets the picker, the box (and the tabs' words for the model) and the started sentence, and tells the
    browser what was ignored and what was started ({id, ok, notes, input}). A link is the whole page state: one
    that names no sentence, or one that cannot be started, leaves none started (a new mark: no tab draws the old
    sentence's results)."""
    c, models = ctx.translate, ctx.models
    words_out, model_parts = ctx.model_outputs  # translate_tab.wire_model: the components a model choice sets
    # the top-k: drawn from the payload by the view (decoding_views.for_page)
    outs = [ctx.model, ctx.state, c.translation, c.attention, ctx.page.started] + words_out + [parts.box]

    def on_link(now, kk, ww, evt: gr.EventData):
        data = (evt._data or {}) if evt is not None else {}
        data = data if isinstance(data, dict) else {}
        key, started, notes = opened(models, data.get("text"), data.get("model"), now, kk, ww)
        answer = {"id": data.get("id"), "ok": started is not None, "notes": notes}
        if started is None:
            return page_state.written(ctx.page, model=key) | model_parts(key) | {parts.box: answer}
        answer["input"] = started[2]["input"]  # the sentence the views name: the part translated, if it was cut
        # the box holds the linked sentence, as if typed
        return (page_state.written(ctx.page, decoding_views.for_page(started), model=key)
                | model_parts(key, text=data.get("text")) | {parts.box: answer})

    parts.box.click(on_link, [ctx.model, c.k, c.words], outs, api_visibility="private", **CONC)
