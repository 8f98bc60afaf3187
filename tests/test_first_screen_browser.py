"""The first screen (issue 26 item 10): picking an example starts it, and "How to use it" opens over the page
without moving the view."""
from __future__ import annotations

import pytest

from tests.browser import browser, open_app, require_chromium, serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tiny_trained):
    from transformer.decoding import Translator
    require_chromium()
    with serve(Translator.load(tiny_trained, "cpu")) as url, browser() as b:
        yield open_app(b, url, 1280, 800)


def test_picking_an_example_starts_it(page):
    from transformer.data import read_examples
    first = read_examples()[0]
    page.click("#examples")
    page.get_by_role("option").filter(has_text=first).first.click()
    page.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                           timeout=30000)
    assert page.input_value("#source textarea") == first
    assert page.evaluate("window.__lens.state.traj.p.input") == first
    assert page.errors == []


def test_how_to_use_it_opens_without_moving_the_view(page):
    y = page.locator("#sentence_row").bounding_box()["y"]
    page.click("#howto .label-wrap")
    page.wait_for_timeout(800)
    assert "Pick the model" in page.inner_text("#howto")
    assert abs(page.locator("#sentence_row").bounding_box()["y"] - y) < 4
    page.click("#howto .label-wrap")
