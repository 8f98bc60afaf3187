"""A short glossary where the words appear (issue 26 item 11): each term is underlined in the page's text and one
hover or click away from its meaning."""
from __future__ import annotations

import pytest

from tests.browser import start

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tiny_page):
    return tiny_page


def test_the_words_are_explained_where_they_appear(page):
    start(page, "Ein Hund rennt.")
    terms = page.evaluate("Object.keys(document.getElementById('glossary')?.glossary.terms)")
    assert {"teacher-forced", "rollout", "contribution", "mixed", "role"} <= set(terms)
    page.get_by_role("tab", name="Across layers").click()
    page.wait_for_selector(".gloss[data-term=rollout]", timeout=20000)
    page.get_by_role("tab", name="Translate").click()
    page.wait_for_selector("#inside .inside-help .x-plain .gloss[data-term=contribution]", timeout=20000)
    shown = page.locator("#inside .inside-help .gloss[data-term=contribution]:visible")
    assert shown.all_inner_texts() == ["Contribution"]  # one word shown, in the page's language (English here)
    span = page.locator("#inside .inside-help .x-plain .gloss[data-term=contribution]:visible").element_handle()
    plain = span.get_attribute("title")  # the plain meaning by default (issue 39 item 5), the paper in detail
    assert plain.startswith("Contribution:") and "Kobayashi" not in plain and "‖" not in plain
    span.click()
    assert page.is_visible(".gloss-tip") and page.inner_text(".gloss-tip") == plain
    page.click("#explain_detail")  # a click elsewhere closes the meaning; opened again it is the detailed one
    assert "Kobayashi" in span.get_attribute("title")
    page.wait_for_selector("#inside .inside-help .x-detail .gloss[data-term=contribution]", timeout=20000)
    page.click("#inside .inside-help .x-detail .gloss[data-term=contribution]:visible")  # the detailed help shown now
    assert "Kobayashi" in page.inner_text(".gloss-tip")
    page.keyboard.press("Escape")
    assert page.is_hidden(".gloss-tip")
    page.click("#explain_plain")
    assert span.get_attribute("title") == plain
    assert page.errors == []
