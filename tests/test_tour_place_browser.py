"""Issue 39, item 8, in Chromium: the tour's popover never covers what its stop describes (stop 4 used to lie over
the map stop 3 had just described); the tour ends with the view settings it found (it used to leave contribution on
another head); at 'look for the crossing' it opens the head where this sentence's crossing is clearest."""
from __future__ import annotations

import numpy as np
import pytest

from tests.browser import start

pytestmark = pytest.mark.browser
SENTENCE = "Ich habe den Hund gestern gesehen."  # 'I saw the dog yesterday.': saw reads gesehen, the last word
BIG = "#attention [data-role=big]"
DESCRIBED = {"step": [BIG], "cross": [BIG, "#run"], "decoder": [BIG], "inside": ["#inside"], "measure": [BIG],
             "stages": ["#inside [data-role=table]", "#inside [data-role=code]"], "force": ["#back"]}


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    context = b.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true && "
                           "document.getElementById('tour_box')?.tour", timeout=60000)
    start(page, SENTENCE)
    yield page
    context.close()


def covered(page, selectors) -> list[str]:
    """The selectors (and the stop's highlighted element) whose visible box the popover overlaps."""
    return page.evaluate("""(sels) => {
      const p = document.querySelector('.driver-popover').getBoundingClientRect(), out = [];
      const els = [['highlighted', document.querySelector('.driver-active-element')]]
        .concat(sels.flatMap(s => [...document.querySelectorAll(s)].map(e => [s, e])));
      for (const [name, e] of els) {
        if (!e || e.offsetParent === null) continue;
        const r = e.getBoundingClientRect(), w = Math.min(p.right, r.right) - Math.max(p.left, r.left);
        const h = Math.min(p.bottom, r.bottom, innerHeight) - Math.max(p.top, r.top, 0);
        if (w > 1 && h > 1) out.push(name);
      }
      return out; }""", selectors)


def clearest_crossing(traj):
    """The cross-attention head the tour should open, worked out again here: each row's strongest source word piece
    (rows predicting a word piece); a pair of rows whose pieces come in the other order crosses, weighted by the
    weaker link; no crossing: the sharpest links."""
    m = np.asarray(traj.maps.cross)
    L, H, T, _ = m.shape
    word = lambda p: any(c.isalpha() for c in p) and p not in ("<s>", "</s>")
    keys = [j for j, p in enumerate(traj.source) if word(p)]
    rows = [i for i in range(min(traj.n, T)) if i + 1 < traj.n and word(traj.pieces[i + 1])]
    best = None
    for l in range(L):
        for h in range(H):
            links = [(keys[int(m[l, h, i, keys].argmax())], float(m[l, h, i, keys].max())) for i in rows]
            score = sum(min(a[1], b[1]) for x, a in enumerate(links) for b in links[x + 1:] if a[0] > b[0])
            sharp = sum(w for _, w in links)
            if best is None or score > best[2] + 1e-6 or (abs(score - best[2]) <= 1e-6 and sharp > best[3]):
                best = (l, h, score, sharp)
    return best[:2]


def test_look_for_the_crossing_opens_the_head_where_it_is_clearest(page, translator):
    layer, head = clearest_crossing(translator.trajectory(SENTENCE))
    assert (layer, head) != (0, 0)  # the view's first head: the tour must open another one
    page.evaluate("document.getElementById('tour_box')?.tour.start(2)")
    page.wait_for_function("document.getElementById('tour_box')?.tour.state().active && "
                           "document.getElementById('tour_box')?.tour.state().stop === 2", timeout=30000)
    page.wait_for_function(f"window.__lens.state.layer === {layer} && window.__lens.state.head === {head}",
                           timeout=10000)
    assert page.evaluate("window.__lens.state.kind") == "cross"
    assert f"layer {layer + 1} · head {head + 1}" in page.inner_text(".lens-tour .tour-note")


def test_no_popover_covers_what_its_stop_describes(page):
    ids = page.evaluate("document.getElementById('tour_box')?.tour.stops")
    page.evaluate("window.__lens.ctl.run()")
    for i, stop in enumerate(ids[:8]):  # the stops on the Translate tab
        page.evaluate(f"document.getElementById('tour_box')?.tour.go({i})")
        page.wait_for_function(f"document.getElementById('tour_box')?.tour.state().stop === {i}", timeout=10000)
        page.wait_for_timeout(700)  # driver.js scrolls and places; the tour's tick (250 ms) moves it aside
        assert covered(page, DESCRIBED.get(stop, [])) == [], stop


def test_the_tour_ends_with_the_view_settings_it_found(page):
    page.evaluate("document.getElementById('tour_box')?.tour.close()")
    page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
    page.evaluate("window.__lens.select('encoder_self', 1, 2)")
    page.evaluate("document.getElementById('tour_box')?.tour.start(6)")
    page.wait_for_function("document.getElementById('tour_box')?.tour.state().active && "
                           "document.getElementById('tour_box')?.tour.state().stop === 6", timeout=30000)
    page.evaluate("window.__lens.select('cross', 2, 1)")  # another head, as the atlas stop or the crossing opens
    page.click("#attention .lens-measure input[value=contribution]")  # as stop 7 asks
    page.wait_for_function("document.getElementById('inside')?.inside.ui.measure === true", timeout=10000)
    page.click("#tour")  # ✕ End tour
    page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
    got = page.evaluate("[window.__lens.state.kind, window.__lens.state.layer, window.__lens.state.head, "
                        "document.querySelector('#attention .lens-measure input:checked').value]")
    assert got == ["encoder_self", 1, 2, "weight"]
    assert page.errors == []
