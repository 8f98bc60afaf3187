"""A lesson in Chromium (issue 39 item 3): a teacher collects three views with a note each into one link; a student
opening it in a fresh browser, on this app or on another copy of it (nothing is stored on the server), sees the
lesson bar ("View 1 of 3", the note, Back / Next) and each view restored exactly; hostile lesson links are ignored
with a message naming the bounds (assets/lesson.js, attention_lens/shell/lesson.py)."""
from __future__ import annotations

import base64
import json

import pytest

from tests.browser import SELECTED_TAB, go, open_app, open_link, pick, serve, start, view

pytestmark = pytest.mark.browser
NOTE = "Look how *kommt* goes back to *coming*"


def fresh(b, url):
    """`url` opened in a fresh browser context, once its lesson's first view (or its refusal) is shown."""
    return open_link(b, url, "document.getElementById('lesson')?.lesson && "
                             "!document.getElementById('lesson')?.lesson.busy")


def note(page) -> str:
    return page.evaluate("(() => { const n = document.querySelector('#link_note .link-note'); "
                         "return n && !n.hidden ? n.textContent : ''; })()")


def shown(page, i):
    page.wait_for_function(f"document.getElementById('lesson')?.lesson.shown === {i} && "
                           f"!document.getElementById('lesson')?.lesson.busy", timeout=120000)


def tab_shown(page) -> str:
    return page.evaluate(SELECTED_TAB)


def add(page, text):
    page.fill("#lesson_note", text)
    n = page.evaluate("document.getElementById('lesson')?.lesson.made.length")
    page.click("#lesson_add")
    page.wait_for_function(f"document.getElementById('lesson')?.lesson.made.length === {n + 1}", timeout=5000)


def translate_view(page):
    v = view(page)
    return {k: v[k] for k in ("kind", "layer", "head", "step", "z", "title")}


def beam_view(page):
    return page.evaluate("[document.getElementById('lesson')?.lesson?.tabs.beam.get(), "
                         "[...document.querySelectorAll('#attention_beam .lens-tok')]"
                         ".map(e => e.textContent)]")


def compare_view(page):
    v = page.evaluate("document.getElementById('compare')?.compare.view()")
    return {k: v[k] for k in ("t", "kind", "layer", "head", "a", "b")}


def test_a_three_view_lesson_restores_each_view_exactly_in_a_fresh_browser(served_browser, translator):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    start(page, "Er kommt morgen.")  # 1. the Translate view: cross-attention, layer 2, head 3, step 2
    pick(page, kind="cross", layer=1, head=2)
    go(page, 2)
    page.click("#lesson_open")
    add(page, NOTE)
    views = [translate_view(page)]
    page.get_by_role("tab", name="Beam search").click()  # 2. the beam's second hypothesis
    page.wait_for_selector("#beam_run", timeout=30000)
    page.click("#beam_run")
    page.wait_for_function("document.getElementById('lesson')?.lesson?.tabs.beam.get().hypothesis === 1", timeout=60000)
    page.click("#beam_choice input")
    page.click("#beam_choice li[role=option] >> nth=1")
    page.wait_for_function("document.getElementById('lesson')?.lesson?.tabs.beam.get().hypothesis === 2", timeout=30000)
    page.wait_for_timeout(1500)
    add(page, "The second hypothesis")
    views.append(beam_view(page))
    page.get_by_role("tab", name="Compare").click()  # 3. a minimal pair at step 2
    page.wait_for_selector("#compare_start", timeout=30000)
    page.click("#compare_start")
    page.wait_for_function("document.getElementById('compare')?.compare.renders > 0 && "
                           "document.getElementById('compare')?.compare.state.a", timeout=60000)
    page.click("#compare [data-kind=decoder_self]")
    page.eval_on_selector("#compare [data-role=scrub]",
                          "e => { e.value = '2'; e.dispatchEvent(new Event('input', {bubbles: true})); }")
    add(page, "Word order")
    views.append(compare_view(page))
    assert page.inner_text("#lesson .lesson-make [data-role=count]") == "3 views of at most 8"
    page.click("#copy_lesson")
    page.wait_for_function("document.getElementById('lesson')?.lesson.last !== null", timeout=5000)
    link = page.evaluate("document.getElementById('lesson')?.lesson.last")
    assert page.evaluate("navigator.clipboard.readText()") == link and "Lesson link copied" in note(page)
    assert link.startswith(url.rstrip("/") + "/?lesson=") and len(link) < 12000

    student = fresh(b, link)
    shown(student, 0)
    assert student.is_visible("#lesson_bar") and not student.is_visible("#lesson_note")
    bar = student.inner_text("#lesson_bar")
    assert "View 1 of 3" in bar and "Look how kommt goes back to coming" in bar
    assert student.eval_on_selector_all("#lesson_bar em", "es => es.map(e => e.textContent)") == ["kommt", "coming"]
    assert student.is_disabled("#lesson_back") and not student.is_disabled("#lesson_next")
    assert tab_shown(student) == "Translate" and translate_view(student) == views[0]
    student.click("#lesson_next")
    shown(student, 1)
    assert "View 2 of 3" in student.inner_text("#lesson_bar") and "The second hypothesis" in student.inner_text(
        "#lesson_bar")
    assert tab_shown(student) == "Beam search" and beam_view(student) == views[1]
    student.click("#lesson_next")
    shown(student, 2)
    assert "View 3 of 3" in student.inner_text("#lesson_bar") and student.is_disabled("#lesson_next")
    assert tab_shown(student) == "Compare" and compare_view(student) == views[2]
    student.click("#lesson_back")
    shown(student, 1)
    assert tab_shown(student) == "Beam search" and beam_view(student) == views[1]
    assert note(student) == "" and student.errors == [] and page.errors == []
    student.context.close()
    with serve(translator) as url2:  # another copy of the app (or the same after a restart): the link holds it all
        again = fresh(b, url2 + link[link.index("?"):])
        shown(again, 0)
        assert "View 1 of 3" in again.inner_text("#lesson_bar") and translate_view(again) == views[0]
        assert again.errors == []
        again.context.close()


