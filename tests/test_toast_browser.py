"""Issue 39, item 9, in Chromium: Gradio's toasts cover no control (the 'Now using …' toast of a model switch used to
cover Copy link), at 1280×800 and 390×844; and after the switch the map's axis line speaks the new model's
languages (item 6)."""
from __future__ import annotations

import pytest

from tests.browser import browser, choose_model, open_app, require_chromium, serve, start

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def two_models(tiny_trained, tiny_en_de_dir):
    """(url, browser): the app serving both directions (the tiny models), so the picker can switch."""
    from transformer.decode.decoding import Translator
    require_chromium()
    with serve([Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]) as url, \
            browser() as b:
        yield url, b


COVERED = """(() => {
  const t = document.querySelector('.toast-wrap').getBoundingClientRect(), out = [];
  for (const e of document.querySelectorAll('button, input, select, textarea, a[href], [role=tab], canvas')) {
    if (e.closest('.toast-wrap') || e.offsetParent === null) continue;
    const r = e.getBoundingClientRect();
    if (r.width && r.height && r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top)
      out.push(e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 30) || e.tagName);
  }
  return out; })()"""


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_a_toast_covers_no_control(two_models, size):
    url, b = two_models
    page = open_app(b, url, *size)
    choose_model(page, "English → German")
    page.wait_for_selector(".toast-body:has-text('Now using English → German')", timeout=20000)
    page.wait_for_timeout(800)  # placed once it is drawn
    assert page.evaluate(COVERED) == [], size
    if size[0] == 1280:
        start(page, "A dog runs.")
        line = "↓ German being written · English it reads →"
        assert page.inner_text("#attention [data-role=axes]") == line
        assert page.inner_text("#attention [data-role=grid-axes]") == line
    page.close()
