"""A live class holds through a lesson's ordinary events, in Chromium: the teacher's reload, her closed and reopened
tab, a lesson link she opens while teaching keep her class (its panel, count, question), with its token in her
browser's storage and never in the address bar; students read that she is away while no page of hers is open, and
follow again when she is back; a restart of the server mid-question (the app closed, its registry new, the classes
read back from the database) brings every page back into the class with the question and its answers; Back on a
phone after "Explore on my own" follows the teacher again and keeps the class. Screenshots of the German phone under
/work/notes/shots17/livestore/ when that folder exists."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.browser import go, open_app, start, tab_button, tap_key

pytestmark = pytest.mark.browser
SENTENCE = "Ich liebe dich."
OTHER = "Der Hund beißt den Mann."
SHOTS = Path("/work/notes/shots17/livestore")
LIVE = "document.getElementById('class_box')?.live"


@pytest.fixture(scope="module")
def app(translator, monkeypatch_module):
    """(url, browser, restart): the app served in this process at a port kept over restarts. restart() closes the
    server and serves the same page again with a new registry that has only what the database kept, as a new
    process has. The teacher counts as away after 2 s here (20 s in the app)."""
    from attention_lens.app import build_demo
    from attention_lens.live import page, registry, store
    from attention_lens.live.page import QUEUE_PLACES, SESSION_PLACES
    from attention_lens.shell.components import SESSIONS_MAX, WORKER_THREADS
    from tests.browser import browser, require_chromium
    from tests.serving import free_port
    require_chromium()
    monkeypatch_module.setattr(registry, "AWAY_S", 2.0)
    demo, port = build_demo(translator), free_port()
    launch = {"server_name": "127.0.0.1", "server_port": port, "prevent_thread_lock": True, "quiet": True,
              "_frontend": False, "state_session_capacity": SESSIONS_MAX + SESSION_PLACES,
              "max_threads": WORKER_THREADS + QUEUE_PLACES}

    def restart():
        demo.close()
        monkeypatch_module.setattr(page, "REGISTRY", registry.Registry(store=store.Store(store.data_dir())))
        demo.launch(**launch)

    demo.launch(**launch)
    try:
        with browser() as b:
            yield f"http://127.0.0.1:{port}/", b, restart
    finally:
        demo.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def tab(ctx):
    """A new tab of the browser context `ctx` (one teacher's browser), collecting its page errors."""
    p = ctx.new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    return p


def shot(page, name):
    if SHOTS.is_dir():
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def teaching(page, code, timeout=60000):
    """Waits until `page` teaches the class `code` again: its panel up, its stream's snapshot in."""
    page.wait_for_function(f"(c) => {LIVE} && {LIVE}.role === 'teacher' && {LIVE}.code === c && {LIVE}.snap"
                           f" && !{LIVE}.lost && !document.getElementById('class_panel').hidden", arg=code,
                           timeout=timeout)


def following(page, text, step, timeout=60000):
    """Waits until the student's page follows the teacher at `text`, step `step`."""
    try:
        _following(page, text, step, timeout)
    except Exception as e:
        seen = page.evaluate(f"[{LIVE}?.following, {LIVE}?.lost, {LIVE}?.applied, location.search, "
                             "document.getElementById('source_hint')?.sentence?.started, window.__lens.state.t,"
                             " document.getElementById('link_box')?.link.opening]")
        raise AssertionError(f"not following {text!r} at step {step}: {seen}") from e


def _following(page, text, step, timeout):
    page.wait_for_function(
        f"(w) => {LIVE} && {LIVE}.following && !{LIVE}.lost && window.__lens.state.traj &&"
        " document.getElementById('source_hint')?.sentence?.started === w.text && window.__lens.state.t === w.step"
        " && !document.getElementById('link_box')?.link.opening", arg={"text": text, "step": step}, timeout=timeout)


def bar(page) -> str:
    return page.inner_text("#class_bar [data-role=state]")


def phone(b, link, lang="de"):
    p = b.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                      locale="de-DE" if lang == "de" else "en-US").new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.goto(f"{link}&lang={lang}", timeout=90000)
    p.wait_for_function(f"{LIVE}?.snap", timeout=60000)
    return p


def class_start(teacher):
    teacher.click("#class_start")
    teacher.wait_for_function(f"{LIVE}?.code && {LIVE}?.sends >= 1", timeout=30000)
    return teacher.evaluate(f"{LIVE}.code"), teacher.evaluate(f"{LIVE}.token")


