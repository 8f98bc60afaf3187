"""The first screen (issue 26 item 10): picking an example starts it, and "How to use it" opens over the page
without moving the view."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tiny_page):
    return tiny_page


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


def test_before_start_the_view_says_what_it_will_show(page):
    """Issue 26 item 10: before Start the left half teaches (what a row, a column and the diagonal mean) instead of
    a colour bar reading 0 and blank Layer/Head selects; Start puts the map there."""
    from tests.browser import start
    page.reload()
    page.wait_for_function("window.__lens !== undefined && window.__lens.ready === true", timeout=30000)
    controls = "getComputedStyle(document.querySelector('#attention .lens-controls')).visibility"
    assert page.is_visible("#attention [data-role=intro]")
    assert "diagonal" in page.inner_text("#attention [data-role=intro]") and page.evaluate(controls) == "hidden"
    start(page, "Ein Hund rennt.")
    assert page.is_hidden("#attention [data-role=intro]") and page.evaluate(controls) == "visible"
