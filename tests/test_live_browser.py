"""A live class in Chromium (issue 59): a teacher page and three students (one a phone, 390x844) follow the
teacher's step, head and tab; a student explores on their own and rejoins; a where-question answered by the three
shows three answers in the teacher's chart and the reveal on every student; a forged change is refused; a second
class never sees the first's view; a wrong code is said."""
from __future__ import annotations

import pytest

from tests.browser import go, open_app, pick, start, step_no, tab_button, tap_key, teach_class

pytestmark = pytest.mark.browser
SENTENCE = "Ich liebe dich."
OTHER = "Der Hund beißt den Mann."
LONG = "Ich weiß, dass er morgen nach Berlin fährt."  # a map as tall as a phone's screen is wide


def shown(page) -> dict:
    return page.evaluate("(() => { const st = window.__lens.state, b = document.querySelector("
                         "'#tabs button[role=tab][aria-selected=true]'); return {text: "
                         "document.getElementById('source_hint')?.sentence ?"
                         " document.getElementById('source_hint')?.sentence.started : null, step: st.t, kind: "
                         "st.kind, layer: st.layer,"
                         " head: st.head, tab: b ? b.dataset.tabId : null}; })()")


def follows(student, teacher, timeout=30000):
    """Waits until the student's page shows the teacher's view (sentence, step, kind, layer, head, tab)."""
    want = shown(teacher)
    try:
        student.wait_for_function(
            "(w) => { const st = window.__lens && window.__lens.state, b = document.querySelector("
            "'#tabs button[role=tab][aria-selected=true]'); return st && "
            "document.getElementById('source_hint')?.sentence && "
            "document.getElementById('source_hint')?.sentence.started"
            " === w.text && st.t === w.step && st.kind === w.kind && st.layer === w.layer && st.head === w.head"
            " && b && b.dataset.tabId === w.tab && !document.getElementById('link_box')?.link.opening; }",
            arg=want, timeout=timeout)
    except Exception as e:
        raise AssertionError(f"the student shows {shown(student)}, the teacher {want}") from e


def bar(page) -> str:
    return page.inner_text("#class_bar [data-role=state]")


def serious(page) -> list[tuple[str, str]]:
    """axe-core's critical and serious violations in the class's box (the panel, the bar)."""
    from axe_playwright_python.sync_playwright import Axe
    found = Axe().run(page, context="#class_box").response["violations"]
    return [(v["id"], n["html"][:160]) for v in found if v["impact"] in ("critical", "serious") for n in v["nodes"]]


def student_page(b, url, width=1280, height=800):
    page = open_app(b, url, width, height)
    page.wait_for_function("document.getElementById('class_box')?.live && "
                           "(document.getElementById('class_box')?.live.snap !== null || "
                           "document.getElementById('class_box')?.live.ended)", timeout=30000)
    return page