def teacher_browser(b, url):
    """(one teacher's browser context, its first tab with SENTENCE started)."""
    ctx = b.new_context(viewport={"width": 1280, "height": 800})
    teacher = tab(ctx)
    teacher.goto(url, timeout=90000)
    teacher.wait_for_function("window.__lens?.ready === true", timeout=60000)
    start(teacher, SENTENCE)
    return ctx, teacher


def lesson_link(url, *views) -> str:
    raw = json.dumps([[v, f"note {i + 1}"] for i, v in enumerate(views)]).encode()
    return f"{url}?lesson={base64.urlsafe_b64encode(raw).decode().rstrip('=')}"


def test_the_teacher_keeps_her_class_over_a_reload_a_reopened_tab_and_a_lesson_link(app):
    url, b, _restart = app
    ctx, teacher = teacher_browser(b, url)
    go(teacher, 2)
    code, token = class_start(teacher)
    student = phone(b, teacher.input_value("#class_link"))
    following(student, SENTENCE, 2)
    shot(student, "phone_de_following")
    teacher.wait_for_function("document.querySelector('#class_count').textContent === '1 following'",
                              timeout=20000)
    teacher.click("#ask_where")
    student.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
    tap_key(student, 1)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('1 of 1 answered')",
                              timeout=20000)

    teacher.reload()  # a reload: the same class, its count, its open question and its answer
    teaching(teacher, code)
    assert token not in teacher.url and code not in teacher.url
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('1 of 1 answered')"
                              " && document.querySelector('#class_count').textContent === '1 following'",
                              timeout=20000)
    assert teacher.is_visible("#reveal") and teacher.is_visible("#class_close")
    teacher.wait_for_function("window.__lens?.state?.traj && window.__lens.state.t === 2", timeout=60000)
    go(teacher, 3)  # her changes lead the class again
    following(student, SENTENCE, 3)
    shot(student, "phone_de_after_teacher_reload")

    teacher_link = teacher.input_value("#class_teacher_link")
    teacher.close()  # a closed tab, and a new one with her teacher link: the token leaves the address bar
    again = tab(ctx)
    again.goto(teacher_link, timeout=90000)
    teaching(again, code)
    assert token in teacher_link and token not in again.url and "class=" not in again.url
    again.wait_for_function("window.__lens?.state?.traj && window.__lens.state.t === 3", timeout=60000)  # the
    go(again, 1)                                                                       # class's view, then hers
    following(student, SENTENCE, 1)

    lesson = lesson_link(url, "model=de-en&text=Der+Hund+bei%C3%9Ft+den+Mann.&step=2",
                         "model=de-en&text=Der+Hund+bei%C3%9Ft+den+Mann.&step=4")
    again.goto(lesson, timeout=90000)  # a lesson link opened while teaching: its views are the class's
    teaching(again, code)
    following(student, OTHER, 2)
    again.click("#lesson_next")
    following(student, OTHER, 4)
    again.wait_for_function(f"{LIVE}.sentLesson.includes('view=2')", timeout=20000)
    third = tab(ctx)  # a second tab on the app's plain address: the class with its lesson, at its view
    third.goto(url, timeout=90000)
    teaching(third, code)
    third.wait_for_function("new URLSearchParams(location.search).get('view') === '2' && "
                            "document.querySelector('#lesson_bar') && !document.querySelector('#lesson_bar').hidden",
                            timeout=60000)
    assert token not in third.url
    for p in (again, third, student):
        assert p.errors == [], p.errors
    third.click("#class_close")  # End class: every tab of hers stops teaching, and a new page teaches nothing
    again.wait_for_function(f"{LIVE}.role === null && !document.getElementById('class_start').hidden",
                            timeout=20000)
    assert third.evaluate("localStorage.getItem('attention-lens:class')") is None
    ctx.close()
    student.context.close()


