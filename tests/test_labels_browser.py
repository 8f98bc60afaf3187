"""One labelling everywhere (issue 26 item 4): a decoder row reads "query → the piece it predicts" in the Translate
view and in Across layers; with words merged, Inside this head says it stays in pieces and why."""
from __future__ import annotations

import pytest

from tests.browser import settings, start, view

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tiny_page):
    return tiny_page


def test_across_layers_labels_rows_as_the_translate_view_does(page):
    start(page, "Ein Hund rennt.")
    page.evaluate("window.__lens.ctl.run()")
    page.wait_for_timeout(300)
    translate_rows = view(page)["y"]
    page.get_by_role("tab", name="Across layers").click()
    page.wait_for_selector("#align_matrix .js-plotly-plot", timeout=30000)
    rows = page.evaluate("document.querySelector('#align_matrix .js-plotly-plot').layout.yaxis.ticktext")
    assert rows and all("→" in r for r in rows)
    import html
    norm = lambda r: html.unescape(r).replace("▁", "_").replace(" ", "")
    assert [norm(r) for r in rows] == [norm(r) for r in translate_rows[:len(rows)]]
    page.get_by_role("tab", name="Translate").click()


def test_inside_this_head_says_it_stays_in_pieces_when_words_are_merged(page):
    start(page, "Ein Hund rennt.")
    assert "in pieces" not in page.inner_text("#inside [data-role=title]")
    settings(page)
    page.check("#words input")
    page.wait_for_function("document.querySelector('#inside [data-role=title]').textContent.includes('in pieces')",
                           timeout=20000)
    page.uncheck("#words input")
