"""On a student's phone and tablet (issue 41), in Chromium with touch emulation: at 390x844 the controls are on
screen and answer a tap, Back / Step / Run / Play are one bar at the bottom of the screen a thumb can press, a whole
decoding is stepped by that bar, nothing of the page lies past the screen's side on any tab, no two texts overprint
on the Translate tab, and the tour is completed by taps with the page unshifted after it. From the keyboard the map
is reached in at most 10 Tab presses from the sentence box, and the map says its current row in words."""
from __future__ import annotations

import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser
SENTENCE = "Ein Hund rennt durch den Schnee."
PHONE, TABLET = (390, 844), (820, 1180)
TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Head atlas",
        "Attention being learned", "Model"]
BAR = ["#back", "#step", "#run", "#attention [data-role=play]"]
# elements past the viewport's sides, but for those inside a frame that scrolls (the map's) and is itself on screen,
# a drawing's text that its SVG cuts (Plotly's titles: cut, not off the screen), and off-screen helpers of libraries
# (Plotly's text measurer at x = -10000). A control in a row that hides its overflow counts: it cannot be reached.
OUTSIDE = """() => { const W = innerWidth, out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height || r.right < -500 || e.closest('#js-plotly-tester') || getComputedStyle(e).visibility === 'hidden') continue;
    if (e.matches('.eta-bar')) continue;  // Gradio's waiting bar slides in from the left inside its clipped tracker
    if (r.right <= W + 1 && r.left >= -1) continue;
    let p = e.parentElement, framed = false;
    for (; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX, pr = p.getBoundingClientRect();
      const frame = o === 'auto' || o === 'scroll' || p.tagName === 'svg';  // a frame that scrolls, or a drawing
      if (frame && pr.left >= -1 && pr.right <= W + 1) { framed = true; break; }
    }
    if (!framed) out.push((e.id ? '#' + e.id : e.tagName + '.' + e.className) + ` ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return out; }"""  # noqa: E501 (a script's lines, as the browser runs them)
# leaf texts (an element's own text) on screen whose boxes overlap another's by more than 3 px both ways, line box by
# line box (getClientRects: a text wrapped round another's line, as the title's after 'attention-lens ·', is two
# boxes, not one around both lines); rotated labels (the map's columns) and what lies under the fixed bottom bar are
# left out
OVERPRINTS = """() => { const boxes = [];
  for (const e of document.querySelectorAll('#tab_translate *, #intro *')) {
    if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const b = e.getBoundingClientRect(), cs = getComputedStyle(e);
    if (!b.width || !b.height || cs.visibility === 'hidden' || e.closest('.lens-xlabels, .lens-said, .al-skip')) continue;
    if (b.bottom > innerHeight - 72 || e.closest('#back, #step, #run, [data-role=play]')) continue;
    for (const l of e.getClientRects()) {
      const r = {left: l.left, right: l.right, top: l.top, bottom: l.bottom};  // what its frames let show of it
      for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
        if (getComputedStyle(p).overflow === 'visible') continue;
        const f = p.getBoundingClientRect();
        r.left = Math.max(r.left, f.left); r.right = Math.min(r.right, f.right);
        r.top = Math.max(r.top, f.top); r.bottom = Math.min(r.bottom, f.bottom);
      }
      if (r.right - r.left > 1 && r.bottom - r.top > 1) boxes.push([e, r]);
    }
  }
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, r] = boxes[i], [b, s] = boxes[j];
    if (a.contains(b) || b.contains(a)) continue;
    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left), h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (w > 3 && h > 3) out.push(a.textContent.trim().slice(0, 20) + ' / ' + b.textContent.trim().slice(0, 20));
  }
  return out; }"""  # noqa: E501 (a script's lines, as the browser runs them)


def phone(b, url, size=PHONE):
    """A page on the app in a touch browser of `size`, ready (tests/browser.py open_app, with touch)."""
    require_chromium()
    context = b.new_context(viewport={"width": size[0], "height": size[1]}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true && "
                           "document.getElementById('tour_box')?.tour", timeout=60000)
    page.wait_for_selector("#source textarea", timeout=60000)  # (on a loaded machine the box can come a little later)
    return page


def box(page, sel) -> dict:
    return page.eval_on_selector(sel, "e => { const r = e.getBoundingClientRect(); "
                                      "return {x: r.x, y: r.y, w: r.width, h: r.height}; }")


