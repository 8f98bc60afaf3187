"""The page in two languages (issue 44), without a browser: every English text and label has a German one (a
missing one would be shown in English; `texts.missing` lists them), the gr.I18n object holds every label in both
languages, every label a builder asks for exists, each text is in the page in both languages and modes, and a
handler reads its user's language from the request (the cookie assets/i18n.js sets, else Accept-Language)."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from transformer import language
from ui import texts

UI = Path(texts.__file__).parent


def test_no_text_or_label_is_missing_from_german():
    assert texts.missing("de") == []


def test_a_missing_german_text_falls_back_to_english(monkeypatch):
    de = {k: v for k, v in texts.catalogue("de").items() if k != "beam"}
    monkeypatch.setattr(texts, "catalogue", lambda lang="en", real=texts.catalogue: de if lang == "de" else real(lang))
    assert texts.text("beam.intro", "plain", "de") == texts.text("beam.intro", "plain", "en")
    assert "beam.intro" in texts.missing("de")


def test_the_i18n_object_holds_every_label_in_both_languages():
    got = texts.I18N.translations_dict
    assert set(got) == set(texts.LANGS)
    assert set(got["de"]) == set(got["en"]) == set(texts.catalogue("en")["label"])
    assert all(v.strip() for lang in got for v in got[lang].values())
    for k, v in got["de"].items():  # the German labels are German (those of 4 words or more: detect can tell)
        if len(re.findall(r"[^\W\d_]{2,}", v)) >= 4:
            assert language.detect(v)[0] == "de", (k, v)


def test_every_label_key_a_builder_names_exists():
    named = set()
    for path in UI.glob("*.py"):
        named |= set(re.findall(r"""\b(?:label|both|said)\(\s*["']([\w.]+)["']""", path.read_text(encoding="utf-8")))
    assert len(named) > 30, named
    assert sorted(named - set(texts.labels("en"))) == []
    with pytest.raises(KeyError, match="no.such"):
        texts.label("no.such")


def test_every_text_is_in_the_page_in_both_languages_and_modes():
    md = texts.explained("beam.intro")
    for lang in texts.LANGS:
        for mode in texts.MODES:
            assert f'class="x-{mode} l-{lang}" lang="{lang}"' in md and texts.text("beam.intro", mode, lang) in md
    both = texts.both("tab_translate")
    assert '<span class="l-de" lang="de">Übersetzen</span>' in both and '>Translate</span>' in both
    assert "body.lang-de .l-en" in texts.EXPLAIN_CSS and "body:not(.lang-de) .l-de" in texts.EXPLAIN_CSS


def test_the_scripts_get_both_catalogues_german_only_with_its_own_texts():
    p = texts.payload()
    assert p["en"]["label.tab_translate"] == "Translate" and p["de"]["label.tab_translate"] == "Übersetzen"
    assert p["de"]["beam.intro"]["plain"] == texts.text("beam.intro", "plain", "de")
    assert set(p["de"]) <= set(p["en"])


def request(cookie=None, accept=""):
    cookies = {texts.LANG_COOKIE: cookie} if cookie else {}
    return SimpleNamespace(request=SimpleNamespace(cookies=cookies, headers={"accept-language": accept}))


@pytest.mark.parametrize("cookie, accept, lang", [("de", "", "de"), ("en", "de-DE,de", "en"), (None, "de-AT", "de"),
                                                  (None, "fr-FR", "en"), ("xx", "en-US", "en"), (None, "", "en")])
def test_a_handler_reads_its_users_language(cookie, accept, lang):
    from gradio.context import LocalContext
    token = LocalContext.request.set(request(cookie, accept))
    try:
        assert texts.page_lang() == lang
        assert texts.said("tab_translate") == texts.labels(lang)["tab_translate"]
    finally:
        LocalContext.request.reset(token)
    assert texts.page_lang() == "en"  # outside an event
