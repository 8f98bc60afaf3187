"""A lesson: a teacher's views, 1 to 8, each with a note, in order, carried whole by one link
(`/?lesson=...`: base64url JSON, bounded; nothing is stored on the server, so it survives a restart and opens on
any copy of the app). The box under the intro row holds the teacher's tools (opened by Lesson… beside Copy link:
#lesson_note, #lesson_add, #copy_lesson) and the student's bar (#lesson_bar: "View 2 of 4", the note,
#lesson_back / #lesson_next). Everything runs in the browser: assets/shell/views.js (each tab's view as link parameters)
and assets/shell/lesson.js; each view is opened by assets/shell/link.js as its own link would be."""
from __future__ import annotations

import html
import json

import gradio as gr

from attention_lens.shell.components import script
from attention_lens.shell.texts import both, labels
from attention_lens.translate.attribution import ALIGN_METHODS

MAX_VIEWS, MAX_NOTE, MAX_LINK = 8, 140, 12000  # views per lesson, characters per note and per lesson parameter
CSS = ("#lesson:has(#lesson_bar[hidden]):has(.lesson-make[hidden]) { display: none !important; }"
       "#lesson .html-container { padding: 0 !important; }"
       # a phone: the student's bar stays at the top of the screen while the page scrolls, so the view's
       # subject can sit right under it (assets/shell/lesson.js inSight). Gradio's container hides its overflow, which
       # makes it the box a sticky element sticks in; `clip` cuts the same overflow without being one.
       "@media (max-width: 599px) {"
       " .gradio-container:has(#lesson_bar:not([hidden])) { overflow: clip !important; }"
       " #lesson:has(#lesson_bar:not([hidden])):has(.lesson-make[hidden]) { position: sticky !important; top: 0;"
       " z-index: 55; background: var(--body-background-fill, #fff); padding-bottom: 4px; } }")
BOX_CSS = (".lesson-bar, .lesson-make { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center;"
           " font-size: 14px; padding: 5px 10px; border-radius: 6px; }"
           ".lesson-bar[hidden], .lesson-make[hidden] { display: none !important; }"
           ".lesson-bar { background: #eff6ff; border: 1px solid #93c5fd; color: #1e3a8a; }"
           ".lesson-make { background: var(--background-fill-secondary, #f9fafb);"
           " border: 1px solid var(--border-color-primary, #d1d5db); font-size: 13px; }"
           ".lesson-bar .lesson-bad { color: #9a3412; font-weight: 600; }"
           ".lesson-bar .lesson-text { flex: 1 1 240px; overflow-wrap: anywhere; }"
           ".lesson-make input { flex: 1 1 200px; min-width: 140px; font: inherit; padding: 2px 6px; }"
           ".lesson-bar button, .lesson-make button { font: inherit; padding: 2px 10px; border-radius: 6px;"
           " cursor: pointer; border: 1px solid var(--border-color-primary, #d1d5db);"
           " background: var(--background-fill-primary, #fff); color: inherit; }"
           ".lesson-bar button:disabled { opacity: 0.45; cursor: default; }"
           ".lesson-make button:hover, .lesson-bar button:hover:enabled { border-color: #f97316; }"
           ".lesson-make [data-role=close] { border: none; background: none; color: #888; }")

LESSON_PARTS = ("shell/views.js",)  # the script's part (assets/shell/lesson.js calls it first): the tabs' registry


def template() -> str:
    """The bar and the tools; their words in every language (attention_lens/shell/texts.py both; tooltips: data-tip,
    filled by assets/shell/explain.js in the page's language)."""
    limits = {"views": MAX_VIEWS, "note": MAX_NOTE, "link": MAX_LINK, "methods": ALIGN_METHODS}
    tip = lambda key: f'data-tip="label.{key}" title="{html.escape(labels()[key])}"'
    return (f'<div class="lesson" data-views="{html.escape(json.dumps(limits, ensure_ascii=False))}">'
            f'<div class="lesson-bar" id="lesson_bar" role="region" aria-label="lesson" data-label="label.lesson_word"'
            f' hidden><b>{both("lesson_word")}</b><span data-role="where"></span>'
            '<span class="lesson-bad" data-role="bad" role="status" hidden></span>'
            '<span class="lesson-text" data-role="note"></span>'
            f'<button type="button" id="lesson_back">{both("lesson_prev")}</button>'
            f'<button type="button" id="lesson_next">{both("lesson_next")}</button></div>'
            f'<div class="lesson-make" hidden><b>{both("lesson_word")}</b>'
            f'<input id="lesson_note" maxlength="{MAX_NOTE}" aria-label="a note for this view" '
            'data-label="label.lesson_note" data-placeholder="label.lesson_note_ph" '
            'placeholder="A note for the view shown, e.g. Look how *kommt* goes back to *coming*">'
            f'<button type="button" id="lesson_add" {tip("lesson_add_tip")}>{both("lesson_add")}</button>'
            '<span data-role="count"></span>'
            f'<button type="button" data-role="drop" {tip("lesson_drop_tip")}>{both("lesson_drop")}</button>'
            f'<button type="button" id="copy_lesson" {tip("lesson_copy_tip")}>{both("lesson_copy")}</button>'
            '<button type="button" data-role="close" title="hide" aria-label="hide the lesson tools" '
            'data-tip="label.hide" data-label="label.lesson_hide">✕</button>'
            '</div></div>')


def build() -> gr.HTML:
    """The lesson box (#lesson), under the intro row; hidden until a lesson is made or opened."""
    return gr.HTML(None, html_template=template(), css_template=BOX_CSS,
                   js_on_load=script("shell/lesson.js", *LESSON_PARTS),
                   elem_id="lesson", head=f"<style>{CSS}</style>")
