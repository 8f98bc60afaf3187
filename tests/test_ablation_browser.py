"""Head ablation's tab in Chromium: the buttons under each kind's heads ("tick all 15", "tick layer 1", ...) show their
words on one line, whole, at 1280x800 and on a 390x844 phone, in English and German."""
from __future__ import annotations

import pytest

from tests.browser import open_app

pytestmark = pytest.mark.browser

# each whole-kind or whole-layer button: its words, its size, whether its words fit in it, and its right edge
BUTTONS = """() => [...document.querySelectorAll('.al-small-buttons button')].map(b => { const r =
  b.getBoundingClientRect(); return {text: b.innerText, w: r.width, h: r.height, right: r.right,
  fits: b.scrollWidth <= b.clientWidth + 1}; })"""


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_tick_buttons_show_their_words_on_one_line(served_browser, lang, width, height):
    """Seen failing before the rule in assets/layout.css: each button 12 px wide and 62 px tall, "tick / all / 15" a
    word a line, at both sizes and in both languages."""
    url, b = served_browser
    page = open_app(b, f"{url}?lang={lang}", width, height)
    page.click('#tabs button[role=tab][data-tab-id="ablation"]')
    page.wait_for_selector("#ablate_all_cross", state="visible", timeout=30000)
    buttons = page.evaluate(BUTTONS)
    assert len(buttons) == 3 * 4, buttons  # encoder, decoder, cross: all, and each of the 3 layers
    line = page.evaluate("parseFloat(getComputedStyle(document.getElementById('ablate_all_cross')).lineHeight)")
    for button in buttons:
        assert button["fits"] and button["h"] < 2 * line + 4 and button["right"] <= width, button
        assert button["w"] > 40, button
    assert page.errors == []
    page.close()
