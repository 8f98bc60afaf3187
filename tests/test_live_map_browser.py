"""A live class on the map (issue 59 items 2 and 4): students answer "Where does this row look?" by tapping a key
of the highlighted row on their own map (a laptop and a phone), and the teacher's chart counts those taps; the
teacher's panel covers nothing of the map or of Inside this head at 1280x800 and at 390x844."""
from __future__ import annotations

import pytest

from tests.browser import open_app, start, tap_key, view

pytestmark = pytest.mark.browser
SENTENCE = "Ein Mann mit einem roten Hut sitzt auf einer Bank."

# the parts of the page the teacher's panel (or a student's bar) may lie over: [] when it covers none of them, each
# seen whole (scrolled to its top, middle and end in turn)
COVERED = """([over, parts]) => {
  const out = [], cover = document.querySelector(over);
  for (const sel of parts) {
    const el = document.querySelector(sel);
    if (!el || el.getBoundingClientRect().width === 0) { out.push(`${sel}: not shown`); continue; }
    for (const block of ["start", "center", "end"]) {
      el.scrollIntoView({block});
      const a = el.getBoundingClientRect(), b = cover.getBoundingClientRect();
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom, innerHeight) - Math.max(a.top, b.top, 0);
      if (w > 0 && h > 0) out.push(`${sel} (${block}): ${Math.round(w)} x ${Math.round(h)} px`);
    }
  }
  return out;
}"""
PARTS = ["#attention [data-role=big]", "#inside", "#start", "#step", "#run"]


def test_students_answer_where_on_their_map(served_browser):
    url, b = served_browser
    teacher = open_app(b, url, 1280, 800)
    start(teacher, SENTENCE)
    teacher.click("#class_start")
    teacher.wait_for_function("document.getElementById('class_box')?.live.code && "
                              "document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    assert teacher.evaluate(COVERED, ["#class_panel", PARTS]) == []  # the panel beside the page, not over it
    link = teacher.input_value("#class_link")
    students = []
    for w, h in ((1280, 800), (390, 844)):
        s = open_app(b, link, w, h)
        s.wait_for_function("document.getElementById('class_box')?.live.snap && window.__lens.state.traj && "
                            "!document.getElementById('link_box')?.link.opening",
                            timeout=30000)
        students.append(s)
    teacher.wait_for_function("document.querySelector('#class_count').textContent === '2 following'",
                              timeout=20000)
    teacher.click("#ask_where")
    teacher.wait_for_function("document.getElementById('class_box')?.live.snap.question !== null", timeout=20000)
    keys = teacher.evaluate("document.getElementById('class_box')?.live.snap.question.keys")
    assert len(keys) >= 3
    for s, j in zip(students, (1, 2)):
        s.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
        row = view(s)["row"]
        tap_key(s, j)
        s.wait_for_function(f"document.querySelector('#class_bar .class-answer') && document.querySelector("
                            f"'#class_bar .class-answer').textContent.includes({keys[j].lstrip(chr(0x2581))!r})",
                            timeout=20000)  # the key as a word
        assert view(s)["row"] == row  # the tap answered: it picked no other row
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('2 of 2 answered')",
                              timeout=20000)
    counts = teacher.evaluate("document.getElementById('class_box')?.live.snap.question.counts")
    assert counts == [int(i in (1, 2)) for i in range(len(keys))]
    teacher.click("#reveal")
    teacher.wait_for_selector("#class_answers .bar.model", timeout=20000)
    assert teacher.evaluate(COVERED, ["#class_panel", PARTS]) == []  # with its chart, still beside the page

    teacher.set_viewport_size({"width": 390, "height": 844})  # a teacher on a phone: the panel in the page's flow
    teacher.wait_for_timeout(300)
    assert teacher.evaluate(COVERED, ["#class_panel", PARTS]) == []
    for p in [teacher, *students]:
        assert p.errors == [], p.errors
