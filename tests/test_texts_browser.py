"""'Explain: simply | in detail' in Chromium (issue 39 item 5): the plain version of every catalogue text shows by
default, one click shows the detailed one everywhere (intros, the glossary), a link keeps the choice, and a hostile
value is ignored with the allowed range."""
from __future__ import annotations

import pytest

from attention_lens.shell import texts
from tests.browser import open_app, open_link, start
from transformer.decode.decoding import Translator

pytestmark = pytest.mark.browser
# an intro per tab: its key, words only its plain version has, words only its detailed one has
INTROS = {"#beam_intro": ("beam.intro", "punished for its length", "log-probability per piece"),
          "#layers_intro": ("layers.intro", "a rollout, follows attention", "Abnar & Zuidema 2020"),
          "#ablate_why": ("ablation.why", "heads share the work", "Michel et al. 2019")}


@pytest.fixture(scope="module")
def served(tiny_trained):
    from tests.browser import browser, require_chromium, serve
    require_chromium()
    with serve(Translator.load(tiny_trained, "cpu")) as url, browser() as b:
        yield url, b


def shown(page, elem) -> str:
    """The text of `elem` a reader sees (inner_text leaves out what is hidden)."""
    return " ".join(page.inner_text(elem).split())


def opened(b, url):
    """A page on `url` once its link was applied (the Translate view need not be shown first)."""
    return open_link(b, url, "document.getElementById('explain_box')?.explain")


def test_plain_by_default_detail_one_click_away_everywhere(served):
    url, b = served
    page = open_app(b, url, 1280, 800)
    assert page.get_attribute("#explain_plain", "aria-pressed") == "true"
    tabs = (("Beam search", "#beam_intro"), ("Across layers", "#layers_intro"), ("Head ablation", "#ablate_why"))
    for tab, elem in tabs:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_selector(elem, state="visible")
        said = shown(page, elem)
        key, plain, detail = INTROS[elem]
        assert plain in said and detail not in said and plain in texts.text(key) and detail in texts.text(key, "detail")
    page.click("#explain_detail")
    assert page.evaluate("document.body.classList.contains('explain-detail')")
    assert page.get_attribute("#explain_detail", "aria-pressed") == "true"
    for tab, elem in tabs:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_selector(elem, state="visible")
        said = shown(page, elem)
        key, plain, detail = INTROS[elem]
        assert detail in said and plain not in said
    page.click("#explain_plain")
    said = shown(page, "#ablate_why")
    assert "heads share the work" in said and "Michel" not in said
    assert page.errors == []


def test_inside_this_head_explains_simply_then_in_detail(served):
    """The panel's help and its stage notes (the Done-when screenshot of issue 39) in both versions."""
    url, b = served
    page = open_app(b, url, 1280, 800)
    start(page, "Ein Hund rennt.")
    page.wait_for_selector("#inside .inside-note", state="visible", timeout=30000)
    page.click("#inside .inside-stages button[data-stage='2']")
    plain = shown(page, "#inside .inside-help") + " " + shown(page, "#inside .inside-note")
    assert "blue is below zero" in plain and "② Shrink" in plain and "Kobayashi" not in plain and "√" not in plain
    page.click("#explain_detail")
    page.wait_for_function("document.querySelector('#inside .inside-note').textContent.includes('√')", timeout=5000)
    detail = shown(page, "#inside .inside-help") + " " + shown(page, "#inside .inside-note")
    assert "Kobayashi et al. 2020" in detail and "② ÷√d_k" in detail and "Shrink" not in detail
    page.click("#explain_plain")
    assert page.errors == []


def test_the_tour_speaks_plainly_unless_asked_for_detail(served):
    """The tour's stops come from the catalogue in the mode shown when a stop opens."""
    url, b = served
    page = open_app(b, url, 1280, 800)
    start(page, "Ein Hund rennt.")

    def stop_said(n):
        page.click("#tour")
        page.wait_for_selector(".driver-popover", timeout=20000)
        page.click(f".lens-tour .tour-dots button:nth-child({n})")
        page.wait_for_function(f"document.getElementById('tour_box')?.tour.state().stop === {n - 1}", timeout=10000)
        said = page.inner_text(".driver-popover-title") + " " + page.inner_text(".driver-popover-description")
        page.click("#tour")  # the button ends it
        page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
        return " ".join(said.split())
    plain = stop_said(6)  # the five stages inside a head
    assert "Five steps inside a head" in plain and "softmax" not in plain and "√" not in plain
    page.click("#explain_detail")
    detail = stop_said(6)
    assert "softmax" in detail and "Five steps" not in detail
    page.click("#explain_plain")
    assert page.errors == []


def test_a_link_keeps_the_detailed_explanations_and_refuses_other_values(served):
    url, b = served
    page = open_app(b, url, 1280, 800)
    start(page, "Ein Hund rennt.")
    page.click("#explain_detail")
    link = page.evaluate("document.getElementById('link_box')?.link.url()")
    assert "explain=detail" in link
    again = opened(b, link)
    assert again.evaluate("document.getElementById('explain_box')?.explain.mode") == "detail"
    assert again.get_attribute("#explain_detail", "aria-pressed") == "true"
    hostile = opened(b, url + "?explain=%3Cscript%3E")
    assert hostile.evaluate("document.getElementById('explain_box')?.explain.mode") == "plain"
    assert "explain" in hostile.inner_text("#link_note") and "one of plain, detail" in hostile.inner_text("#link_note")
    assert page.errors == again.errors == hostile.errors == []