def lesson_param(views) -> str:
    return base64.urlsafe_b64encode(json.dumps(views).encode()).decode().rstrip("=")


ONE = ["model=de-en&text=Ich+liebe+dich.", "a note"]
HOSTILE = [  # (the lesson parameter, what the message says)
    ("%3Cimg%20src=x%20onerror=alert(1)%3E", "it is not base64url"),
    (lesson_param([ONE] * 9), "it holds 9 views"),
    (lesson_param([]), "it holds 0 views"),
    (lesson_param([[ONE[0], "x" * 141]]), "the note of view 1 is 141 characters long"),
    (lesson_param([ONE, 7]), "view 2 is not a [query, note] pair"),
    (lesson_param([["lesson=" + lesson_param([ONE]), "nested"]]), "view 1 holds a lesson"),
    (lesson_param({"views": [ONE]}), "it holds no list of views"),
    ("A" * 12001, "it is 12001 characters long"),
    ("e30", "it holds no list of views"),  # {}
    ("_w", "it does not decode to a lesson"),  # not UTF-8
]


@pytest.mark.parametrize("param, said", HOSTILE, ids=[h[1][:30].replace(" ", "_") for h in HOSTILE])
def test_hostile_lesson_links_are_ignored_with_a_message(served_browser, param, said):
    url, b = served_browser
    page = fresh(b, f"{url}?lesson={param}")
    line = note(page)
    assert line.startswith(f"This lesson link was ignored: {said} (a lesson holds 1 to 8 views"), line
    assert "a note of at most 140 characters" in line
    assert not page.is_visible("#lesson_bar") and page.dialogs == []
    assert page.locator("#link_note img").count() == 0
    start(page, "Ein Hund rennt.")  # the page works as usual
    assert page.errors == [] and page.dialogs == []
    page.context.close()


def test_a_lesson_holds_at_most_eight_views(served_browser):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    start(page, "Er kommt.")  # a lesson's view shows a started sentence (issue 58 item 10)
    page.click("#lesson_open")
    page.click("#copy_lesson")
    assert "Add at least one view" in note(page)
    for i in range(8):
        add(page, f"view {i + 1}")
    page.click("#lesson_add")
    assert "A lesson holds at most 8 views" in note(page)
    assert page.evaluate("document.getElementById('lesson')?.lesson.made.length") == 8
    page.click("#lesson .lesson-make [data-role=drop]")
    assert page.inner_text("#lesson .lesson-make [data-role=count]") == "7 views of at most 8"
    assert page.errors == []


BAD_VIEWS = [("-3", "-3"), ("99999", "99999"), ("abc", "abc"), ("4", "4")]


@pytest.mark.parametrize("asked, named", BAD_VIEWS, ids=[b[0] for b in BAD_VIEWS])
def test_a_lesson_link_with_a_view_it_does_not_have_says_so_in_the_bar(served_browser, asked, named):
    """`view=` names a view the lesson does not hold (a typo, a cut link): the lesson opens at its first view and the
    bar says which view was asked for; Next takes the message away, and a good view= says nothing."""
    url, b = served_browser
    two = lesson_param([ONE, ["model=de-en&text=Ein+Hund+rennt.", "second"]])
    page = fresh(b, f"{url}?lesson={two}&view={asked}")
    shown(page, 0)
    bar = page.inner_text("#lesson_bar")
    assert "View 1 of 2" in bar and f"This lesson has no view {named}; it opens at view 1 (its views: 1 to 2)." in bar
    page.click("#lesson_next")
    shown(page, 1)
    assert "has no view" not in page.inner_text("#lesson_bar")
    assert page.errors == []
    page.context.close()
    good = fresh(b, f"{url}?lesson={two}&view=2&lang=de")
    shown(good, 1)
    assert "keine Ansicht" not in good.inner_text("#lesson_bar") and "Ansicht 2 von 2" in good.inner_text("#lesson_bar")
    good.context.close()
    german = fresh(b, f"{url}?lesson={two}&view={asked}&lang=de")
    shown(german, 0)
    assert f"Diese Stunde hat keine Ansicht {named}; sie beginnt bei Ansicht 1 (ihre Ansichten: 1 bis 2)." in (
        german.inner_text("#lesson_bar"))
    german.context.close()
