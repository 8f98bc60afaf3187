"""The Across layers tab's heatmaps (rollout, alignment matrix, word alignment) and the Learned tab's, hovered, in
the page's language: 'Zeile … Schlüssel … Gewicht 0,123' on the German page, 'query … key … weight 0.123' on the
English one (the word alignment's ALTI+ cells: 'Anteil am Beitrag' / 'contribution share'); transformer/interpret/
figures.py's words passed by the handler in the user's page's language, the number Plotly's %{z:.3f} with the
layout's separators."""
from __future__ import annotations

import os
import re

import pytest

from tests.browser import go, open_app, start, tab_button

pytestmark = pytest.mark.browser
SENTENCE = "Das Wetter war gestern sehr schlecht."
SHOTS = os.environ.get("FIGURE_WORDS_SHOTS")  # a folder: the hovered tab saved there (screenshots, not checked)


def hovered(page, plot: str) -> str:
    """The hover text of the cell under the middle of `plot`'s heatmap."""
    page.wait_for_function(f"document.querySelector('#{plot} .js-plotly-plot')?.layout", timeout=30000)
    page.locator(f"#{plot} .js-plotly-plot").scroll_into_view_if_needed()
    box = page.locator(f"#{plot} .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(f"#{plot} .hoverlayer .hovertext", timeout=10000)
    return page.locator(f"#{plot} .hoverlayer .hovertext").first.text_content()


@pytest.mark.parametrize("lang, words, number, seps", [
    ("de", ("Zeile", "Schlüssel"), r"(Gewicht|Anteil am Beitrag) [01],\d{3}$", ",."),
    ("en", ("query", "key"), r"(weight|contribution share) [01]\.\d{3}$", ".,")])
@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_across_layers_heatmaps_hover_in_the_pages_language(served_browser, lang, words, number, seps, width,
                                                                  height):
    url, b = served_browser
    page = open_app(b, url + f"?lang={lang}", width, height)
    start(page, SENTENCE)
    go(page, 3)
    for tab, plot in (("Across layers", "rollout"), ("Across layers", "align_matrix"),
                      ("Across layers", "word_align_matrix"), ("Attention being learned", "learned_plot")):
        page.click(tab_button(tab))
        text = hovered(page, plot)
        assert all(w in text for w in words) and re.search(number, text), (lang, plot, text)
        # an attention map holds weights; the word alignment's ALTI+ (the tab's method at first) shares of the
        # contribution
        share = re.search(number, text).group(1) in ("Anteil am Beitrag", "contribution share")
        assert share == (plot == "word_align_matrix"), (lang, plot, text)
        assert page.evaluate(f"document.querySelector('#{plot} .js-plotly-plot').layout.separators") == seps
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/{plot}_{lang}_{width}x{height}.png")
    assert page.errors == []
    page.close()
