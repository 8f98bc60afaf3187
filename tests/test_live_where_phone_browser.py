"""A where-question on a German phone (390x844, touch) with a long sentence: the map's cells are 16 px and its last
columns past the screen's edge, so the row's keys are buttons of 44 px in the class's bar (a line that scrolls
sideways), each one a finger's tap answers; the bars stay within a quarter of the screen and the map's row in sight.
Before, the keys were hidden on a phone and the student had to find a 16 px column, some of them off the screen."""
from __future__ import annotations

import pytest

from tests.browser import teach_class

pytestmark = pytest.mark.browser
LONG = "Ich weiß, dass er morgen nach Berlin fährt, weil seine Schwester dort wohnt und Geburtstag hat."
# each key button: [its words, width, height, whether a finger on its middle touches it]
KEYS = """() => [...document.querySelectorAll('#class_bar .class-keys button')].map(b => {
  b.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = b.getBoundingClientRect(), hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return [b.textContent, Math.round(r.width), Math.round(r.height), hit === b]; })"""
SEEN = """() => { const v = window.__lens.view(), c = document.querySelector('#attention [data-role=canvas]');
  const bar = document.querySelector('#class_bar').getBoundingClientRect();
  return {cover: innerHeight - bar.top, height: innerHeight, bar: bar.top, canvasRight: c.getBoundingClientRect().right,
          rowTop: c.getBoundingClientRect().top + v.row * v.cell.h,
          rowBottom: c.getBoundingClientRect().top + (v.row + 1) * v.cell.h, cell: v.cell.w}; }"""


def test_a_where_question_on_a_phone_is_answered_by_its_keys(served_browser):
    url, b = served_browser
    teacher, (phone,) = teach_class(b, url, LONG, 4, students=(((390, 844), "de"),))
    phone.wait_for_function("window.__lens.state.traj && window.__lens.state.t === 4 && "
                            "!document.getElementById('link_box')?.link.opening", timeout=90000)
    teacher.wait_for_function("document.querySelector('#class_count').textContent === '1 following'",
                              timeout=30000)
    teacher.click("#ask_where")
    phone.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
    phone.wait_for_function("window.__lens.state.conceal === 'where'", timeout=10000)
    phone.wait_for_timeout(500)  # the page brought to the map's row
    seen = phone.evaluate(SEEN)
    assert seen["cell"] < 44 and seen["canvasRight"] > 390, seen  # the map alone: small cells, some off the screen
    assert 0 <= seen["rowTop"] and seen["rowBottom"] <= seen["bar"], seen  # its row in sight above the bar
    assert seen["cover"] <= 0.25 * seen["height"], seen  # the class's bar and the step bar: a quarter at most
    keys = phone.evaluate(KEYS)
    want = phone.evaluate("document.getElementById('class_box').live.snap.question.keys.length")
    assert len(keys) == want > 12, keys
    assert [k for k in keys if k[1] < 44 or k[2] < 44 or not k[3]] == [], keys  # every one 44 px, under a finger
    assert phone.evaluate(SEEN)["cover"] <= 0.25 * seen["height"]  # the keys' line scrolled, the bar as it was

    phone.locator("#class_bar .class-keys button", has_text="Berlin").tap()  # scrolled into the line's view, tapped
    phone.wait_for_function("document.querySelector('#class_bar .class-answer')?.textContent === "
                            "'Deine Antwort: \u201eBerlin\u201c. Warte auf die Aufl\u00f6sung.'", timeout=20000)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('1 of 1 answered')",
                              timeout=20000)
    assert phone.evaluate("document.getElementById('class_box').live.following") is True  # still with the class
    assert phone.errors == [] and teacher.errors == [], (phone.errors, teacher.errors)
    phone.context.close()
    teacher.close()
