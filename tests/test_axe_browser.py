"""Accessibility by axe-core (issue 41 item 5, through axe-playwright-python): every tab of the page after a Start,
at 1280x800 and 390x844, has no critical and no serious violation, but for the ones listed in GRADIOS: elements
Gradio draws itself, which our page cannot reach without rewriting Gradio's components, each with its reason."""
from __future__ import annotations

import pytest

from tests.browser import open_app, start
from transformer.decode.decoding import Translator

pytestmark = pytest.mark.browser
TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Head atlas",
        "Attention being learned", "Model"]
# (rule, a piece of the element's selector or HTML): Gradio's own markup
GRADIOS = {
    ("scrollable-region-focusable", "virtual-table-viewport"): "gr.Dataframe with no rows: Gradio's scrolling "
    "viewport holds no focusable cell until the table is filled (Head ablation's tables before Compare)",
    ("aria-prohibited-attr", 'aria-label="Empty value"'): "gr.Plot with no figure: Gradio's placeholder div carries "
    "an aria-label without a role (Across layers' plots before Show, on a phone)",
}


@pytest.fixture(scope="module")
def served(tiny_trained):
    from tests.browser import browser, require_chromium, serve
    require_chromium()
    with serve(Translator.load(tiny_trained, "cpu")) as url, browser() as b:
        yield url, b


STRUCTURE = {"page-has-heading-one", "heading-order"}  # moderate, but what a screen reader's user moves by


def serious(page, axe) -> list[tuple[str, str]]:
    """(rule, element) of each critical or serious violation axe-core finds on the page as shown, and of the
    heading structure's rules (STRUCTURE)."""
    found = []
    for v in axe.run(page).response["violations"]:
        if v["impact"] in ("critical", "serious") or v["id"] in STRUCTURE:
            found += [(v["id"], " ".join(map(str, n["target"])) + " " + n["html"][:160]) for n in v["nodes"]]
    return found


def gradios(rule, element) -> bool:
    return any(rule == r and piece in element for r, piece in GRADIOS)


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_no_critical_or_serious_violation_on_any_tab(served, width, height):
    from axe_playwright_python.sync_playwright import Axe
    url, b = served
    page = open_app(b, url, width, height)
    start(page, "Ein Hund rennt durch den Schnee.")
    axe, left = Axe(), {}
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(800)  # then every output the tab asked for is in: Gradio fades a pending one (opacity
        page.wait_for_function("!document.querySelector('.pending')", timeout=60000)  # .2, a contrast fault of its own)
        bad = [(r, e) for r, e in serious(page, axe) if not gradios(r, e)]
        if bad:  # a fault of the page stays; one of a moment (a fade still running as axe read it) is gone 1.5 s on
            page.wait_for_timeout(1500)
            bad = [(r, e) for r, e in serious(page, axe) if not gradios(r, e)]
        if bad:
            left[tab] = bad
    assert left == {}
    assert page.errors == []
