"""Issue 39, items 6, 7 and 9 on the Compare tab, in Chromium: an example pair starts at once (as Translate's examples
do); a hint says when the boxes no longer hold the pair whose maps are shown; rows read 'query → predicted' as the
Translate map's do; the maps say what their rows and columns are in the model's languages; ← → Home End step both
whenever the focus is not in a text box; the intro follows the model's languages."""
from __future__ import annotations

import json

import pytest

from attention_lens.compare.tab import PAIRS
from tests.browser import choose_model, open_app, serve, start

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    page.get_by_role("tab", name="Compare").click()
    yield page


def shown(page) -> dict:
    return page.evaluate("document.getElementById('compare')?.compare.view()")


def pick_pair(page, i, lang="de"):
    a, b, _ = PAIRS[lang][i]
    page.click("#compare_pairs")
    page.get_by_role("option", name=f"{a}  |  {b}", exact=False).click()
    return a, b


def started(page, a, b, timeout=60000):
    page.wait_for_function(f"(() => {{ const s = document.getElementById('compare')?.compare.state; "
                           f"return s.a && s.a.p.input === {json.dumps(a)}"
                           f" && s.b.p.input === {json.dumps(b)} && "
                           f"document.getElementById('compare')?.compare.view() !== null; }})()",
                           timeout=timeout)


def hint(page) -> bool:
    return page.is_visible("#compare [data-role=stale]")


def test_an_example_pair_starts_at_once(page):
    a, b = pick_pair(page, 1)  # no Start both pressed
    started(page, a, b)
    assert not hint(page)
    assert page.errors == []


def test_a_hint_says_when_the_boxes_hold_another_pair(page):
    a, b = PAIRS["de"][1][:2]
    started(page, a, b)
    page.fill("#compare_a textarea", "Der Hund schläft.")
    assert hint(page) and "another pair" in page.inner_text("#compare [data-role=stale]")
    page.fill("#compare_a textarea", a)  # back to the pair shown: no hint
    assert not hint(page)
    page.fill("#compare_b textarea", "Die Katze schläft.")
    assert hint(page)
    page.click("#compare_start")
    started(page, a, "Die Katze schläft.")
    assert not hint(page)


def test_rows_read_query_then_predicted_as_in_the_translate_view(page):
    a, b = pick_pair(page, 0)
    started(page, a, b)
    page.click("#compare [data-kind=cross]")
    for _ in range(3):
        page.click("#compare [data-role=step]")
    v = shown(page)
    assert v["ta"] == 3
    page.get_by_role("tab", name="Translate").click()
    start(page, a)
    page.evaluate("window.__lens.ctl.goto(3)")
    assert v["a"]["labels"] == page.evaluate("window.__lens.view().y")  # 'query → the piece it predicts'
    assert all(" → " in x for x in v["a"]["labels"]) and v["a"]["rows"] == [x.split(" → ")[0] for x in v["a"]["labels"]]
    page.get_by_role("tab", name="Compare").click()


def test_the_maps_say_what_rows_and_columns_are(page):
    for kind, line in (("encoder_self", "↓ German reading · German it reads →"),
                       ("decoder_self", "↓ English being written · English written so far →"),
                       ("cross", "↓ English being written · German it reads →")):
        page.click(f"#compare [data-kind={kind}]")
        assert page.inner_text("#compare [data-role=axes]") == line, kind


def test_keys_step_both_whenever_the_focus_is_not_in_a_text_box(page):
    page.evaluate("document.getElementById('compare')?.compare.ctl.go(0); document.activeElement && "
                  "document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    assert shown(page)["t"] == 1
    page.keyboard.press("End")
    top = int(page.get_attribute("#compare [data-role=scrub]", "max"))
    assert shown(page)["t"] == top
    page.keyboard.press("Home")
    assert shown(page)["t"] == 0
    page.focus("#compare_a textarea")
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    assert shown(page)["t"] == 0


def test_the_intro_follows_the_models_languages(tiny_trained, tiny_en_de_dir, served_browser):
    from transformer.decode.decoding import Translator
    _, b = served_browser
    two = [Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]
    with serve(two) as url:
        page = open_app(b, url, 1280, 800)
        page.get_by_role("tab", name="Compare").click()
        assert "whether dog looks at Hund" in page.inner_text("#compare_intro")
        choose_model(page, "English → German")
        page.wait_for_function("document.querySelector('#compare_intro').innerText"
                               ".includes('whether Hund looks at dog')", timeout=20000)
        assert "each row is a piece of the German being written" in page.inner_text("#compare_intro")
        page.close()