def on_top(page, sel) -> bool:
    """The element (or one inside it) is what a tap at its middle reaches: on screen, covered by nothing."""
    return page.eval_on_selector(sel, """e => { const r = e.getBoundingClientRect();
      if (r.left < 0 || r.right > innerWidth || r.top < 0 || r.bottom > innerHeight) return false;
      const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
      return !!hit && (e.contains(hit) || hit.contains(e)); }""")


def t(page) -> int:
    return int(page.evaluate("window.__lens.state.t"))


def tap_start(page, text=SENTENCE):
    page.fill("#source textarea", text)
    page.tap("#start")
    page.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                           timeout=60000)
    page.wait_for_function("!document.getElementById('inside')?.inside || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)


def test_a_whole_decoding_is_stepped_by_taps_on_the_bottom_bar(served_browser):
    url, b = served_browser
    page = phone(b, url)
    assert on_top(page, "#source textarea") and on_top(page, "#start") and on_top(page, "#examples input")
    tap_start(page)
    n = page.evaluate("window.__lens.state.traj.n")
    assert n > 3 and t(page) == 0
    for sel in BAR:  # one bar at the bottom of the screen, each button a thumb's size and reachable
        r = box(page, sel)
        assert r["w"] >= 44 and r["h"] >= 44, (sel, r)
        assert r["y"] + r["h"] <= 844 and r["y"] >= 844 - 80, (sel, r)
        assert on_top(page, sel), sel
    page.evaluate("window.scrollTo(0, 900)")  # it stays at the bottom of the screen while the page scrolls
    assert all(on_top(page, sel) for sel in BAR)
    page.evaluate("window.scrollTo(0, 0)")
    # the translation so far right under the box, above the map
    assert box(page, "#translation")["y"] < box(page, "#attention")["y"]
    for i in range(1, n):
        page.tap("#step")
        page.wait_for_function(f"window.__lens.state.t === {i}", timeout=10000)
    assert t(page) == n - 1
    assert page.input_value("#translation textarea").strip() != ""
    page.tap("#back")
    page.wait_for_function(f"window.__lens.state.t === {n - 2}", timeout=10000)
    page.tap("#run")
    page.wait_for_function(f"window.__lens.state.t === {n - 1}", timeout=10000)
    assert page.evaluate("scrollX") == 0 and page.errors == []
    page.context.close()


@pytest.mark.parametrize("size", [PHONE, (360, 740), TABLET], ids=["390x844", "360x740", "820x1180"])
def test_nothing_lies_past_the_screens_side_on_any_tab(served_browser, size):
    url, b = served_browser
    page = phone(b, url, size)
    tap_start(page)
    left = {}
    for tab in TABS:
        page.get_by_role("tab", name=tab).tap()
        page.wait_for_timeout(1500)
        out = page.evaluate(OUTSIDE)
        if out or page.evaluate("scrollX || document.documentElement.scrollWidth > innerWidth"):
            left[tab] = out[:8]
    assert left == {}
    assert page.errors == []
    page.context.close()


def test_no_two_texts_overprint_on_the_translate_tab(served_browser):
    url, b = served_browser
    page = phone(b, url)
    tap_start(page)
    for _ in range(3):
        page.tap("#step")
    page.wait_for_function("window.__lens.state.t === 3", timeout=10000)
    seen = []
    for y in range(0, page.evaluate("document.documentElement.scrollHeight"), 700):
        page.evaluate(f"window.scrollTo(0, {y})")
        page.wait_for_timeout(150)
        seen += page.evaluate(OVERPRINTS)
    assert seen == []
    page.context.close()


def test_the_tour_is_completed_by_taps_and_leaves_the_page_unshifted(served_browser):
    url, b = served_browser
    page = phone(b, url)
    x0 = box(page, "#source textarea")["x"]
    unshifted = "window.scrollX === 0 && document.documentElement.scrollWidth <= innerWidth"
    page.tap("#tour")
    page.wait_for_selector(".driver-popover", timeout=20000)
    pop = box(page, ".driver-popover")
    assert pop["x"] >= 0 and pop["x"] + pop["w"] <= 390
    for sel in (".driver-popover-next-btn", ".driver-popover-close-btn"):  # thumb-sized on a touch screen
        r = box(page, sel)
        assert r["w"] >= 44 and r["h"] >= 44, (sel, r)

    def stop(i, timeout=60000):
        page.wait_for_function(f"document.getElementById('tour_box')?.tour.state().stop === {i} && "
                               f"document.getElementById('tour_box')?.tour.state().active", timeout=timeout)
        page.wait_for_timeout(400)
        assert page.evaluate(unshifted), i
        target = page.evaluate("(() => { const e = document.querySelector('.driver-active-element');"
                               " const r = e.getBoundingClientRect();"
                               " return [r.left, r.right, r.top, r.bottom, e.id]; })()")
        # the stop's own element (not driver.js's stand-in for one it could not find: the fixed bar's Step once),
        # on screen sideways and (its top at least) up and down
        assert target[4] != "driver-dummy-element", i
        assert target[0] >= -1 and target[1] <= 391 and 0 <= target[2] < 844, (i, target)

    page.fill("#source textarea", SENTENCE)
    page.tap("#start")
    stop(1)
    page.wait_for_function("!document.getElementById('inside')?.inside || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)
    page.tap("#step")
    stop(2)
    page.tap("#run")
    stop(3)
    page.tap("#attention [data-kind=decoder_self]")
    stop(4)
    # the stop's words say where the panel is on a phone: below the map, not "on the right"
    text = page.inner_text(".driver-popover-description")
    assert "on the right" not in text and "below" in text
    page.locator("#attention [data-role=canvas]").tap(position={"x": 4, "y": 4})
    stop(5)
    page.wait_for_function("document.getElementById('inside')?.inside.ready() && !document.querySelector('#inside "
                           "[data-role=main]').hidden",
                           timeout=60000)
    for s in range(1, 6):
        page.tap(f"#inside [data-stage='{s}']")
    stop(6)
    page.tap("#inside [data-role=close]")  # the row's sheet closed: the map's toggle is under it
    page.tap("#attention .lens-measure label:has(input[value=contribution])")
    stop(7)
    page.tap("#back")
    page.wait_for_function("window.__lens.state.t === window.__lens.state.traj.n - 2", timeout=20000)
    page.tap("#topk .topk-list button:nth-child(2)")
    stop(8)
    page.get_by_role("tab", name="Head ablation").tap()
    page.locator("#ablate_cross").get_by_label("L1 H1").tap()
    page.tap("#ablate_run")
    stop(9, 120000)
    page.get_by_role("tab", name="Head atlas").tap()
    page.wait_for_function("document.getElementById('atlas')?.atlas && "
                           "document.getElementById('atlas')?.atlas.renders > 0", timeout=30000)
    x, y = page.evaluate("""(() => {
      const gd = [...document.querySelectorAll('#atlas [data-role=grid]')].find(e => e.offsetParent);
      gd.scrollIntoView({block: 'center', inline: 'nearest'});
      const r = gd.getBoundingClientRect(), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
      return [r.left + xa._offset + xa.l2p(0), r.top + ya._offset + ya.l2p(0)]; })()""")
    page.touchscreen.tap(x, y)
    page.wait_for_function("document.getElementById('tour_box')?.tour.state().stop === 10", timeout=30000)
    assert len(page.evaluate("document.getElementById('tour_box')?.tour.state().done")) == 10
    page.tap(".driver-popover-next-btn")  # Done
    page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
    page.get_by_role("tab", name="Translate").tap()
    page.evaluate("window.scrollTo(0, 0)")
    assert page.evaluate(unshifted)
    assert abs(box(page, "#source textarea")["x"] - x0) < 1
    assert page.errors == []
    page.context.close()


def test_every_tour_stop_on_a_fresh_phone_page_is_on_screen_by_taps_on_next(served_browser):
    """No sentence started, Next tapped through the tour: every stop highlights its own element (the map's stops
    start the example themselves, as Start does), drawn and wholly on screen, the popover on screen and off it;
    nothing moves sideways, and the box is back where it was after the tour (issue 41 item 3)."""
    url, b = served_browser
    page = phone(b, url)
    x0 = box(page, "#source textarea")["x"]
    own = ["#sentence_row", "#step", "#attention .lens-kinds", "#attention [data-kind=decoder_self]",
           "#attention [data-role=canvas]", "#inside [data-role=stages]", "#attention .lens-measure", "#topk",
           "button[role=tab]", "button[role=tab]"]  # (the last two on other tabs: first the tab to open)
    page.tap("#tour")
    for i, sel in enumerate(own):
        if i:
            page.tap(".driver-popover-next-btn")
        page.wait_for_function("([i, sel]) => document.getElementById('tour_box')?.tour.state().stop === i && "
                               "(document.querySelector("
                               "'.driver-active-element') || {matches: () => false}).matches(sel)", arg=[i, sel],
                               timeout=60000)
        page.wait_for_timeout(400)
        e, p = box(page, ".driver-active-element"), box(page, ".driver-popover")
        assert e["w"] > 0 and e["h"] > 0 and e["x"] >= -1 and e["x"] + e["w"] <= 391, (i, e)
        assert e["y"] >= -1 and e["y"] + e["h"] <= 845, (i, e)
        assert p["x"] >= 0 and p["x"] + p["w"] <= 390 and p["y"] >= 0 and p["y"] + p["h"] <= 844, (i, p)
        assert p["y"] >= e["y"] + e["h"] - 1 or p["y"] + p["h"] <= e["y"] + 1, (i, e, p)  # above or below it
        assert page.evaluate("scrollX") == 0, i
        if i == 1:  # the map's first stop started the example in the box and says so
            assert f"started “{page.input_value('#source textarea')}” for you" in page.inner_text(".tour-note")
    page.tap(".driver-popover-next-btn")
    page.wait_for_function("document.getElementById('tour_box')?.tour.state().stop === 10", timeout=10000)
    page.tap(".driver-popover-next-btn")  # Done
    page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
    page.get_by_role("tab", name="Translate").tap()
    assert page.evaluate("scrollX") == 0 and box(page, "#source textarea")["x"] >= 0
    assert abs(box(page, "#source textarea")["x"] - x0) < 1 and page.errors == []
    page.context.close()


@pytest.mark.parametrize("size", [(1280, 800), PHONE], ids=["1280x800", "390x844"])
def test_the_map_is_reached_from_the_box_in_at_most_10_tab_presses_and_says_its_row(served_browser, size):
    url, b = served_browser
    require_chromium()
    page = b.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    page.fill("#source textarea", SENTENCE)
    page.click("#start")
    page.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                           timeout=60000)
    for _ in range(3):
        page.evaluate("document.getElementById('attention').lens.ctl.step()")
    page.wait_for_function("window.__lens.state.t === 3", timeout=10000)
    reached = {}
    for target, link in (("#attention .lens", "Skip to the map"), ("#inside .inside-fold", "Skip to Inside")):
        page.focus("#source textarea")
        for press in range(1, 11):
            page.keyboard.press("Tab")
            here = page.evaluate("(() => { const a = document.activeElement; return a.textContent.trim(); })()")
            if page.evaluate(f"document.activeElement === document.querySelector('{target}')"):
                reached[target] = press
                break
            if here.startswith(link):  # a skip link: Enter takes the focus there
                assert page.evaluate("getComputedStyle(document.activeElement).clip") in ("auto", "")
                page.keyboard.press("Enter")
                if page.evaluate(f"document.activeElement === document.querySelector('{target}')"):
                    reached[target] = press
                    break
    assert set(reached) == {"#attention .lens", "#inside .inside-fold"}, reached
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"  # the focus is seen
    # the map in words: the current row's strongest keys with their weights
    view = page.evaluate("window.__lens.view()")
    row = view["z"][view["row"]]
    best = max(range(len(row)), key=row.__getitem__)
    said = page.inner_text("#attention [data-role=said]")
    assert said.startswith(view["y"][view["row"]] + " looks mostly at " + view["x"][best])
    assert f"({row[best]:.2f})" in said
    assert page.get_attribute("#attention [data-role=canvas]", "aria-label") == said
    assert page.get_attribute("#attention [data-role=said]", "aria-live") == "polite"
    page.close()


@pytest.mark.parametrize("size,finger,least", [((1280, 800), False, 24), (PHONE, True, 44)],
                         ids=["1280x800-mouse-24px", "390x844-touch-44px"])
def test_the_architecture_strips_blocks_are_targets_of_24_px_and_44_by_a_finger(served_browser, translator, size,
                                                                                  finger, least):
    """Each attention block of the architecture strip (assets/arch.js) is at least 24 x 24 px (WCAG 2.5.8), 44 x 44
    px on a touch screen (2.5.5), and a tap (a click) on one opens it in the view."""
    url, b = served_browser
    require_chromium()
    context = b.new_context(viewport={"width": size[0], "height": size[1]}, is_mobile=finger, has_touch=finger)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true"
                           " && document.getElementById('arch')?.arch && "
                           "document.getElementById('arch')?.arch.renders > 0", timeout=60000)
    page.wait_for_timeout(300)  # a resize after the first draw draws it again
    blocks = page.eval_on_selector_all("#arch [data-kind]",
                                       "gs => gs.map(g => { const r = g.getBoundingClientRect(); "
                                       "return [g.dataset.kind + g.dataset.layer, r.width, r.height]; })")
    c = translator.config
    assert len(blocks) == c.n_encoder_layers + 2 * c.n_decoder_layers
    small = [(k, round(w), round(h)) for k, w, h in blocks if w < least or h < least]
    assert small == []
    block = page.locator("#arch [data-kind=decoder_self][data-layer='1']")
    block.scroll_into_view_if_needed()
    block.tap() if finger else block.click()
    page.wait_for_function("window.__lens.state.kind === 'decoder_self' && window.__lens.state.layer === 1",
                           timeout=10000)
    context.close()


