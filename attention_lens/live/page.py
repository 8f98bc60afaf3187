"""A live class on the page: Teach live beside Copy link, the teacher's panel (the student link, the
count, the questions and their answers) and the students' bar, in one gr.HTML (#class_box, assets/live/live.js); the
class's view pushed to each follower by a Gradio generator event held open per student (#class_feed), and the same
stream for programs: `Client(url).submit(code, api_name="/follow")` yields the class's view at each change.

The registry (attention_lens/live/registry.py) is this process's, its classes kept in the data folder's database
(attention_lens/live/store.py: attached when the page is built, so a restarted app has its classes back); its
handlers are async (on the event loop, where its asyncio.Events are set and awaited). Following is its own
concurrency group with no limit (a class of 200 holds 200 events open), apart from the model's events
(attention_lens/shell/components.py CONC, DECODE), which it never queues behind.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace

import gradio as gr
import segno

from attention_lens.live import access, store
from attention_lens.live.registry import MAX_CLASSES, MAX_FOLLOWING, LiveError, Registry
from attention_lens.shell import texts
from attention_lens.shell.components import asset

MAX_LINK = 500  # characters of a student link made into a QR code
LIVE = {"concurrency_limit": None, "concurrency_id": "live"}  # no limit, and never behind the model's events
REGISTRY = Registry()  # this process's classes (docs/design.md 'Live classes': several processes)
# Gradio's queue runs at most launch(max_threads) events at once whatever their concurrency group (gradio/queueing.py
# Queue.active_jobs, one place per running event): a follower's stream is one running event for as long as it
# follows, so with the app's WORKER_THREADS (80) alone the 81st follower waited in the queue and every event of the
# page, a Start too, waited behind the followers (benchmarks.live_class --students 120 never joined). The app
# launches with this many places more (app.py, tests/serving.py): the students and a teacher's page or two per class.
# tests/test_live.py checks that Gradio still counts an unlimited group's running events against max_threads.
QUEUE_PLACES = MAX_FOLLOWING + 2 * MAX_CLASSES
# Gradio keeps one SessionState per session, at most launch(state_session_capacity), the least recently used dropped
# first (gradio/state_holder.py StateHolder), and looks the session's up again at each output of an event
# (gradio/route_utils.py restore_session_state), building a new one for a session it dropped. A follower's stream is
# a session for as long as it follows: with the app's SESSIONS_MAX (200) alone, a class of 200 and its teacher were
# 201 sessions taking turns in 200 places, so at every change each follower's output missed, rebuilt its
# SessionState (the config of the page's ~200 blocks, ~15 ms on the event loop) and dropped another's: 3 s of CPU per
# change, every follower 3.0-3.5 s late (benchmarks.live_class --students 200, py-spy: 85 % of the server's samples
# in SessionState.__init__), and the started sentences of the users not following dropped too. The app keeps this
# many sessions more (app.py, tests/serving.py), one per place above. tests/test_live.py checks that Gradio still
# rebuilds a dropped session's state at each output (the reason) and that the app's followers drop none.
SESSION_PLACES = QUEUE_PLACES

BOX_HTML = (
    '<div class="class-box"><button type="button" id="class_start" data-text="label.class_start"'
    ' data-tip="label.class_start_tip" title="Teach live: students who open the class link follow your view">'
    'Teach live</button>'
    # a student on the plain page types the code the teacher shows (Enter joins; a wrong one is said, the box kept)
    '<form class="class-join" id="class_join"><input id="join_code" autocomplete="off" autocapitalize="characters"'
    ' spellcheck="false" maxlength="16" enterkeyhint="go" data-placeholder="label.join_code"'
    ' data-label="label.join_code" placeholder="Class code" aria-label="Class code" aria-describedby="join_msg">'
    '<button type="submit" id="join_go" data-text="label.join" data-tip="label.join_tip">Join</button></form>'
    '<div id="join_msg" class="class-join-msg" role="status"></div></div>'
    '<section id="class_panel" class="class-panel" hidden aria-labelledby="class_title">'
    '<div class="class-head"><strong id="class_title" data-text="label.class_teaching">Teaching live</strong>'
    '<span id="class_count" role="status"></span>'
    '<button type="button" id="class_close" data-text="label.class_close">End class</button></div>'
    # the code and its QR code, to be read from the back of a classroom; the teacher's own link behind a button
    '<div class="class-code-row"><div><div id="class_code_label" class="class-code-label"'
    ' data-text="label.class_code">Class code</div><div id="class_code" class="class-code"'
    ' aria-labelledby="class_code_label" data-tip="label.class_code_tip"></div></div>'
    '<img id="class_qr" class="class-qr" alt="QR code of the student link" data-label="label.class_qr" hidden>'
    '</div><div class="class-tools"><button type="button" id="class_show" data-text="label.class_show_code"'
    ' data-tip="label.class_show_code_tip">Show code</button>'
    '<button type="button" id="class_teacher_open" aria-expanded="false" aria-controls="class_teacher"'
    ' data-text="label.class_teacher_link_open" data-tip="label.class_teacher_link_tip">Teacher link…</button>'
    '</div>'
    '<label for="class_link" data-text="label.class_student_link">Student link</label>'
    '<input id="class_link" readonly>'
    '<div id="class_teacher" hidden><label for="class_teacher_link" data-text="label.class_teacher_link">Your'
    ' teacher link (keep it to yourself)</label><input id="class_teacher_link" readonly></div>'
    '<div class="class-ask"><button type="button" id="ask_where" data-text="label.ask_where">Where does this row'
    ' look?</button><button type="button" id="ask_next" data-text="label.ask_next">What comes next?</button></div>'
    '<div id="class_answers" aria-live="polite"></div>'
    '<button type="button" id="reveal" hidden data-text="label.class_reveal">Reveal</button>'
    '<div class="class-msg" role="status"></div></section>'
    # "Show code": the code and the QR code over the whole screen, for a projector
    '<div id="class_show_box" class="class-show" hidden role="dialog" aria-modal="true"'
    ' aria-labelledby="class_show_say"><p id="class_show_say" class="class-show-say"></p>'
    '<div id="class_show_code" class="class-show-code"></div>'
    '<img id="class_show_qr" class="class-show-qr" alt="QR code of the student link" data-label="label.class_qr">'
    '<button type="button" id="class_show_close" data-text="label.class_show_close">Close</button></div>'
    '<section id="class_bar" class="class-bar" hidden aria-label="class">'
    '<div class="class-row"><span data-role="state" role="status"></span>'
    '<button type="button" id="class_leave" data-text="label.class_leave">Explore on my own</button>'
    '<button type="button" id="class_rejoin" hidden data-text="label.class_rejoin">Rejoin</button></div>'
    '<div data-role="question"></div></section>')
BOX_CSS = (
    ".class-box button, .class-panel button, .class-bar button, .class-show button { font: inherit; font-size: 13px;"
    " padding: 3px 10px;"
    " margin: 0; border-radius: 6px; cursor: pointer; border: 1px solid var(--border-color-primary, #d1d5db);"
    " background: var(--background-fill-secondary, #f9fafb); color: var(--body-text-color, #111); }"
    # Teach live over the join box (one narrow column of the intro row); on a phone side by side
    # narrow and low, so the title keeps its two lines and the map its place on a 1280x800 screen
    ".class-box { white-space: nowrap; font-size: 12px; display: flex; flex-direction: column; gap: 2px;"
    " align-items: stretch; max-width: 9em; }"
    "@media (max-width: 599px) { .class-box { flex-direction: row; flex-wrap: wrap; align-items: center;"
    " max-width: none; } }"
    ".class-join { display: flex; gap: 4px; margin: 0; } .class-join[hidden] { display: none; }"
    "@media (min-width: 600px) { .class-box button { padding: 0 8px; } .class-join input { width: 0; }"
    # two rows of 24 px (the page's least tap target, assets/translate/layout.css): the intro row stays one line of
    # 50 px
    " .class-box button, .class-join input { height: 24px; box-sizing: border-box; } }"
    ".class-join input { font: inherit; width: 7em; min-width: 0; flex: 1 1 auto; padding: 1px 4px; margin: 0;"
    " border-radius: 6px;"
    " text-transform: uppercase;"
    " letter-spacing: .08em; border: 1px solid var(--border-color-primary, #d1d5db);"
    " background: var(--input-background-fill, #fff); color: var(--body-text-color, #111); }"
    ".class-join input::placeholder { text-transform: none; letter-spacing: 0; }"
    ".class-join-msg { flex: 1 1 100%; white-space: normal; color: #b91c1c; font-size: 12px; }"
    ".class-join-msg:empty { display: none; }"
    ".class-code-row { display: flex; gap: 8px; align-items: center; justify-content: space-between; }"
    ".class-code-label { font-size: 11px; color: #166534; }"
    ".class-code { font: 700 28px/1.1 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
    " letter-spacing: .04em; color: #052e16; white-space: nowrap; }"
    ".class-qr { width: 96px; height: 96px; background: #fff; image-rendering: pixelated; flex: none; }"
    ".class-tools { display: flex; gap: 8px; flex-wrap: wrap; }"
    ".class-show { position: fixed; inset: 0; z-index: 2000; background: #fff; color: #052e16; display: flex;"
    " flex-direction: column; align-items: center; justify-content: center; gap: 2vh; padding: 3vh 3vw;"
    " box-sizing: border-box; text-align: center; }"
    ".class-show[hidden] { display: none; }"
    ".class-show-say { font-size: clamp(16px, 3.2vw, 40px); margin: 0; overflow-wrap: anywhere; }"
    ".class-show-code { font: 700 clamp(40px, 14vw, 220px)/1 ui-monospace, SFMono-Regular, Menlo, Consolas,"
    " monospace; letter-spacing: .08em; white-space: nowrap; }"
    ".class-show-qr { width: min(46vh, 80vw); height: min(46vh, 80vw); image-rendering: pixelated; }"
    ".class-show button { font-size: 18px; padding: 8px 22px; }"
    ".class-box button:hover, .class-panel button:hover, .class-bar button:hover { border-color: #f97316; }"
    ".class-panel, .class-bar { position: fixed; z-index: 999; font-size: 13px; background: #f0fdf4;"
    " border: 1px solid #86efac; color: #14532d; border-radius: 8px; box-shadow: 0 4px 16px rgba(0,0,0,.18);"
    " padding: 8px 10px; display: flex; flex-direction: column; gap: 4px; }"
    ".class-panel[hidden], .class-bar[hidden] { display: none; }"
    # the teacher's panel covers nothing: on a wide screen a column of its own at the right, the page beside it
    # (body.class-teaching, assets/live/live.js); narrower, a block of the intro row, in the page's flow
    "@media (min-width: 1000px) { .class-panel { right: 8px; top: 8px; width: 320px; max-height: calc(100vh - 16px);"
    " overflow: auto; box-sizing: border-box; } }"
    "@media (max-width: 999px) { .class-panel { position: static; width: 100%; box-sizing: border-box;"
    " box-shadow: none; white-space: normal; margin-top: 4px; } }"
    ".class-bar { left: 50%; transform: translateX(-50%); bottom: 8px; width: min(720px, calc(100vw - 16px)); }"
    ".class-head, .class-row, .class-ask { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }"
    ".class-head #class_close { margin-left: auto; }"
    ".class-panel input { font: inherit; font-size: 12px; padding: 2px 4px; width: 100%; box-sizing: border-box; }"
    ".class-panel label { font-size: 11px; color: #166534; }"
    ".class-bar .class-row [data-role=state] { flex: 1; font-weight: 600; }"
    # a tap that would leave the teacher's view, held: asked first (assets/live/live.js)
    ".class-leave-ask { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; font-weight: 600; }"
    ".class-leave-ask[hidden] { display: none; }"
    ".class-q { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; }"
    ".class-q button[aria-pressed=true] { background: #dcfce7; border-color: #16a34a; font-weight: 600; }"
    ".class-chart { display: grid; grid-template-columns: max-content 1fr max-content; gap: 2px 6px;"
    " align-items: center; font-size: 12px; }"
    ".class-chart .bar { height: 10px; background: #16a34a; border-radius: 2px; min-width: 1px; }"
    ".class-chart .bar.model { background: #f97316; height: 6px; }"
    ".class-chart .key { overflow-wrap: anywhere; max-width: 110px; }"
    ".class-legend { font-size: 11px; color: #166534; }"
    ".class-q .class-hide { margin-left: auto; border: none; background: none; color: #166534; }"
    # the revealed answer: its words, Answers (the chart on demand) and ✕ on one line (assets/live/live.js)
    ".class-q.revealed .class-answer { flex: 1 1 12em; font-weight: 600; }"
    ".class-q.revealed .class-hide { margin-left: 0; }"
    ".class-bar .class-chart-wrap { max-height: 24vh; overflow: auto; }"
    ".class-legend i { display: inline-block; width: 10px; height: 8px; margin: 0 3px 0 8px; }"
    # on a phone, above the fixed bar of Back / Step / Run / Play (assets/translate/layout.css, the same width)
    ".class-keys { display: contents; }"
    "@media (max-width: 599px) { .class-bar { bottom: calc(72px + env(safe-area-inset-bottom)); padding: 4px 8px;"
    " gap: 2px; }"
    # with the step bar under it, at most a quarter of the screen: the question on a line, its choices (44 px for a
    # finger: a where-question's keys too, the map's cells being 16-28 px and its last columns past the screen's
    # edge on a long sentence) and ✕ on one line under it that scrolls sideways; the answers chart (opened over the
    # map) at most 40 % in all
    " .class-q { row-gap: 0; } .class-q > span:first-child { flex: 1 1 100%; }"
    " .class-keys { display: flex; order: 2; flex: 1 1 0; min-width: 0; gap: 4px; overflow-x: auto; }"
    " .class-keys button { flex: none; min-height: 44px; min-width: 44px; }"
    " .class-q .class-hide { order: 3; min-height: 44px; min-width: 44px; }"
    " .class-bar .class-chart-wrap { max-height: 15vh; } }")
# the page around the box (the component's CSS is scoped to it): the teacher's panel's column on a wide screen, its
# line of the intro row on a narrow one; a student's page ends above the bar (its last lines scroll clear of it)
PAGE_CSS = (
    "#class_feed { display: none !important; }"
    "body.class-hide-next #topk .topk-list { visibility: hidden; }"
    "#intro #class_box { flex: 0 0 auto !important; width: auto !important; }"
    "#intro #class_box .html-container { padding: 0 !important; }"  # as the intro row's other boxes: one line high
    "@media (min-width: 1000px) { body.class-teaching .gradio-container > .main { padding-right: 344px !important; } }"
    # the intro row narrower beside the panel: the title on a line of its own, the row's tools under it
    "body.class-teaching #intro { flex-wrap: wrap; } body.class-teaching #intro > #title { flex: 1 1 100% !important; }"
    "body.class-teaching #sentence_row { flex-wrap: wrap !important; }"  # German's Step / Run past the panel's edge
    "@media (max-width: 999px) {"
    " body.class-teaching #intro #class_box { flex: 1 1 100% !important; width: 100% !important; } }"
    "body.class-student { padding-bottom: 140px; }")


def build() -> SimpleNamespace:
    """#class_box (Teach live, the join box, the teacher's panel, the students' bar) for the intro row, its events
    and the API's /follow. Returns the components. The registry keeps its classes in the data folder's database
    from now on (attention_lens/live/store.py data_dir), and has back those a previous process left alive."""
    if REGISTRY.store is None:
        REGISTRY.attach(store.Store(store.data_dir()))
    box = gr.HTML(None, html_template=BOX_HTML, css_template=BOX_CSS, js_on_load=asset("live/live.js"),
                  elem_id="class_box", padding=False)
    # the stream of one follower: each snapshot becomes this component's value (assets/live/live.js watches it)
    feed = gr.HTML(None, html_template="", js_on_load="element.closest('#class_feed').feed = "
                   "{follow: (d) => trigger('submit', d), props, watch};", elem_id="class_feed", padding=False,
                   container=False,
                   head=f"<style>{PAGE_CSS}</style>")

    async def op(evt: gr.EventData, request: gr.Request):
        """The teacher's and the students' requests: {id, op, ...} -> {id, ok, ...} or {id, ok: false, error}."""
        data = (evt._data or {}) if evt is not None else {}
        data = data if isinstance(data, dict) else {}
        answer = {"id": data.get("id"), "op": data.get("op"), "ok": True}
        try:
            answer.update(do(data, client_of(request)))
        except LiveError as e:
            answer.update(ok=False, error=texts.said(e.key), key=e.key)
        return {box: answer}

    async def follow(evt: gr.EventData, request: gr.Request):
        """The page's stream: {code, token?, student?, n} -> the class's snapshot at each change and beat; a refusal
        as {error}. `n` (the page's count of its streams) comes back in each, so that the page tells a new
        stream's first snapshot from the last of one that dropped, however alike."""
        data = (evt._data or {}) if evt is not None else {}
        data = data if isinstance(data, dict) else {}
        n = data.get("n") if isinstance(data.get("n"), int) else None
        try:
            async for snap in REGISTRY.follow(data.get("code"), data.get("token") or None, data.get("student"),
                                              request.session_hash, client_of(request)):
                yield {feed: {**snap, "n": n}}
        except LiveError as e:
            yield {feed: {"code": data.get("code"), "error": texts.said(e.key), "key": e.key, "ended": True, "n": n}}

    box.click(op, None, box, api_name="class_op", api_visibility="private", show_progress="hidden", queue=True,
              trigger_mode="multiple", **LIVE)
    feed.submit(follow, None, feed, api_name="class_feed", api_visibility="private", show_progress="hidden",
                trigger_mode="multiple", **LIVE)
    programs()
    return SimpleNamespace(box=box, feed=feed)


def programs() -> None:
    """The API's endpoints for programs (in the Blocks being built): /follow, /class_here, /class_open and
    /class_change, as the page's own requests do."""

    async def follow_api(code: str, student: str | None = None, request: gr.Request = None) -> AsyncIterator[dict]:
        """Follows the live class of `code` (the student link's ?class=, or the code the teacher shows): yields the
        class's snapshot now and at every change of the teacher: {view: the page state as a link's query string,
        step, seq, students, question, ended}. The first snapshot's `stream` must be confirmed (/class_here) within
        20 s, else the stream ends: a follower counts once it reads. `student`: the follower's own id (one student
        however many streams share it; a new one when None). A wrong or ended code: an error."""
        try:
            async for snap in REGISTRY.follow(code, None, student, request.session_hash if request else None,
                                              client_of(request)):
                yield snap
        except LiveError as e:
            raise gr.Error(texts.said(e.key), print_exception=False) from None

    gr.api(follow_api, api_name="follow", **LIVE)

    async def class_here(code: str, stream: str, request: gr.Request = None) -> bool:
        """Confirms a /follow stream (its first snapshot's `stream`): it counts as a student from now on."""
        try:
            REGISTRY.confirm(code, stream, client_of(request))
        except LiveError as e:
            raise gr.Error(texts.said(e.key), print_exception=False) from None
        return True

    async def class_open(request: gr.Request = None) -> tuple[str, str]:
        """Opens a live class (as Teach live does): (its code, the teacher's secret token)."""
        try:
            c = REGISTRY.open(client_of(request))
        except LiveError as e:
            raise gr.Error(texts.said(e.key), print_exception=False) from None
        return c.code, c.token

    async def class_change(code: str, token: str, view: str, step: int | None = None,
                           request: gr.Request = None) -> int:
        """The teacher's change (as the page sends it): the page state as a link's query string and its step;
        only the class's token may change it. Returns the change's number (the followers' `seq`)."""
        try:
            return REGISTRY.change(code, token, view, step, client=client_of(request)).seq
        except LiveError as e:
            raise gr.Error(texts.said(e.key), print_exception=False) from None

    gr.api(class_here, api_name="class_here", **LIVE)
    gr.api(class_open, api_name="class_open", **LIVE)
    gr.api(class_change, api_name="class_change", **LIVE)


def client_of(request) -> str:
    """The client of a request (attention_lens/live/access.py client_key): its address, as uvicorn gives it."""
    host = getattr(getattr(request, "client", None), "host", None) if request is not None else None
    return access.client_key(host)


def unloaded(request: gr.Request) -> None:
    """A page closed or reloaded (Gradio unloads its session when its heartbeat ends): its streams end now and
    leave the count (attention_lens/app.py wires it with demo.unload)."""
    REGISTRY.gone(request.session_hash)


def qr(url) -> str:
    """The QR code of a student link, as an SVG data URI (segno), black on white: what a phone's camera reads."""
    return segno.make(url, error="m", micro=False).svg_data_uri(scale=4, border=4)


def do(data: dict, client: str = "") -> dict:
    """One request of the page, by its `op`."""
    r, code, token = REGISTRY, data.get("code"), data.get("token")
    match data.get("op"):
        case "start":
            c = r.open(client)
            return {"code": c.code, "token": c.token}
        case "qr":  # the student link's QR code, for the teacher's panel
            c, url = r.teacher(code, token, client), data.get("url")
            if not (isinstance(url, str) and len(url) <= MAX_LINK and url.isascii() and url.isprintable()
                    and url.startswith(("http://", "https://")) and url.endswith(f"?class={c.code}")):
                raise LiveError("class_bad_request")
            return {"qr": qr(url)}
        case "check":  # the join box: the code typed, as the class keys it
            return {"code": r.get(code, client).code}
        case "here":
            r.confirm(code, data.get("stream"), client)
            return {}
        case "view":
            c = r.change(code, token, data.get("view"), data.get("step"), data.get("lesson"), client)
            return {"seq": c.seq}
        case "ask":
            q = r.ask(code, token, data.get("kind"), data.get("keys"), data.get("model"), data.get("row") or "",
                      client)
            return {"question": q.id}
        case "reveal":
            r.reveal(code, token, data.get("question"), client)
            return {}
        case "close":
            r.close(code, token, client)
            return {}
        case "answer":
            r.answer(code, data.get("student"), data.get("question"), data.get("choice"), client)
            return {}
    raise LiveError("class_bad_request")
