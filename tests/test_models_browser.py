"""The model picker in Chromium (issue 30): every tab follows the chosen model, and the hint beside the box offers the
model of the sentence's language, switching and starting in one click."""
from __future__ import annotations

import pytest

from tests.browser import browser, chips, choose_model, model_label, open_app, require_chromium, serve, start

pytestmark = pytest.mark.browser
DE, EN = "Ein Hund rennt.", "A dog runs."


@pytest.fixture(scope="module")
def two(tiny_trained, tiny_en_de_dir):
    from transformer.decode.decoding import Translator
    return [Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]


@pytest.fixture(scope="module")
def page(two):
    require_chromium()
    with serve(two) as url, browser() as b:
        yield open_app(b, url, 1280, 800)


choose = choose_model  # tests/browser.py


def tab(page, name):
    page.get_by_role("tab", name=name).click()


def test_the_picker_changes_every_tabs_model(page, two):
    _de, en = two
    assert model_label(page) == "German → English"
    choose(page, "English → German")
    assert "English sentence" in page.get_attribute("#source textarea", "placeholder")
    start(page, EN)
    assert page.evaluate("window.__lens.state.traj.p.languages") == ["en", "de"]
    page.evaluate("window.__lens.ctl.run()")
    assert page.input_value("#translation textarea") == en.translate(EN) == DE

    tab(page, "Head ablation")
    page.locator("#ablate_cross").get_by_label("L1 H1").check()
    page.click("#ablate_run")
    page.wait_for_function("document.querySelector('#intact_translation textarea')?.value !== ''", timeout=30000)
    assert page.input_value("#intact_translation textarea") == DE

    tab(page, "Beam search")
    page.click("#beam_run")
    page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=30000)
    assert chips(page, "attention_beam")[-2:] == en.tokenizer.pieces(en.translate_ids([en.source_ids(EN)])[0])[-2:]

    tab(page, "Across layers")
    page.wait_for_selector("#align_matrix .js-plotly-plot", timeout=30000)
    labels = page.evaluate("document.querySelector('#align_matrix .js-plotly-plot').layout.xaxis.ticktext")
    assert labels[:4] == en.tokenizer.pieces(en.source_ids(EN))[:4], labels  # the English source

    tab(page, "Model")
    assert "English → German" in page.inner_text("#model_card") and page.is_visible("#model_card")
    assert page.locator("#model_card").count() == 1  # the other model's card is not on the page

    tab(page, "Translate")
    choose(page, "German → English")  # switching clears the views and says which model is in use
    page.wait_for_selector(".toast-body:has-text('Now using German → English')", timeout=20000)
    assert page.input_value("#translation textarea") == ""
    tab(page, "Model")
    assert "German → English" in page.inner_text("#model_card")
    tab(page, "Translate")
    assert page.errors == []


def test_the_hint_notices_english_and_its_click_switches_and_starts(page, two):
    if model_label(page) != "German → English":
        choose(page, "German → English")
    page.fill("#source textarea", "The weather is nice today.")
    page.wait_for_function("document.querySelector('#language_hint') && document.querySelector('#language_hint')"
                           ".innerText.includes('This looks like English, not German.')", timeout=20000)
    assert page.inner_text("#language_switch").startswith("Translate it English → German")
    seq = page.evaluate("window.__lens.state.traj ? window.__lens.state.traj.seq : null")
    page.click("#language_switch")
    page.wait_for_function(f"window.__lens.state.traj && window.__lens.state.traj.seq !== {seq or 'null'}",
                           timeout=30000)
    assert model_label(page) == "English → German"
    assert page.evaluate("window.__lens.state.traj.p.languages") == ["en", "de"]
    assert page.evaluate("window.__lens.state.traj.p.input") == "The weather is nice today."
    # English is this model's language now (the tiny test model's vocabulary may still find the words unknown)
    page.wait_for_function("!document.querySelector('#language_row') || !document.querySelector('#language_row')"
                           ".innerText.includes('looks like English')", timeout=20000)
    assert page.errors == []