def test_a_class_follows_its_teacher(served_browser):
    url, b = served_browser
    teacher = open_app(b, url, 1280, 800)
    start(teacher, SENTENCE)
    teacher.click("#class_start")
    teacher.wait_for_function("document.getElementById('class_box')?.live.code && "
                              "document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    link = teacher.input_value("#class_link")
    assert "?class=" in link and teacher.evaluate("document.getElementById('class_box')?.live.token") not in link
    token = teacher.evaluate("document.getElementById('class_box')?.live.token")
    assert token in teacher.input_value("#class_teacher_link")

    students = [student_page(b, link), student_page(b, link, 390, 844), student_page(b, link)]
    for s in students:
        follows(s, teacher)
        assert bar(s) == "Following the teacher" and s.is_visible("#class_leave")
    phone = students[1]  # its bar above the phone's fixed Back / Step / Run; no Teach live of its own
    box, step = phone.locator("#class_bar").bounding_box(), phone.locator("#step").bounding_box()
    assert box["y"] + box["height"] <= step["y"] and box["height"] > 0
    assert not any(s.is_visible("#class_start") for s in students)
    teacher.wait_for_function("document.querySelector('#class_count').textContent === '3 following'",
                              timeout=20000)

    go(teacher, 2)  # a step
    for s in students:
        follows(s, teacher)
    pick(teacher, kind="cross", layer=1, head=2)  # a head
    for s in students:
        follows(s, teacher)
    assert step_no(students[1]) == 2 and shown(students[1])["head"] == 2

    teacher.click(tab_button("Head atlas"))  # a tab
    for s in students:
        follows(s, teacher)
    teacher.click(tab_button("Translate"))
    for s in students:
        follows(s, teacher)

    away = students[0]  # explores on their own: the class goes on without them
    away.click("#class_leave")
    assert away.is_visible("#class_rejoin") and not away.is_visible("#class_leave")
    go(teacher, 3)
    for s in students[1:]:
        follows(s, teacher)
    away.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent"
                           " === 'The class is at step 3'", timeout=20000)
    assert step_no(away) == 2
    away.click("#class_rejoin")
    follows(away, teacher)
    assert bar(away) == "Following the teacher"

    teacher.click("#ask_where")  # a where-question: each student taps a key on their own map
    for i, s in enumerate(students):
        s.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
        tap_key(s, i % 2)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('3 of 3 answered')",
                              timeout=20000)
    counts = teacher.evaluate("document.getElementById('class_box')?.live.snap.question.counts")
    assert sum(counts) == 3 and counts[0] == 2 and counts[1] == 1
    keys = teacher.evaluate("document.getElementById('class_box')?.live.snap.question.keys")
    assert keys == teacher.evaluate("window.__lens.view().x")  # the keys of the row shown
    teacher.click("#reveal")
    for s in students:
        s.wait_for_function("document.querySelector('#class_bar .class-answer') && document.querySelector("
                            "'#class_bar .class-answer').textContent.startsWith('The model looks most at')",
                            timeout=20000)
    teacher.wait_for_selector("#class_answers .bar.model", timeout=20000)
    students[0].click("#class_bar .class-hide")  # a student hides the revealed question: the bar is one line again
    assert students[0].locator("#class_bar .class-q").count() == 0 and bar(students[0]) == "Following the teacher"
    for p in (teacher, students[1]):  # the teacher's panel with its chart, the phone's bar with the reveal
        assert serious(p) == []

    teacher.click("#ask_next")  # what comes next: the students' top-k list hidden until the reveal
    looks = students[0]
    looks.wait_for_function("document.body.classList.contains('class-hide-next')", timeout=20000)
    assert not looks.is_visible("#topk .topk-list")
    assert looks.inner_text("#class_bar .class-q span").startswith("What comes after")
    looks.click("#class_bar .class-q button[data-choice='0']")
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('1 of 3 answered')",
                              timeout=20000)
    teacher.click("#reveal")
    looks.wait_for_function("!document.body.classList.contains('class-hide-next')", timeout=20000)
    assert looks.is_visible("#topk .topk-list")

    forger = students[2]  # a student's page sending a change without the teacher's token is refused
    before = shown(students[1])
    forger.evaluate("document.getElementById('class_box').live.role = 'teacher'; "
                    "document.getElementById('class_box').live.token = 'forged'; "
                    "document.getElementById('class_box').live.sent = null;"
                    " document.getElementById('class_box')?.live.check()")
    forger.wait_for_function("document.getElementById('class_box')?.live.lastError !== null", timeout=20000)
    assert forger.evaluate("document.getElementById('class_box')?.live.lastError") == \
        "Only the teacher's link can change this class."
    assert shown(students[1]) == before
    forger.close()

    second = open_app(b, url, 1280, 800)  # a second class never sees the first's view
    start(second, OTHER)
    second.click("#class_start")
    second.wait_for_function("document.getElementById('class_box')?.live.code && "
                             "document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    code = "document.getElementById('class_box')?.live.code"
    assert second.evaluate(code) != teacher.evaluate(code)
    other = student_page(b, second.input_value("#class_link"))
    follows(other, second)
    go(teacher, 1)
    follows(students[1], teacher)
    assert shown(other)["text"] == OTHER and shown(students[1])["text"] == SENTENCE
    assert other.evaluate("document.getElementById('class_box')?.live.snap.view").count("Hund") == 1

    again = open_app(b, teacher.input_value("#class_teacher_link"), 1280, 800)  # the teacher's link, reopened:
    again.wait_for_function("document.getElementById('class_box')?.live.role === 'teacher' && "
                            "document.getElementById('class_box')?.live.sent !== null", timeout=60000)
    follows(again, teacher)  # the class's view first, not the page's default
    go(again, 3)  # then its changes lead the class
    follows(students[1], again)
    again.close()

    wrong = student_page(b, url + "?class=" + "A" * 16)  # a wrong code: said, no view
    wrong.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent.length > 0",
                            timeout=20000)
    assert bar(wrong) == "This class code is wrong, or the class has ended."

    teacher.click("#class_close")  # the class ends: students keep their view, with a note
    for s in students[:2]:
        s.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent"
                            " === 'The class has ended; you keep this view.'", timeout=20000)
    assert shown(students[1])["text"] == SENTENCE
    for p in [teacher, *students[:2], second, other, wrong]:
        assert p.errors == [], p.errors


