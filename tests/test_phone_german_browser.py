"""A student's phone on the German page (issue 58 item 9), in Chromium at 390x844 with touch and locale de-DE: every
control a finger uses is at least 44 px tall (the view's radios Gewicht / Beitrag / ALTI+ / Empfindlichkeit and its
box "Spalten <s>/</s> ausblenden": their label is the target), every row of the map has its whole label, "▶ Abspielen"
is one line, the beam tree's labels do not overprint, the lesson's Back is not the step bar's, and no hint speaks of
the ← → keys (a touch hint instead; at 1280x800 with a mouse the keys' hint is back). One served app for the module."""
from __future__ import annotations

import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser
SENTENCE = "Ich weiß, dass er morgen nach Berlin fährt."
PHONE = (390, 844)
TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers"]
# every visible control a finger uses and how tall it is: buttons, selects, sliders, text boxes and the labels of
# radios and check boxes (the label is the target). Not: Plotly's tool bar (a mouse's zoom tools), Gradio's footer,
# links inside a text (text, WCAG 2.5.5's inline exception), the skip links (1 px until the keyboard focuses them),
# an input inside its label (the label is measured)
SMALL = """() => { const out = [];
  const sel = 'button, select, input[type=range], input[type=number], textarea, input[type=text], ' +
              'label:has(> input[type=radio]), label:has(> input[type=checkbox])';
  for (const e of document.querySelectorAll(sel)) {
    if (!e.checkVisibility({checkVisibilityCSS: true, checkOpacity: true})) continue;
    if (e.closest('.modebar, footer, .al-skip') || (e.matches('input') && e.closest('label:has(> input)'))) continue;
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    if (r.height < 44 - 0.5) out.push(`${e.id || (e.closest('[id]') || {}).id} ${e.tagName} ` +
                                      `"${(e.innerText || e.value || '').trim().slice(0, 30)}" ${Math.round(r.height)} px`);
  }
  return out; }"""  # noqa: E501 (a script's lines, as the browser runs them)


def phone(b, url, size=PHONE, touch=True):
    require_chromium()
    context = b.new_context(viewport={"width": size[0], "height": size[1]}, is_mobile=touch, has_touch=touch,
                            locale="de-DE")
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    page.wait_for_selector("#source textarea", timeout=60000)
    return page


# what the page shows when a Start is not drawn in time (the report of a failed wait)
SHOWN = """() => { const L = window.__lens, st = L && L.state;
  return {traj: !!(st && st.traj), doc: !st || !st.doc ? null : st.doc === st.traj ? 'traj' : 'other',
          box: document.querySelector('#source textarea')?.value,
          status: document.querySelector('#attention [data-role=status]')?.textContent,
          toasts: [...document.querySelectorAll('.toast-body')].map(e => e.innerText),
          note: document.getElementById('source_hint')?.innerText}; }"""


