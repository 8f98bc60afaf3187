"""A live class's questions in Chromium, fair and in words: "What comes next?" names the words written so far and its
choices follow them; while a question is open a student's page hides what gives its answer away (the model's next
piece in the map's row, its status line and Inside this head; the highlighted row's weights on the map, in the grid,
in a hover and in Inside this head); the reveal's line goes when the teacher moves on; no piece mark (▁, <s>) in a
question or an answer, in English and German; on a German phone (390x844) the class's bar and the step bar cover at
most 25 % of the screen, the answers chart at most 40 %, and a where-question brings the map's row into sight."""
from __future__ import annotations

import re

import pytest

from tests.browser import go, open_app, pick, start, tap_key, view

pytestmark = pytest.mark.browser
SENTENCE = "Meine kleine Schwester sah gestern einen Hund."  # My little sister saw a dog yesterday.
MARKS = ("\u2581", "<s>", "</s>")
BG = [243, 244, 246]  # a cell not revealed yet (assets/lens_draw.js BG)

# the screen the class's bar covers from its top to the screen's bottom (the step bar of a phone under it), and
# the highlighted row of the big map
COVER = """() => { const bar = document.querySelector('#class_bar').getBoundingClientRect();
  const chart = document.querySelector('#class_bar .class-chart-wrap');
  return {cover: innerHeight - bar.top, height: innerHeight, chart: chart ? chart.getBoundingClientRect().height : 0,
          step: document.querySelector('#step').getBoundingClientRect().top, bar: [bar.top, bar.bottom]}; }"""
ROW = """() => { const v = window.__lens.view(), c = document.querySelector('#attention [data-role=canvas]');
  const r = c.getBoundingClientRect(), bar = document.querySelector('#class_bar').getBoundingClientRect();
  return {top: r.top + v.row * v.cell.h, bottom: r.top + (v.row + 1) * v.cell.h, bar: bar.top, left: r.left,
          right: r.right}; }"""
# the colours painted in the middle of each cell of the big map's row r (the canvas's own pixels)
CELLS = """(r) => { const v = window.__lens.view(), c = document.querySelector('#attention [data-role=canvas]');
  const k = c.width / parseFloat(c.style.width), g = c.getContext('2d'), out = [];
  for (let j = 0; j < v.x.length; j++) {
    const d = g.getImageData(Math.floor((j + 0.5) * v.cell.w * k), Math.floor((r + 0.5) * v.cell.h * k), 1, 1).data;
    out.push([d[0], d[1], d[2]]); }
  return out; }"""


def question(page) -> str:
    return page.inner_text("#class_bar .class-q")


def answer_line(page) -> str:
    return page.inner_text("#class_bar .class-answer")


def no_marks(text: str):
    assert not any(m in text for m in MARKS), text