def test_a_tapped_row_opens_inside_this_head_as_a_sheet_a_phone_can_read(served_browser):
    """On a phone a row tapped on the map opens the panel as a sheet over the page: its ✕ thumb-sized, the focus in it
    and back on the map when ✕ or Escape closes it; the table's key, weight and contribution on screen without sideways
    scrolling. On a desktop a click on a row leaves the panel where it is."""
    url, b = served_browser
    page = phone(b, url)
    tap_start(page)
    n = page.evaluate("window.__lens.state.traj.n")
    for i in range(1, n // 2 + 1):  # a decoding stepped to its middle
        page.tap("#step")
        page.wait_for_function(f"window.__lens.state.t === {i}", timeout=10000)
    sheet = "document.querySelector('#inside .inside').classList.contains('inside-sheet')"
    assert not page.evaluate(sheet)
    for close in ("tap", "Escape"):
        page.locator("#attention [data-role=canvas]").tap(position={"x": 4, "y": 4})
        page.wait_for_function(sheet, timeout=10000)
        page.wait_for_function("document.getElementById('inside')?.inside.ready() && !document.querySelector('#inside "
                               "[data-role=main]').hidden",
                               timeout=60000)
        panel = box(page, "#inside .inside")
        assert page.evaluate("getComputedStyle(document.querySelector('#inside .inside')).position") == "fixed"
        assert panel["x"] >= 0 and panel["x"] + panel["w"] <= 390 and abs(panel["y"] + panel["h"] - 844) < 2, panel
        x = box(page, "#inside [data-role=close]")
        assert x["w"] >= 44 and x["h"] >= 44 and on_top(page, "#inside [data-role=close]"), x
        assert page.evaluate("document.activeElement === document.querySelector('#inside [data-role=close]')")
        # key, weight, contribution: on screen inside the sheet, no sideways scroll needed; each head's words as the
        # page shows them (innerText: a head holds each language and explanation mode, one of them shown)
        heads = page.eval_on_selector_all("#inside .inside-table thead th", "hs => hs.map(h => { const r = "
                                          "h.getBoundingClientRect(); return [h.innerText.trim(), r.left, r.right]; })")
        seen = {t.replace("\u00ad", ""): (left, right) for t, left, right in heads}
        for name in ("key", "weight", "contribution"):
            left, right = seen[name]
            assert left >= panel["x"] - 1 and right <= panel["x"] + panel["w"] + 1, (name, left, right, panel)
        first = page.eval_on_selector("#inside .inside-table tbody tr", "r => { const c = [...r.children]; "
                                      "return [c[0], c[5], c[7]].map(e => e.getBoundingClientRect().right); }")
        assert max(first) <= panel["x"] + panel["w"] + 1
        if close == "tap":
            page.tap("#inside [data-role=close]")
        else:
            page.keyboard.press("Escape")
        page.wait_for_function("!" + sheet, timeout=10000)
        assert page.evaluate("document.activeElement === document.querySelector('#attention .lens')"), close
    assert page.errors == []
    page.context.close()
    desk = b.new_page(viewport={"width": 1280, "height": 800})
    desk.goto(url)
    desk.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    desk.fill("#source textarea", SENTENCE)
    desk.click("#start")
    desk.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                           timeout=60000)
    desk.click("#attention [data-role=canvas]", position={"x": 4, "y": 4})
    desk.wait_for_function("!document.getElementById('inside')?.inside.ready || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)
    assert not desk.evaluate(sheet)
    assert desk.evaluate("getComputedStyle(document.querySelector('#inside .inside')).position") != "fixed"
    desk.close()