def started(page):
    page.fill("#source textarea", SENTENCE)
    page.click("#start")
    try:
        page.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                               timeout=60000)
    except Exception as e:
        raise AssertionError(f"Start was not drawn: {page.evaluate(SHOWN)}, errors {page.errors}") from e
    page.wait_for_function("!document.getElementById('inside')?.inside || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)


def tab(page, name):
    """Open a tab and do what a reader does there first (tests/plain.py run_tab)."""
    from tests.plain import run_tab
    run_tab(page, name)


@pytest.fixture(scope="module")
def student(served_browser):
    url, b = served_browser
    page = phone(b, url)
    started(page)
    page.tap("#run")
    page.wait_for_function("window.__lens.state.t === window.__lens.state.traj.n - 1", timeout=20000)
    page.wait_for_timeout(500)
    yield page
    page.context.close()


def test_every_control_a_finger_uses_is_44_px_tall(student):
    page = student
    small = {}
    for name in TABS:
        tab(page, name)
        if page.evaluate(SMALL):
            small[name] = page.evaluate(SMALL)
    tab(page, "Translate")
    assert small == {}
    assert page.errors == []


def test_every_row_of_the_map_has_its_whole_label(student):
    page = student
    rows = page.evaluate("window.__lens.view().y")
    labels = page.eval_on_selector_all(
        "#attention [data-role=ylabels] span",
        "ss => ss.map(s => [s.textContent, getComputedStyle(s).display !== 'none', s.scrollWidth <= s.clientWidth])")
    assert len(rows) > 8 and [t for t, _, _ in labels] == rows
    assert [t for t, shown, _ in labels if not shown] == []  # every row labelled, not every second one
    assert [t for t, _, whole in labels if not whole] == []  # none cut ("_Berlin → _tom…")


def test_play_says_its_word_on_one_line(student):
    page = student
    page.evaluate("window.scrollTo(0, 0)")
    lines, fits = page.eval_on_selector("#attention [data-role=play]", """b => {
      const r = document.createRange(); r.selectNodeContents(b);
      return [new Set([...r.getClientRects()].filter(x => x.width > 1).map(x => Math.round(x.top))).size,
              b.scrollWidth <= b.clientWidth]; }""")
    assert page.inner_text("#attention [data-role=play]").strip() == "▶ Abspielen"
    assert lines == 1 and fits


def test_the_beam_trees_labels_do_not_overprint(student):
    page = student
    tab(page, "Beam search")
    boxes = page.eval_on_selector_all(
        "#beam_tree .js-plotly-plot .scatterlayer text",
        "ts => ts.filter(t => t.textContent.trim()).map(t => { const r = t.getBoundingClientRect(); "
        "return [t.textContent, r.left, r.top, r.right, r.bottom]; })")
    assert len(boxes) > 10
    frame = page.eval_on_selector("#beam_tree",
                                  "e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; }")
    over = [(a[0], c[0]) for i, a in enumerate(boxes) for c in boxes[i + 1:]
            if min(a[3], c[3]) - max(a[1], c[1]) > 2 and min(a[4], c[4]) - max(a[2], c[2]) > 2]
    assert over == []
    assert [t[0] for t in boxes if t[1] < frame[0] - 1 or t[3] > frame[1] + 1] == []  # on the screen, not cut
    tab(page, "Translate")


def test_the_atlas_cells_words_fit_their_cells(student):
    """Met in the walkthrough of 2026-12-05: at 390 px the German atlas's "gemischt" (49 px at 12 px) ran 5 px over
    its 44 px cell into the next one ("gemischtgemischt"); the short names follow "Zuord." and "Abst.": "gem."."""
    page = student
    tab(page, "Head atlas")
    cells = page.evaluate("""(() => { const gd = document.querySelector('#tab_atlas .js-plotly-plot'), out = [];
      for (const t of gd.querySelectorAll('.heatmaplayer text, g.text text')) {
        const s = t.textContent.trim(); if (!s) continue;
        out.push([s, t.getBBox().width]); }
      return [out, gd._fullLayout.xaxis._length / gd._fullLayout.xaxis.tickvals.length - 2]; })()""")
    words, width = cells
    assert len(words) >= 40, words  # every head's cell
    assert [w for w in words if w[1] > width] == [], (width, sorted({w[0] for w in words if w[1] > width}))
    tab(page, "Translate")


def test_no_hint_speaks_of_the_keys_on_a_phone_and_a_touch_hint_does(student, served_browser):
    page = student
    said = page.inner_text("body")  # what is shown (innerText leaves out what CSS hides)
    assert "Tasten ← und →" not in said and "← / →" not in said
    assert "Tippe auf ◀ Zurück oder Schritt ▶, um einen Schritt zu gehen." in said
    url, b = served_browser
    desk = phone(b, url, (1280, 800), touch=False)
    started(desk)
    said = desk.inner_text("body")
    assert "Die Tasten ← und → gehen einen Schritt weiter" in said and "Tippe auf ◀ Zurück" not in said
    desk.context.close()


def test_the_lessons_back_is_not_the_step_bars(student, served_browser):
    """Two identical "◀ Zurück" side by side (the lesson's, the step bar's): the lesson's goes to the view before."""
    page = student
    page.evaluate("window.scrollTo(0, 0)")
    page.tap("#lesson_open")
    for note in ("erste Ansicht", "zweite Ansicht"):
        page.fill("#lesson_note", note)
        n = page.evaluate("document.getElementById('lesson')?.lesson.made.length")
        page.tap("#lesson_add")
        page.wait_for_function(f"document.getElementById('lesson')?.lesson.made.length === {n + 1}", timeout=5000)
        page.evaluate("window.__lens.ctl.back()")  # the view before (the bar's Back is under the open tools)
        page.wait_for_timeout(300)
    page.tap("#copy_lesson")
    page.wait_for_function("document.getElementById('lesson')?.lesson.last !== null", timeout=5000)
    link = page.evaluate("document.getElementById('lesson')?.lesson.last")
    _url, b = served_browser
    other = b.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                          locale="de-DE").new_page()
    other.goto(link)
    other.wait_for_function("document.getElementById('link_box')?.link && "
                            "document.getElementById('link_box')?.link.opened === true && "
                            "document.getElementById('lesson')?.lesson && "
                            "!document.getElementById('lesson')?.lesson.busy", timeout=120000)
    assert other.is_visible("#lesson_bar") and other.is_visible("#back")
    mine, bar = other.inner_text("#lesson_back").strip(), other.inner_text("#back").strip()
    assert bar == "◀ Zurück" and mine == "◀ Vorige Ansicht", (mine, bar)
    for sel in ("#lesson_back", "#lesson_next"):
        assert other.locator(sel).bounding_box()["height"] >= 44, sel
    other.context.close()


