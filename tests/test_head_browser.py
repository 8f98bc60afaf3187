"""The page's head reads well in both languages (issue 58: at 1280x800 the German title wrapped to 4 lines, squeezed
by the intro row's buttons): in Chromium with locale en-US and de-DE, the title takes at most 2 lines at 1280x800 and
at most 3 at 390x844 (a phone, touch), and no control of the intro row reaches past the screen's right edge; at 1280
the intro row stays one line (at most 50 px: its controls are 46 px tall)."""
from __future__ import annotations

import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser
# the title's height in lines of its own line height, and each control of the intro row's right edge
HEAD = """() => { const t = document.querySelector('#title h1'), r = t.getBoundingClientRect();
  const cs = getComputedStyle(t), lh = parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize);  // 'normal'
  const right = Math.max(...[...document.querySelector('#intro').children]
    .filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect().right));
  const row = document.querySelector('#intro').getBoundingClientRect().height;
  return {lines: r.height / lh, text: t.innerText, right, width: innerWidth, row}; }"""


def head(b, url, locale, width, height, touch=False) -> dict:
    require_chromium()
    context = b.new_context(viewport={"width": width, "height": height}, locale=locale, is_mobile=touch,
                            has_touch=touch)
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
        page.wait_for_function(f"document.getElementById('explain_box')?.explain?.lang === '{locale[:2]}'",
                               timeout=30000)
        page.wait_for_timeout(300)  # the intro row laid out with the page's language's labels
        return page.evaluate(HEAD)
    finally:
        context.close()


@pytest.mark.parametrize("locale", ["en-US", "de-DE"])
def test_the_title_takes_at_most_two_lines_at_1280(served_browser, locale):
    url, b = served_browser
    h = head(b, url, locale, 1280, 800)
    assert h["lines"] <= 2.2, h
    assert h["right"] <= h["width"], h
    assert h["row"] <= 50, h  # and the intro row one line (the Translate view fits 1280x800 under it)


@pytest.mark.parametrize("locale", ["en-US", "de-DE"])
def test_the_head_fits_a_phone(served_browser, locale):
    url, b = served_browser
    h = head(b, url, locale, 390, 844, touch=True)
    assert h["lines"] <= 3.2, h
    assert h["right"] <= h["width"], h