def test_students_read_that_the_teacher_is_away_and_follow_when_she_is_back(app):
    url, b, _restart = app
    ctx, teacher = teacher_browser(b, url)
    code, _token = class_start(teacher)
    de, en = phone(b, teacher.input_value("#class_link")), phone(b, teacher.input_value("#class_link"), "en")
    following(de, SENTENCE, teacher.evaluate("window.__lens.state.t"))
    teacher.close()  # her page gone (AWAY_S: 2 s here; a closed page is noticed at the stream's next beat)
    de.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent.startsWith("
                         "'Die Lehrkraft ist gerade nicht da')", timeout=30000)
    en.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent.startsWith("
                         "'The teacher\\'s page is closed for now')", timeout=30000)
    shot(de, "phone_de_teacher_away")
    back = tab(ctx)
    back.goto(url, timeout=90000)
    teaching(back, code)
    de.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent === "
                         "'Du folgst der Lehrkraft'", timeout=30000)
    back.wait_for_function("window.__lens?.state?.traj", timeout=60000)
    go(back, 2)
    following(de, SENTENCE, 2)
    following(en, SENTENCE, 2)
    for p in (back, de, en):
        assert p.errors == [], p.errors
    for p in (ctx, de.context, en.context):
        p.close()


def test_a_restart_mid_question_keeps_the_class_its_question_and_its_answers(app):
    url, b, restart = app
    teacher = open_app(b, url, 1280, 800)
    start(teacher, SENTENCE)
    go(teacher, 2)
    code, _token = class_start(teacher)
    link = teacher.input_value("#class_link")
    students = [phone(b, link), phone(b, link, "en")]
    for s in students:
        following(s, SENTENCE, 2)
    teacher.click("#ask_where")
    for i, s in enumerate(students):
        s.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
        tap_key(s, i)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('2 of 2 answered')",
                              timeout=20000)
    before = teacher.evaluate(f"{LIVE}.snap.question")

    restart()  # every stream drops; the pages find the server again by themselves
    for p in (teacher, *students):
        p.wait_for_function(f"{LIVE}.reconnects >= 1 && !{LIVE}.lost", timeout=90000)
    teaching(teacher, code)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('2 of 2 answered')",
                              timeout=30000)
    after = teacher.evaluate(f"{LIVE}.snap.question")
    assert {k: after[k] for k in ("id", "keys", "counts", "row")} == {k: before[k] for k in ("id", "keys", "counts",
                                                                                          "row")}
    for s in students:
        following(s, SENTENCE, 2)
        assert s.evaluate(f"{LIVE}.snap.question.mine") is not None  # their answer is still theirs
    assert bar(students[0]) == "Du folgst der Lehrkraft"
    shot(students[0], "phone_de_after_restart")
    teacher.click("#reveal")  # the question goes on: the reveal reaches everyone
    for s, said in zip(students, ("Das Modell schaut am meisten auf", "The model looks most at")):
        s.wait_for_function("(w) => document.querySelector('#class_bar .class-answer')?.textContent.startsWith(w)",
                            arg=said, timeout=20000)
    go(teacher, 3)
    for s in students:
        following(s, SENTENCE, 3)
    for p in (teacher, *students):
        assert p.errors == [], p.errors
        p.context.close()


def test_back_on_a_phone_after_exploring_keeps_the_class(app):
    url, b, _restart = app
    teacher = open_app(b, url, 1280, 800)
    start(teacher, SENTENCE)
    go(teacher, 2)
    class_start(teacher)
    student = phone(b, teacher.input_value("#class_link"))
    following(student, SENTENCE, 2)
    student.tap("#class_leave")  # explores on their own: another tab, another step
    student.tap(tab_button("Head atlas"))
    student.wait_for_function("document.querySelector('#tabs button[role=tab][aria-selected=true]')"
                              "?.dataset.tabId === 'atlas'", timeout=20000)
    student.go_back()
    student.go_back()  # Back to where they left the class: following again, on the class's view
    student.wait_for_function(f"{LIVE}?.following === true", timeout=20000)
    following(student, SENTENCE, 2)
    assert bar(student) == "Du folgst der Lehrkraft"
    go(teacher, 3)
    following(student, SENTENCE, 3)
    student.tap("#class_leave")
    student.tap(tab_button("Head atlas"))  # the address now names the student's own view, not the class
    student.wait_for_function("!new URLSearchParams(location.search).has('class')", timeout=20000)
    student.reload()  # a reload of a page that explored: still in the class (the tab keeps it)
    student.wait_for_function(f"{LIVE}?.snap && {LIVE}.role === 'student'", timeout=60000)
    following(student, SENTENCE, 3)
    assert student.errors == [] and teacher.errors == []
    student.context.close()
    teacher.context.close()

