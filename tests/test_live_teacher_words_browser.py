"""What the teacher of a live class reads on her German page (1280x800): the count of her students in singular and
plural ("1 folgt", "2 folgen": it said "1 folgen"), the answers' count likewise, and, after her own End class, her own
confirmation and nothing else (her stream's last snapshot, "ended", raced her End class's answer: she read "Deine
Live-Stunde ist beendet.", the words for a class ended elsewhere)."""
from __future__ import annotations

import pytest

from tests.browser import open_app, start

pytestmark = pytest.mark.browser
SENTENCE = "Ich liebe dich."
COUNT = "document.querySelector('#class_count').textContent"


def student(b, link):
    p = b.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                      locale="de-DE").new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.goto(f"{link}&lang=de", timeout=90000)
    p.wait_for_function("document.getElementById('class_box')?.live?.snap", timeout=60000)
    return p


def test_the_teachers_counts_and_her_own_end_class(served_browser):
    url, b = served_browser
    teacher = open_app(b, f"{url}?lang=de", 1280, 800)
    start(teacher, SENTENCE)
    teacher.click("#class_start")
    teacher.wait_for_function("document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    link = teacher.input_value("#class_link")
    first = student(b, link)
    teacher.wait_for_function(f"{COUNT} === '1 folgt'", timeout=30000)
    second = student(b, link)
    teacher.wait_for_function(f"{COUNT} === '2 folgen'", timeout=30000)

    teacher.click("#ask_next")
    first.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
    first.click("#class_bar .class-q button[data-choice='0']")
    teacher.wait_for_function("document.querySelector('#class_answers').textContent"
                              ".includes('1 von 2 hat geantwortet')", timeout=20000)

    # everything the page says in its note from now on (assets/link.js say, which assets/live.js speaks through)
    teacher.evaluate("(() => { const L = document.getElementById('link_box').link, say = L.say; window.__said = [];"
                     " L.say = (t, ...r) => { window.__said.push(t); return say(t, ...r); }; })()")
    teacher.click("#class_close")
    teacher.wait_for_function("document.getElementById('class_box').live.role === null", timeout=20000)
    for p in (first, second):  # the students read that it ended, the teacher that she ended it
        p.wait_for_function("document.querySelector('#class_bar [data-role=state]').textContent === "
                            "'Die Stunde ist beendet; diese Ansicht bleibt dir.'", timeout=20000)
    teacher.wait_for_timeout(1500)  # whatever else comes (the End's answer, the stream's end)
    assert teacher.evaluate("window.__said") == [
        "Du hast die Live-Stunde beendet. Deine Klasse behält die Ansicht, die sie gerade hat."]
    for p in (teacher, first, second):
        assert p.errors == [], p.errors
    for p in (first, second):
        p.context.close()
    teacher.close()
