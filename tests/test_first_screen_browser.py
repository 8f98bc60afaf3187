"""The first screen (issue 26 item 10): picking an example starts it, and "How to use it" opens over the page
without moving the view."""
from __future__ import annotations

import pytest

from tests.browser import choose

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tiny_page):
    return tiny_page


def test_picking_an_example_starts_it(page):
    from transformer.train.data import read_examples
    first = read_examples()[0]
    choose(page, "examples", first)  # its option: the sentence and its gloss
    page.wait_for_function("window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj",
                           timeout=30000)
    assert page.input_value("#source textarea") == first
    assert page.evaluate("window.__lens.state.traj.p.input") == first
    assert page.errors == []


def covered(page, elem) -> bool:
    """Whether something else is on top of `elem`'s middle (a click there would land on it)."""
    return not page.evaluate(f"""(() => {{ const e = document.querySelector({elem!r}), r = e.getBoundingClientRect();
        const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return !!top && (e === top || e.contains(top)); }})()""")


def test_how_to_use_it_covers_nothing_and_closes_as_a_help_text_does(page):
    """Issue 39 item 3: opened, it sat over Start and the examples, and stayed open on Esc, a click outside and a
    change of tab. It opens under the intro row (the page moves down, Start stays reachable) and closes on each."""
    def open_it():
        page.click("#howto")
        page.wait_for_selector("#howto_body", state="visible", timeout=20000)
        page.locator("#howto_body", has_text="Pick a model").wait_for(state="visible", timeout=20000)
    open_it()
    for elem in ("#start", "#examples", "#source textarea"):
        assert page.is_visible(elem) and not covered(page, elem), elem
    page.click("#howto_body p")  # reading it (a click inside) leaves it open
    assert page.is_visible("#howto_body")
    page.keyboard.press("Escape")
    page.wait_for_selector("#howto_body", state="hidden", timeout=5000)
    open_it()
    page.click("#title")  # a click outside
    page.wait_for_selector("#howto_body", state="hidden", timeout=5000)
    open_it()
    page.click("#tabs button[data-tab-id=compare]")  # a change of tab
    page.wait_for_selector("#howto_body", state="hidden", timeout=5000)
    page.click("#tabs button[data-tab-id=translate]")
    assert page.get_attribute("#howto", "aria-expanded") == "false" and page.errors == []


def test_before_start_the_view_says_what_it_will_show(page):
    """Issue 26 item 10: before Start the left half teaches (what a row, a column and the diagonal mean) instead of
    a colour bar reading 0 and blank Layer/Head selects; Start puts the map there."""
    from tests.browser import start
    page.goto(page.url.split("?")[0])  # the page before Start (a reload would reopen the view its address holds)
    page.wait_for_function("window.__lens !== undefined && window.__lens.ready === true", timeout=30000)
    controls = "getComputedStyle(document.querySelector('#attention .lens-controls')).visibility"
    assert page.is_visible("#attention [data-role=intro]")
    assert "diagonal" in page.inner_text("#attention [data-role=intro]") and page.evaluate(controls) == "hidden"
    start(page, "Ein Hund rennt.")
    assert page.is_hidden("#attention [data-role=intro]") and page.evaluate(controls) == "visible"


def test_the_tab_bar_is_a_tablist_whose_keys_move_along_and_keep_each_tab(page):
    """gr.Tabs with its keys (assets/tab_keys.js): a click or ← / → / Home / End choose a tab; the tab left keeps what
    it showed."""
    from tests.browser import start
    start(page, "Ein Hund rennt.")
    seq = page.evaluate("window.__lens.state.traj.seq")
    selected = "() => document.querySelector('#tabs button[role=tab][aria-selected=true]').innerText"
    page.click("#tabs button[data-tab-id=translate]")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#tab_compare", state="visible", timeout=20000)
    assert page.evaluate(selected) == "Compare" and not page.is_visible("#tab_translate")
    page.keyboard.press("End")
    page.wait_for_selector("#tab_model", state="visible", timeout=20000)
    assert page.evaluate(selected) == "Model" and not page.is_visible("#tab_compare")
    page.keyboard.press("Home")
    page.wait_for_selector("#tab_translate", state="visible", timeout=20000)
    assert page.evaluate(selected) == "Translate" and page.is_visible("#attention .lens")
    assert page.evaluate("window.__lens.state.traj.seq") == seq  # the view kept its sentence
    assert page.errors == []


def test_benchmarks_one_gr_html_first_screen_draws_the_apps_views(tiny_trained, page):
    """benchmarks.first_screen's "the first screen's views in one gr.HTML" measures what it says only if its one
    gr.HTML draws the app's views: their own scripts run (the attention view ready, the top-k list and the
    architecture strip drawn), the parts kept hidden not displayed, no error."""
    from benchmarks.first_screen import one_screen
    from tests.browser import open_app
    from transformer.decode.decoding import Translator
    with one_screen(Translator.load(tiny_trained, "cpu")) as url:  # in the module's browser (one per process)
        page = open_app(page.context.browser, url, 1280, 800)
        for sel, text in (("#topk", "Next piece"), ("#arch", "Encoder"), ("#inside", "Inside this head")):
            page.locator(sel, has_text=text).wait_for(state="visible", timeout=20000)
        assert page.locator("#attention canvas").count() >= 1
        assert not page.locator("#glossary").is_visible() and not page.locator("#lens_bus").is_visible()
        assert page.errors == []
        page.close()
