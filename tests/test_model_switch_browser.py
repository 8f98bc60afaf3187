"""The model switch is a new start (issue 39, item 1), in Chromium at 1280x800 with both shipped models: picking
another model ends the started sentence on every tab (each tab's sentence line, the inside panel), and no button of
any tab turns a component red or raises an error toast for want of a sentence, after the switch or after a reload."""
from __future__ import annotations

import pytest

from tests.browser import browser, choose_model, go, open_app, open_fold, require_chromium, serve, start

pytestmark = pytest.mark.browser
W, H = 1280, 800
SENTENCE = "Das Wetter war gestern sehr schlecht."
TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Head atlas",
        "Attention being learned", "Model"]
NONE_YET = "No sentence started yet"
# every error toast the page ever shows (a MutationObserver: a toast fades), and what is red now: a status badge
# (a leaf saying "Error") or an error toast still shown
WATCH = """() => { if (window.__errorsSeen) return; window.__errorsSeen = [];
  new MutationObserver(() => { for (const t of document.querySelectorAll('.toast-body.error')) {
    if (!t.dataset.seen) { t.dataset.seen = '1'; window.__errorsSeen.push(t.innerText.replace(/\\s+/g, ' ').trim()); } }
  }).observe(document.body, {childList: true, subtree: true}); }"""
RED = """() => [...document.querySelectorAll('body *')].filter(e => e.offsetParent !== null && e.children.length === 0
    && e.textContent.trim() === 'Error').map(e => 'badge on #' + ((e.closest('[id]:not([id^="html-"])') || {}).id))
    .concat(window.__errorsSeen || [])"""


@pytest.fixture(scope="module")
def served():
    from transformer.decode.decoding import Translator
    require_chromium()
    with serve([Translator.load(key, "cpu") for key in ("de-en", "en-de")]) as url, browser() as b:
        yield url, b


def open_tab(page, name):
    page.get_by_role("tab", name=name).click()
    page.wait_for_timeout(150)


def sentence_lines(page) -> list[str]:
    return page.eval_on_selector_all(".started-sentence", "es => es.map(e => e.textContent)")


def answered(page, selector: str, words: str, timeout=60000):
    """Wait until `selector` (a note) says `words`, or something turned red; then nothing may be red."""
    page.wait_for_function(
        f"""() => {{ const e = document.querySelector({selector!r}); const t = e ? (e.value !== undefined ?
        e.value : e.innerText) || '' : ''; return t.includes({words!r}) || ({RED})().length > 0; }}""",
        timeout=timeout)
    assert page.evaluate(RED) == [], selector


def calm(page, ms=600):
    page.wait_for_timeout(ms)
    assert page.evaluate(RED) == []


def press_everything(page):
    """Every button of every tab, with no sentence started: each answers in its own note, none turns red."""
    page.evaluate(WATCH)
    open_tab(page, "Translate")
    for b in ("#reset", "#back", "#step", "#run"):
        page.click(b)
    calm(page)
    open_fold(page, "goto_fold")
    page.click("#goto")
    calm(page)
    open_fold(page, "reference_fold")
    page.fill("#reference textarea", "The weather was bad.")
    page.click("#show_reference")
    answered(page, "#reference_note", "Press Start")
    open_fold(page, "export_fold")
    page.click("#export")
    answered(page, "#export_note", "Press Start")
    open_tab(page, "Compare")
    page.click("#compare_start")
    page.wait_for_selector("#compare [data-role=panels]:not([hidden])", timeout=60000)
    calm(page)
    open_tab(page, "Head ablation")
    page.locator("#ablate_cross").get_by_label("L1 H1").check()
    page.click("#ablate_run")
    answered(page, "#ablate_note textarea", "Press Start")
    page.click("#ablate_clear")
    page.click("#ablate_suggest_1")
    calm(page, 1500)
    page.click("#ablate_layer_cross_1")
    calm(page)
    open_tab(page, "Beam search")
    page.click("#beam_run")
    answered(page, "#beam_note", "Press Start")
    open_tab(page, "Across layers")
    page.click("#layers_run")
    answered(page, "#layers_note", "Press Start")
    for name in TABS[5:]:
        open_tab(page, name)
        calm(page, 300)
    open_tab(page, "Translate")
    calm(page, 1000)
    assert page.errors == []


def test_a_model_switch_ends_the_sentence_on_every_tab_and_no_button_turns_red(served):
    url, b = served
    page = open_app(b, url, W, H)
    start(page, SENTENCE)
    go(page, 4)
    page.wait_for_function("document.querySelector('#inside').innerText.includes('query row 4')", timeout=60000)
    for name in TABS[1:]:  # every tab names the sentence (its line is put in the page when the tab is opened)
        open_tab(page, name)
    assert sentence_lines(page) and all(SENTENCE in s for s in sentence_lines(page)), sentence_lines(page)
    open_tab(page, "Translate")
    choose_model(page, "English → German")
    page.wait_for_function("!window.__lens.state.doc", timeout=20000)
    page.wait_for_timeout(500)
    for name in TABS:
        open_tab(page, name)
        lines = sentence_lines(page)
        assert [s for s in lines if not s.startswith(NONE_YET)] == [], (name, lines)
        assert SENTENCE not in page.inner_text("body"), name
    open_tab(page, "Translate")
    inside = page.inner_text("#inside")
    assert "query row 4" not in inside and "step 4" not in inside and "Press Start" in inside, inside
    assert page.input_value("#translation textarea") == ""
    press_everything(page)
    page.close()


def test_after_a_reload_no_button_turns_red(served):
    url, b = served
    page = open_app(b, url, W, H)
    start(page, SENTENCE)
    page.reload()
    page.wait_for_function("window.__lens !== undefined && window.__lens.ready === true", timeout=30000)
    assert all(s.startswith(NONE_YET) for s in sentence_lines(page))
    press_everything(page)
    page.close()
