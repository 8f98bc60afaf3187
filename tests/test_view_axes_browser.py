"""Issue 39, items 6 and 9, in Chromium: the big map, the grid and the exported figure say what their rows and columns
are in the model's languages; ← → Home End step whenever the focus is not in a text box; a step that cannot move
says the sentence's range; the inside table fits 1024×768 (a toast covering no control: test_toast_browser.py)."""
from __future__ import annotations

import pytest

from tests.browser import open_app, start, step_no

pytestmark = pytest.mark.browser
SENTENCE = "Der Hund beißt den Mann, weil er Hunger hat."
LINES = {"German → English": {"encoder_self": "↓ German reading · German it reads →",
                              "decoder_self": "↓ English being written · English written so far →",
                              "cross": "↓ English being written · German it reads →"},
         "English → German": {"cross": "↓ German being written · English it reads →"}}


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    start(page, SENTENCE)
    yield page


def axes(page) -> tuple[str, str]:
    return (page.inner_text("#attention [data-role=axes]"), page.inner_text("#attention [data-role=grid-axes]"))


def test_the_big_map_and_the_grid_say_what_rows_and_columns_are(page):
    for kind, line in LINES["German → English"].items():
        page.click(f"#attention [data-kind={kind}]")
        page.wait_for_function(f"window.__lens.state.kind === '{kind}'")
        assert axes(page) == (line, line), kind
    page.click("#attention [data-kind=cross]")


def test_the_exported_figure_says_what_rows_and_columns_are(page):
    with page.expect_download(timeout=60000) as got:
        page.click("#attention [data-role=html]")
    with open(got.value.path(), encoding="utf-8") as f:
        html = f.read()
    assert "↓ English being written · German it reads →" in html
    assert "keys: German it reads →" in html and "queries: English being written" in html


def test_arrow_keys_step_without_a_click_on_the_map_but_not_in_a_text_box(page):
    page.click("#attention [data-kind=cross]")
    page.evaluate("window.__lens.ctl.goto(0)")
    picked = page.evaluate("document.getElementById('inside')?.inside && "
                           "document.getElementById('inside')?.inside.ui.pick")
    page.evaluate("document.activeElement && document.activeElement.blur()")  # the focus on the page itself
    assert page.evaluate("!document.activeElement.closest('.lens')")  # ... not on the view: no click on the map
    page.keyboard.press("ArrowRight")
    assert step_no(page) == 1
    page.keyboard.press("End")
    n = page.evaluate("window.__lens.state.traj.n")
    assert step_no(page) == n - 1
    page.keyboard.press("ArrowLeft")
    assert step_no(page) == n - 2
    page.keyboard.press("Home")
    assert step_no(page) == 0
    assert page.evaluate("document.getElementById('inside')?.inside && "
                         "document.getElementById('inside')?.inside.ui.pick") == picked  # no row picked on the way
    page.focus("#source textarea")  # in a text box the keys move the caret, never the step
    page.keyboard.press("ArrowRight")
    page.keyboard.press("End")
    assert step_no(page) == 0


def test_a_step_that_cannot_move_names_the_sentences_range(page):
    n = page.evaluate("window.__lens.state.traj.n")
    page.evaluate("window.__lens.ctl.goto(0)")
    page.click("#back")
    assert f"steps run 0–{n - 1}" in page.inner_text("#attention [data-role=status]")
    page.evaluate("window.__lens.ctl.run()")
    page.click("#step")
    status = page.inner_text("#attention [data-role=status]")
    assert f"Step {n - 1} is the last" in status and f"steps run 0–{n - 1}" in status
    page.evaluate("window.__lens.ctl.goto(99)")
    assert f"No step 99: this sentence's steps run 0–{n - 1}" in page.inner_text("#attention [data-role=status]")


def test_the_inside_table_fits_1024_by_768(served_browser):
    url, b = served_browser
    page = open_app(b, url, 1024, 768)
    start(page, SENTENCE)
    page.wait_for_selector("#inside .inside-table tbody td", timeout=60000)
    page.locator("#inside .inside-table").scroll_into_view_if_needed()
    fit = page.evaluate("""(() => {
      const s = document.querySelector('#inside .inside-scroll'), t = document.querySelector('#inside .inside-table');
      const ths = [...t.querySelectorAll('th')], r = s.getBoundingClientRect();
      return {scroll: s.scrollWidth, client: s.clientWidth, cut: ths.filter(h => h.getBoundingClientRect().right > r.right + 0.5)
              .map(h => h.textContent)}; })()""")  # noqa: E501 (a script's lines, as the browser runs them)
    assert fit["cut"] == [] and fit["scroll"] <= fit["client"], fit
    page.close()
