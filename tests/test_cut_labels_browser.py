"""Tables and figure labels read whole, in English and German, on a phone (390x844 with touch) and at 1280x800: the
Translate view's Inside this head table and architecture strip, Across layers' word-alignment table (its headings
"Empfindlichkeit", "Wort der Übersetzung" and its words) and the text of Across layers' figures (titles, tick labels,
the alignment's words). A text is cut when an element of its cell is wider inside than its box (scrollWidth >
clientWidth) without being the frame that scrolls, when a word of it is broken over two lines (a hyphen or a soft
hyphen may end a line), or when a text runs past its box or figure. One served app for the module; a page per
language and size."""
from __future__ import annotations

import pytest

from tests.browser import start
from tests.plain import run_tab

pytestmark = pytest.mark.browser
SENTENCE = "Meine kleine Schwester sah gestern einen Hund."

# [the cell's text, the cut element's class, its inner width, its box] of every cell under `sel` (a table's headings
# and cells) that is cut, and the words broken over two lines, each once
CUT = r"""(sel) => { const cut = [], broken = new Set();
  for (const c of document.querySelectorAll(sel)) {
    if (!c.checkVisibility()) continue;
    for (const e of [c, ...c.querySelectorAll('*')]) {
      if (e.scrollWidth > e.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
        cut.push([c.innerText.trim(), String(e.className).split(' ')[0], e.scrollWidth, e.clientWidth]);
    }
    const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const word = /[^\s\u00ad-]+/g; let m;  // a hyphen, a soft one too, may end a line
      while ((m = word.exec(n.data))) {
        // after a soft hyphen Chromium counts the hyphen it draws at the line's end as the next word's: from its
        // second letter on
        const from = m.index + (n.data[m.index - 1] === '\u00ad' ? 1 : 0);
        const r = document.createRange(); r.setStart(n, from); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top))).size > 1)
          broken.add(m[0]);
      }
    }
  }
  return {cut, broken: [...broken]}; }"""
# every text of the tab's figures that runs past its figure's box: [figure, text, px past left, right, top, bottom]
PAST = """() => { const out = [];
  for (const gd of document.querySelectorAll('#tab_layers .js-plotly-plot')) {
    if (!gd.checkVisibility()) continue;
    const box = gd.querySelector('.main-svg').getBoundingClientRect(), name = gd.closest('[id]').id;
    for (const t of gd.querySelectorAll('text')) {
      if (!t.textContent.trim() || !t.checkVisibility()) continue;
      const r = t.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        out.push([name, t.textContent.trim(), Math.round(box.left - r.left), Math.round(r.right - box.right),
                  Math.round(box.top - r.top), Math.round(r.bottom - box.bottom)]);
    }
  }
  return out; }"""
SIZES = {"phone": (390, 844), "1280": (1280, 800)}


@pytest.fixture(scope="module", params=[(lang, size) for lang in ("en", "de") for size in SIZES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def page(served_browser, request):
    """The sentence started and run to its end, Inside this head drawn."""
    url, b = served_browser
    lang, size = request.param
    (w, h), touch = SIZES[size], size == "phone"
    context = b.new_context(viewport={"width": w, "height": h}, is_mobile=touch, has_touch=touch,
                            locale="de-DE" if lang == "de" else "en-US")
    p = context.new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.goto(f"{url}?lang={lang}", timeout=90000)
    p.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    start(p, SENTENCE)
    p.evaluate("window.__lens.ctl.run()")
    p.wait_for_function("window.__lens.state.t === window.__lens.state.traj.n - 1", timeout=20000)
    yield p
    assert p.errors == []
    context.close()


def test_inside_this_heads_table_reads_whole(page):
    page.wait_for_selector("#inside .inside-table th", state="visible", timeout=30000)
    page.wait_for_function("document.getElementById('inside')?.inside.ready()", timeout=60000)
    seen = page.evaluate(CUT, "#inside .inside-table th")
    assert seen == {"cut": [], "broken": []}, seen


# every text of the architecture strip past its box (the block it names, or the strip's column): [text, px past]
STRIP = """() => { const svg = document.querySelector('#arch svg'), out = [];
  for (const t of svg.querySelectorAll('text')) {
    if (!t.textContent.trim()) continue;
    const g = t.parentElement.tagName === 'g' ? t.parentElement : null, b = t.getBBox();
    const box = g && g.querySelector(':scope > rect');  // a block's words in its block, the others in the strip
    const [left, right] = box ? [box.x.baseVal.value, box.x.baseVal.value + box.width.baseVal.value]
                              : [0, svg.viewBox.baseVal.width];
    const past = Math.max(left - b.x, b.x + b.width - right);
    if (past > 0.5) out.push([t.textContent, Math.round(past * 10) / 10]); }
  return out; }"""


def test_the_architecture_strips_words_stay_in_their_boxes(page):
    """At 1280x800 the German strip's last box read "rmieren → Encoder-Ausgabe": its words ran past both edges."""
    page.wait_for_function("document.querySelector('#arch svg text')", timeout=30000)
    assert page.evaluate(STRIP) == []


@pytest.fixture()
def layers(page):
    run_tab(page, "Across layers")
    page.wait_for_function("document.querySelectorAll('#word_align_table [role=gridcell]').length >= 5 * 7 && "
                           "document.querySelectorAll('#tab_layers .js-plotly-plot').length >= 4", timeout=90000)
    page.wait_for_timeout(500)  # the table's columns measured (Gradio sizes them after drawing)
    yield page
    run_tab(page, "Translate")


def test_the_word_alignment_tables_headings_and_words_read_whole(layers):
    """Its German headings read "Empfindli" and "Wort der Übersetzun g" (fixed shares of the frame's width): each
    column is as wide as its heading's longest word and its cells' words now, and the table scrolls in its frame."""
    heads = layers.eval_on_selector_all("#word_align_table th[role=columnheader]", "es => es.map(e => e.innerText)")
    assert len(heads) == 5 and ("Empfindlichkeit" in heads or "Saliency" in heads), heads
    seen = layers.evaluate(CUT, "#word_align_table :is(th[role=columnheader], [role=gridcell])")
    assert seen == {"cut": [], "broken": []}, seen
    frame = layers.eval_on_selector("#word_align_table .virtual-table-viewport",
                                    "e => [e.scrollWidth, e.clientWidth, getComputedStyle(e).overflowX]")
    assert frame[0] <= frame[1] + 1 or frame[2] == "auto", frame  # wider than the frame: it scrolls


def test_across_layers_figures_keep_their_text_inside(layers):
    """At 1280x800 the German word alignment's title ran 162 px past its half of the page ("..., Spalten")."""
    assert layers.evaluate(PAST) == []