def test_the_translation_so_far_is_beside_the_map_at_1280x800(served_browser):
    """Item 10: at 1280x800 "Übersetzung bisher" sat ~1,390 px down the page, under the whole view; now a student
    sees the translation being written on the first screen beside the map that writes it (its bottom no lower
    than the map's, in the screen's upper half)."""
    url, b = served_browser
    desk = phone(b, url, (1280, 800), touch=False)
    started(desk)
    for _ in range(3):
        desk.evaluate("window.__lens.ctl.step()")
    desk.wait_for_function("window.__lens.state.t === 3", timeout=10000)
    desk.evaluate("window.scrollTo(0, 0)")
    box = desk.locator("#translation").bounding_box()
    big = desk.locator("#attention [data-role=big]").bounding_box()
    assert desk.input_value("#translation textarea").strip() != ""
    assert box["y"] >= 0 and box["y"] + box["height"] <= big["y"] + big["height"], (box, big)  # on screen, by it
    assert big["y"] + big["height"] <= 800 and box["y"] + box["height"] <= 400, (box, big)
    desk.context.close()


LESSON_AT = ("document.getElementById('lesson')?.lesson && document.getElementById('lesson').lesson.shown === {i}"
             " && !document.getElementById('lesson').lesson.busy")  # the lesson shows view i, settled


def lesson_link(url, views) -> str:
    """A lesson link of [query, note] views (assets/lesson.js encode: base64url of the JSON), on the German page."""
    import base64
    import json
    raw = base64.urlsafe_b64encode(json.dumps(views).encode()).decode().rstrip("=")
    return f"{url}?lesson={raw}&lang=de"


# where the lesson's bar and the view's subject are on the screen, and what a finger on Next / Back's centre touches
SEEN = """(subject) => { const box = (s) => { const r = document.querySelector(s).getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, height: r.height}; };
  const hit = (s) => { const r = document.querySelector(s).getBoundingClientRect();
    const e = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2); return !!e && !!e.closest(s); };
  return {bar: box('#lesson_bar'), subject: box(subject), next: hit('#lesson_next'), back: hit('#lesson_back'),
          height: innerHeight}; }"""


