"""A German phone's targets and tables (390x844), with touch and as a narrow window without it: every radio and check
box of the Translate view (Gewicht / Beitrag / ALTI+ / Empfindlichkeit, the <s>/</s> columns) is 44 px tall, and
every glossary word is at least 24 px tall to tap, and Inside this head's headings are read whole."""
from __future__ import annotations

import pytest

from tests.browser import start

pytestmark = pytest.mark.browser
SENTENCE = "Meine kleine Schwester sah gestern einen Hund."
TARGETS = """() => [...document.querySelectorAll('#tab_translate input:is([type=radio], [type=checkbox])')]
  .filter(e => e.checkVisibility()).map(e => { const l = e.closest('label') || e, r = l.getBoundingClientRect();
    return [l.textContent.trim(), Math.round(r.height)]; })"""
WORDS = """() => [...document.querySelectorAll('.gloss')].filter(e => e.checkVisibility())
  .map(e => [e.textContent, e.getBoundingClientRect().height])"""


@pytest.fixture(scope="module", params=[True, False], ids=["touch", "narrow-window"])
def phone(served_browser, request):
    url, b = served_browser
    touch = request.param
    context = b.new_context(viewport={"width": 390, "height": 844}, is_mobile=touch, has_touch=touch,
                            locale="de-DE")
    page = context.new_page()
    page.goto(f"{url}?lang=de", timeout=90000)
    page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    start(page, SENTENCE)
    yield page
    context.close()


def test_the_translate_views_radios_and_check_box_are_44_px_tall(phone):
    seen = phone.evaluate(TARGETS)
    names = " ".join(n for n, _ in seen)
    for word in ("Gewicht", "Beitrag", "ALTI+", "Empfindlichkeit", "<s>"):
        assert word in names, seen
    assert all(h >= 44 for _, h in seen), seen


def test_glossary_words_are_24_px_tall_to_tap(phone):
    phone.wait_for_function("document.querySelectorAll('.gloss').length > 0", timeout=20000)
    seen = phone.evaluate(WORDS)
    assert seen and all(h >= 24 for _, h in seen), seen


CUT = """(sel) => [...document.querySelectorAll(sel)].filter(e => e.checkVisibility())
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => [e.textContent.trim(), e.scrollWidth, e.clientWidth])"""


def test_inside_this_heads_headings_are_read_whole(phone):
    """The table's columns had fixed widths that cut their German headings ("Ähnlichk", "Mask"): each heading's words
    now wrap whole in a column wide enough for its longest word (the table scrolls sideways in its frame)."""
    phone.wait_for_selector("#inside .inside-table th", state="visible", timeout=30000)
    assert phone.evaluate(CUT, "#inside .inside-table th") == []