@pytest.fixture(scope="module")
def revealed(served_browser):
    """A class whose where-question is revealed: (teacher, a student's German phone at 390x844 with touch, a
    student's English page at 1280x800), each student having tapped a key of their map."""
    url, b = served_browser
    teacher, pages = teach_class(b, url, LONG, 5)
    for p in pages:
        follows(p, teacher)
    teacher.click("#ask_where")
    for p in pages:
        p.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
        tap_key(p, 0)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('2 of 2 answered')",
                              timeout=20000)
    teacher.click("#reveal")
    for p, said in zip(pages, ("Das Modell schaut am meisten auf", "The model looks most at")):
        p.wait_for_function("(s) => document.querySelector('#class_bar .class-answer')?.textContent.startsWith(s)",
                            arg=said, timeout=20000)
    yield teacher, *pages
    for p in (teacher, *pages):
        assert p.errors == [], p.errors
        p.context.close()


# the big map, brought to the screen's top as a student scrolls to it, and the class's bar
MAP_AND_BAR = """() => { document.querySelector('#attention [data-role=big]').scrollIntoView({block: 'start'});
  const r = (s) => { const e = document.querySelector(s); if (!e || !e.checkVisibility()) return null;
                     const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, height: b.height}; };
  return {map: r('#attention [data-role=big]'), bar: r('#class_bar'), chart: r('#class_bar .class-chart-wrap'),
          height: innerHeight}; }"""


def test_a_revealed_answer_leaves_the_phones_map_in_sight(revealed):
    """Last session's phone: after Reveal the student's bar held the question, the answer and the whole chart, ~40 %
    of the screen over the map until the student closed it. Now the answer is one line in words (with the
    student's own pick) and the chart opens on demand: the whole map and the answer are on the screen together."""
    _teacher, phone, desk = revealed
    seen = phone.evaluate(MAP_AND_BAR)
    assert seen["chart"] is None and seen["bar"]["height"] <= 0.2 * seen["height"], seen
    assert seen["map"]["height"] > 150 and seen["map"]["bottom"] <= seen["bar"]["top"], seen  # nothing of it covered
    said = phone.inner_text("#class_bar .class-answer")
    key = phone.evaluate("document.getElementById('class_box').live.snap.question.keys[0]").lstrip("\u2581")  # a word
    assert said.startswith("Das Modell schaut am meisten auf „") and f"Deine Wahl: „{key}“." in said, said
    toggle = "#class_bar .class-chart-toggle"
    assert phone.get_attribute(toggle, "aria-expanded") == "false"
    phone.tap(toggle)  # the chart on demand, and closed again
    phone.wait_for_selector("#class_bar .class-chart-wrap .class-chart", state="visible", timeout=5000)
    assert phone.get_attribute(toggle, "aria-expanded") == "true" and phone.inner_text(toggle).startswith("Antworten")
    assert serious(phone) == []
    phone.tap(toggle)
    phone.wait_for_selector("#class_bar .class-chart-wrap", state="detached", timeout=5000)
    assert desk.inner_text("#class_bar .class-answer").startswith("The model looks most at")  # the same at 1280
    assert desk.locator("#class_bar .class-chart-wrap").count() == 0 and desk.is_visible(toggle)


OVERLAP = """() => { const r = (s) => document.querySelector(s).getBoundingClientRect();
  const note = r('#link_note .link-note'), bar = r('#class_bar');
  return {note: [note.top, note.bottom], bar: [bar.top, bar.bottom],
          apart: note.bottom <= bar.top + 0.5 || bar.bottom <= note.top + 0.5}; }"""


def test_the_copied_links_line_and_the_class_bar_never_overlap(revealed):
    """Both sat at the screen's bottom (on a phone above Back / Step): "Link copied" lay over the class's bar, its
    answer and its buttons, for 10 to 20 s. Now the line stands above the bar, however tall the bar grows."""
    _teacher, phone, desk = revealed
    for p, press in ((phone, phone.tap), (desk, desk.click)):
        p.evaluate("window.scrollTo(0, 0)")
        press("#copy_link")
        p.wait_for_selector("#link_note .link-note", state="visible", timeout=10000)
        seen = p.evaluate(OVERLAP)
        assert seen["apart"], seen
        press("#class_bar .class-chart-toggle")  # the bar grows by its chart: the line moves up with it
        p.wait_for_selector("#class_bar .class-chart-wrap", state="visible", timeout=5000)
        p.wait_for_function(f"({OVERLAP})().apart", timeout=5000)
        assert p.is_visible("#link_note [data-role=close]")
        press("#link_note [data-role=close]")
        press("#class_bar .class-chart-toggle")