@pytest.fixture(scope="module")
def lesson(served_browser):
    """A class at step 3 of SENTENCE: (the teacher at 1280x800, a German phone at 390x844 with touch, an English
    laptop at 1280x800), both students following."""
    url, b = served_browser
    teacher = open_app(b, url, 1280, 800)
    start(teacher, SENTENCE)
    go(teacher, 3)
    teacher.click("#class_start")
    teacher.wait_for_function("document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    link = teacher.input_value("#class_link")
    pages = []
    for (w, h), lang in (((390, 844), "de"), ((1280, 800), "en")):
        p = b.new_context(viewport={"width": w, "height": h}, is_mobile=w < 600, has_touch=w < 600,
                          locale="de-DE" if lang == "de" else "en-US").new_page()
        p.errors = []
        p.on("pageerror", lambda e, p=p: p.errors.append(str(e)))
        p.goto(f"{link}&lang={lang}", timeout=90000)
        p.wait_for_function("document.getElementById('class_box')?.live?.snap && window.__lens.state.traj && "
                            "window.__lens.state.t === 3 && !document.getElementById('link_box')?.link.opening",
                            timeout=90000)
        pages.append(p)
    teacher.wait_for_function("document.querySelector('#class_count').textContent === '2 following'",
                              timeout=20000)
    yield teacher, *pages
    for p in (teacher, *pages):
        assert p.errors == [], p.errors
    for p in pages:
        p.context.close()
    teacher.close()


def test_what_comes_next_names_the_words_written_and_hides_the_next_piece(lesson):
    teacher, phone, desk = lesson
    written = teacher.evaluate("window.__lens.state.traj.pieces.slice(0, 4)")
    assert written == ["<s>", "\u2581My", "\u2581little", "\u2581sister"]  # step 3: the model has read these
    topk = teacher.evaluate("(() => { const d = window.__lens.state.traj, K = d.topk.k; "
                            "return [...Array(K).keys()].map(r => d.vocab[d.topk.ids[3 * K + r]]); })()")
    assert topk[0] == "\u2581saw"
    teacher.click("#ask_next")
    for p in (phone, desk):
        p.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
    assert question(desk).startswith("What comes after \u201cMy little sister\u201d? Pick a piece.")
    assert question(phone).startswith("Was kommt nach \u201eMy little sister\u201c? W\u00e4hle ein Wortst\u00fcck.")
    for p in (phone, desk):  # its choices: the pieces that may follow "sister", as words
        assert p.evaluate("document.getElementById('class_box').live.snap.question.keys") == topk
        choices = p.eval_on_selector_all("#class_bar .class-q button[data-choice]", "bs => bs.map(b => b.textContent)")
        assert choices[0] == "saw" and len(choices) == len(topk), choices
        for c in choices:
            no_marks(c)
        no_marks(question(p))
    # what gives the answer away, hidden: the top-k list, "next: saw" in the status line, "sister → saw" as the row's
    # name on the map and in Inside this head
    for p in (phone, desk):
        assert not p.is_visible("#topk .topk-list")
        assert "saw" not in p.inner_text("#attention [data-role=status]")
        assert "saw" not in view(p)["y"][3] and view(p)["y"][3].endswith("\u2192 ?"), view(p)["y"]
    assert "saw" not in desk.inner_text("#inside [data-role=qlabel]")
    seen = phone.evaluate(COVER)  # the phone: the class's bar (its question and choices) and the step bar
    assert seen["cover"] <= 0.25 * seen["height"], seen
    assert seen["bar"][1] <= seen["step"], seen  # above the step bar, not over it

    desk.click("#class_bar .class-q button[data-choice='0']")
    desk.wait_for_function("document.querySelector('#class_bar .class-answer')?.textContent === "
                           "'Your answer: \u201csaw\u201d. Wait for the reveal.'", timeout=20000)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('1 of 2 answered')",
                              timeout=20000)
    no_marks(teacher.inner_text("#class_answers"))
    teacher.click("#reveal")
    for p, said in ((desk, "The model's most likely next piece: \u201csaw\u201d ("),
                    (phone, "Das wahrscheinlichste n\u00e4chste Wortst\u00fcck des Modells: \u201esaw\u201c (")):
        p.wait_for_function("(s) => document.querySelector('#class_bar .class-answer')?.textContent.startsWith(s)",
                            arg=said, timeout=20000)
        no_marks(answer_line(p))
        p.wait_for_function("window.__lens.view().y[3].endsWith('saw')", timeout=10000)  # shown again
    assert "You picked \u201csaw\u201d." in answer_line(desk)
    desk.click("#class_bar .class-chart-toggle")
    desk.wait_for_selector("#class_bar .class-chart", timeout=5000)
    no_marks(desk.inner_text("#class_bar .class-chart"))

    go(teacher, 4)  # the teacher moves on: the reveal's line goes on every page
    for p in (phone, desk):
        p.wait_for_function("window.__lens.state.t === 4 && !document.querySelector('#class_bar .class-q')",
                            timeout=20000)
    assert teacher.inner_text("#class_answers") == "" and not teacher.is_visible("#reveal")


