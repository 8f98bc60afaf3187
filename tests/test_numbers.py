"""The server's numbers in the page's language (issue 58): attention_lens/shell/texts.py `number` writes a decimal
number as the
user's page writes it (0,741 on the German page, 0.741 on the English one, as the browser's Intl.NumberFormat in
assets/explain.js), `separators` gives Plotly's layout the same; and the handlers' texts use them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from attention_lens.shell import texts


def as_user(lang):
    from gradio.context import LocalContext
    return LocalContext.request.set(SimpleNamespace(request=SimpleNamespace(
        cookies={texts.LANG_COOKIE: lang}, headers={"accept-language": ""})))


@pytest.mark.parametrize("x, digits, lang, out", [
    (0.7414, 3, "de", "0,741"), (0.7414, 3, "en", "0.741"), (33.46, 1, "de", "33,5"), (-2.7049, 2, "de", "-2,70"),
    (-0.0001, 3, "de", "0,000"), (1234.5, 1, "de", "1234,5"), (12, 0, "de", "12"), (0.5, 2, "en", "0.50")])
def test_number_writes_the_languages_decimal_separator(x, digits, lang, out):
    assert texts.number(x, digits, lang) == out


def test_number_and_separators_follow_the_users_page():
    from gradio.context import LocalContext
    token = as_user("de")
    try:
        assert texts.number(0.25, 2) == "0,25" and texts.separators() == ",."
    finally:
        LocalContext.request.reset(token)
    assert texts.number(0.25, 2) == "0.25" and texts.separators() == ".,"  # outside an event: English


def test_the_handlers_texts_write_the_german_decimal_comma(tiny_translator):
    """The Head atlas's hover, the Model card's scores, the learning history's 12,5 % and the ablation tables'
    shown numbers (their data stay numbers)."""
    from attention_lens.atlas import tab as atlas_tab
    from attention_lens.learned.handlers import epoch_words
    from attention_lens.model import handlers as model_handlers
    h = {"kind": "encoder_self", "layer": 0, "head": 0, "role": "mixed", "bleu_ablated": 28.5, "bleu_drop": -0.25,
         "rank": 3, "entropy": 1.234}
    de, en = (atlas_tab.hover_text(h, None, 3, lang=lang).replace("<br>  ", " ") for lang in ("de", "en"))
    assert "28,50" in de and "0,25" in de and "1,23" in de and "28.50" not in de, de
    assert "28.50" in en and "0.25" in en and "1.23" in en, en
    metrics = {"test": {"tatoeba_test/greedy": {"bleu": 38.1, "bleu_lc": 39.0, "chrf": 55.5}}}
    for mode in ("plain", "detail"):
        de = model_handlers.model_card(tiny_translator, metrics, mode, "de")
        assert "38,1" in de and "38.1" not in de, de
        assert "38.1" in model_handlers.model_card(tiny_translator, metrics, mode, "en")
    assert "55,5" in model_handlers.model_card(tiny_translator, metrics, "detail", "de")
    assert epoch_words(0.125, "plain", "de").startswith("12,5 %") and "2 %" in epoch_words(0.02, "plain", "de")
    shown = texts.shown_table([[1, "Haus", 0.1234, -0.0]], "de")["display_value"]
    assert shown == [["1", "Haus", "0,1234", "0,0"]]


def test_the_servers_figures_write_numbers_as_the_page(tiny_translator):
    from gradio.context import LocalContext

    from attention_lens.shell.figures import figure, with_separators
    token = as_user("de")
    try:
        assert figure({"data": [], "layout": {}}).layout.separators == ",."
        assert with_separators({"layout": {}})["layout"]["separators"] == ",."
    finally:
        LocalContext.request.reset(token)
    assert figure({"data": [], "layout": {}}).layout.separators == ".,"