def test_a_lesson_view_on_a_phone_shows_its_subject_under_the_bar(served_browser):
    """Issue 58: on a phone a lesson view's map sat ~1,000 px below the lesson bar (under the tabs and the sentence
    box): a student saw the note and not what it speaks of. Now the bar stays at the screen's top and the page
    scrolls so that the view's subject (the map; after Next, the beam tree) starts right under it; Next and Back
    stay under a finger when the student scrolls."""
    from urllib.parse import quote
    url, b = served_browser
    query = f"model=de-en&text={quote(SENTENCE)}&step=8&kind=cross&layer=3&head=2"
    link = lesson_link(url, [[query, "Schau, wohin *goes* schaut."],
                             [query + "&tab=beam&beam_size=3&beam_hypothesis=1", "Der Baum der Strahlsuche."]])
    page = b.new_context(viewport={"width": PHONE[0], "height": PHONE[1]}, is_mobile=True, has_touch=True,
                         locale="de-DE").new_page()
    page.goto(link)
    page.wait_for_function("document.getElementById('link_box')?.link?.opened === true && "
                           + LESSON_AT.format(i=0), timeout=120000)
    for i, subject in ((0, "#attention [data-role=big]"), (1, "#beam_tree")):
        if i:
            page.tap("#lesson_next")
            page.wait_for_function(LESSON_AT.format(i=i), timeout=120000)
            page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=60000)
        seen = page.evaluate(SEEN, subject)
        bar, top = seen["bar"], seen["subject"]["top"]
        assert bar["top"] >= -1 and bar["bottom"] <= 200, seen  # the bar at the screen's top
        assert bar["bottom"] - 1 <= top <= bar["bottom"] + 40, seen  # the subject right under it ...
        assert seen["subject"]["height"] > 150 and top + 150 <= seen["height"], seen  # ... and on the screen
        assert seen["next"] and seen["back"], seen  # Next and Back are the buttons a finger meets there
    for dy in (-400, 900):  # the student scrolls up towards the sentence, then down again: the bar stays
        page.evaluate(f"window.scrollBy(0, {dy})")
        seen = page.evaluate(SEEN, "#beam_tree")
        assert -1 <= seen["bar"]["top"] <= 1 and seen["back"] and seen["next"], (dy, seen)
    page.tap("#lesson_back")
    page.wait_for_function(LESSON_AT.format(i=0), timeout=120000)
    seen = page.evaluate(SEEN, "#attention [data-role=big]")
    assert seen["bar"]["bottom"] - 1 <= seen["subject"]["top"] <= seen["bar"]["bottom"] + 40, seen
    page.context.close()


# every visible dropdown of Gradio's: [its id, px from the end of its text box to its arrow, whether its choice is cut]
ARROW_ROOM = """() => [...document.querySelectorAll('input[role=combobox]')].filter(i => i.checkVisibility()).map(i => {
  const arrow = i.parentElement.querySelector('.icon-wrap');
  const end = i.getBoundingClientRect().right - parseFloat(getComputedStyle(i).paddingRight);
  return [i.closest('[id]').id, arrow ? arrow.getBoundingClientRect().left - end : null,
          i.scrollWidth > i.clientWidth]; })"""


def test_no_dropdowns_choice_runs_under_its_arrow(student):
    """Issue 57's screenshots: at 390 px the Beam search tab's hypothesis ("1. I know that he is going to Berlin
    tomorrow. (log-prob …)") ran under its own arrow; the examples' picker had the same fault at 1280 px. One rule
    (assets/layout.css) keeps every dropdown's arrow room free, on every tab."""
    page = student
    seen = {}
    for name in TABS:
        tab(page, name)
        seen[name] = page.evaluate(ARROW_ROOM)
    tab(page, "Translate")
    assert ["beam_choice", True] in [[i, cut] for i, _, cut in seen["Beam search"]], seen  # a long choice, cut
    bad = {name: [b for b in boxes if b[1] is not None and b[1] < 0] for name, boxes in seen.items()}  # None: no arrow
    assert not any(bad.values()), bad


def test_a_copied_links_line_on_a_phone_gives_its_words_the_width(student):
    """The line "Link zur Stunde kopiert (1 Ansicht):" beside its link box took three lines of 90 px on a phone;
    now its words share a line with ✕ only, the link under them, all above the bar of Back / Step / Run / Play."""
    page = student
    page.evaluate("window.scrollTo(0, 0)")
    page.tap("#copy_link")
    page.wait_for_selector("#link_note .link-note input", state="visible", timeout=10000)
    box = lambda s: page.locator(f"#link_note .link-note {s}").bounding_box()
    note, words, link, bar = box(""), box("[data-role=text]"), box("input"), page.locator("#back").bounding_box()
    assert words["width"] >= 0.6 * note["width"] and link["y"] >= words["y"] + words["height"] - 1, (note, words, link)
    assert note["y"] + note["height"] <= bar["y"], (note, bar)
    page.tap("#link_note [data-role=close]")