def test_a_where_question_hides_the_rows_weights_until_the_reveal(lesson):
    teacher, phone, desk = lesson
    teacher.click("#ask_where")
    for p in (phone, desk):
        p.wait_for_selector("#class_bar .class-q button[data-choice]", state="attached", timeout=20000)
        p.wait_for_function("window.__lens.state.conceal === 'where'", timeout=10000)
    row = view(desk)["row"]
    assert row == 4
    said = question(desk)
    assert said.startswith("Where does the row \u201csaw \u2192 a\u201d look most?"), said
    assert question(phone).startswith("Wohin schaut die Zeile \u201esaw \u2192 a\u201c am meisten?")
    for p in (phone, desk):
        no_marks(question(p))
        cells = p.evaluate(CELLS, row)
        assert cells and all(c == BG for c in cells), cells  # the row not painted
        assert any(c != BG for c in p.evaluate(CELLS, 0))  # the rows above it are
        assert not re.search(r"\d[.,]\d", p.inner_text("#attention [data-role=said]"))  # nor read aloud
        assert p.inner_text("#attention [data-role=zmax]") == "?"
    # Inside this head: no table, no notes of the row
    assert not desk.is_visible("#inside [data-role=rows]") and not desk.is_visible("#inside [data-role=outnote]")
    assert "after the reveal" in desk.inner_text("#inside [data-role=msg]")
    v = view(desk)  # a hover over the row's strongest key says no number
    box = desk.locator("#attention [data-role=canvas]").bounding_box()
    best = max(range(len(v["x"])), key=lambda j: v["z"][row][j])
    desk.mouse.move(box["x"] + (best + 0.5) * v["cell"]["w"], box["y"] + (row + 0.5) * v["cell"]["h"])
    desk.wait_for_selector("#attention [data-role=tip]", state="visible", timeout=5000)
    tip = desk.inner_text("#attention [data-role=tip]")
    assert "hidden until your teacher reveals" in tip and not re.search(r"\d\.\d", tip), tip
    # the phone: the map's highlighted row in sight above the class's bar, with no scrolling by the student; the bars
    # at most a quarter of the screen
    seen = phone.evaluate(ROW)
    assert 0 <= seen["top"] and seen["bottom"] <= seen["bar"], seen
    cover = phone.evaluate(COVER)
    assert cover["cover"] <= 0.25 * cover["height"], cover

    tap_key(phone, 0)
    tap_key(desk, best)
    teacher.wait_for_function("document.querySelector('#class_answers').textContent.includes('2 of 2 answered')",
                              timeout=20000)
    teacher.click("#reveal")
    for p, said in ((desk, "The model looks most at \u201c"), (phone, "Das Modell schaut am meisten auf \u201e")):
        p.wait_for_function("(s) => document.querySelector('#class_bar .class-answer')?.textContent.startsWith(s)",
                            arg=said, timeout=20000)
        no_marks(answer_line(p))
        p.wait_for_function("window.__lens.state.conceal === null", timeout=10000)
        assert any(c != BG for c in p.evaluate(CELLS, row))  # the row's weights shown again
    desk.wait_for_selector("#inside [data-role=rows]", state="visible", timeout=10000)
    phone.tap("#class_bar .class-chart-toggle")  # the answers chart: at most 40 % of the phone's screen
    phone.wait_for_selector("#class_bar .class-chart-wrap .class-chart", state="visible", timeout=5000)
    cover = phone.evaluate(COVER)
    assert cover["chart"] > 0 and cover["cover"] <= 0.40 * cover["height"], cover
    no_marks(phone.inner_text("#class_bar .class-chart-wrap"))

    pick(teacher, head=1 if view(teacher)["head"] != 1 else 2)  # the teacher moves on: the line goes
    for p in (phone, desk):
        p.wait_for_function("!document.querySelector('#class_bar .class-q')", timeout=20000)


def test_a_tap_that_leaves_the_teachers_view_asks_first(lesson):
    """The phone's head grid switched the head at a tap while the bar still said "following"; now the tap is held
    and the bar asks: Stay keeps the teacher's view, Explore on my own does the tap and stops following."""
    teacher, phone, _desk = lesson
    want = phone.evaluate("[window.__lens.state.layer, window.__lens.state.head]")
    assert want == [teacher.evaluate("window.__lens.state.layer"), teacher.evaluate("window.__lens.state.head")]
    other = [1, 3 if want[1] != 3 else 2]

    def tap_grid():
        phone.locator("#attention [data-role=grid-canvas]").scroll_into_view_if_needed()
        pt = phone.evaluate(f"window.__lens.panelPoint({other[0]}, {other[1]})")
        phone.touchscreen.tap(pt["x"], pt["y"])
        phone.wait_for_selector("#class_bar .class-leave-ask", state="visible", timeout=5000)

    tap_grid()
    said = phone.inner_text("#class_bar .class-leave-ask")
    assert said.startswith("Damit verl\u00e4sst du die Ansicht deiner Lehrkraft."), said
    assert phone.evaluate("[window.__lens.state.layer, window.__lens.state.head]") == want  # held, not done
    assert phone.evaluate("document.getElementById('class_box').live.following") is True
    phone.tap("#class_bar .class-leave-ask button:nth-of-type(2)")  # Stay with the teacher
    phone.wait_for_selector("#class_bar .class-leave-ask", state="hidden", timeout=5000)
    assert phone.evaluate("[window.__lens.state.layer, window.__lens.state.head]") == want
    assert phone.inner_text("#class_bar [data-role=state]") == "Du folgst der Lehrkraft"

    tap_grid()
    phone.tap("#class_bar .class-leave-ask button:nth-of-type(1)")  # Explore on my own: the tap is done now
    phone.wait_for_function(f"window.__lens.state.layer === {other[0]} && window.__lens.state.head === {other[1]}",
                            timeout=5000)
    assert phone.evaluate("document.getElementById('class_box').live.following") is False
    assert phone.inner_text("#class_bar [data-role=state]").startswith("Die Klasse ist bei Schritt")
    phone.tap("#class_rejoin")  # and back with the class
    phone.wait_for_function(f"window.__lens.state.layer === {want[0]} && window.__lens.state.head === {want[1]}",
                            timeout=20000)
