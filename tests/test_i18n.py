"""The page in two languages (issue 44), without a browser: every English text and label has a German one (a
missing one would be shown in English; `texts.missing` lists them), the gr.I18n object holds every label in both
languages, every label a builder asks for exists, each text is in the page in both languages and modes, and a
handler reads its user's language from the request (the cookie assets/i18n.js sets, else Accept-Language)."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from attention_lens.shell import texts
from transformer.decode import language

UI = Path(texts.__file__).parents[1]


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
    own = set(texts.GRADIO_OWN["en"])  # Gradio's own keys its locales lack
    assert set(got["de"]) == set(got["en"]) == set(texts.gradio_keys()) | own  # the labels Gradio shows, no more
    assert 60 < len(texts.gradio_keys()) < len(texts.catalogue("en")["label"])
    assert all(v.strip() for lang in got for v in got[lang].values())
    for k, v in got["de"].items():  # the German labels are German (those of 4 words or more: detect can tell)
        if len(re.findall(r"[^\W\d_]{2,}", v)) >= 4:
            assert language.detect(v)[0] == "de", (k, v)


def test_every_label_key_a_builder_names_exists():
    named = set()
    for path in UI.rglob("*.py"):
        named |= set(re.findall(r"""\b(?:label|both|said)\(\s*["']([\w.]+)["']""", path.read_text(encoding="utf-8")))
    assert len(named) > 30, named
    assert sorted(named - set(texts.words("en"))) == []
    with pytest.raises(KeyError, match="no.such"):
        texts.label("no.such")
    # f-strings' keys: every one they can make
    for key in ("mname_alti", "sentence_a_de", "pair_en_1", "direction_en_de"):
        assert key in texts.gradio_keys(), key
    assert "atlas_bleu_axis" not in texts.gradio_keys()  # the scripts' (assets/atlas.js): in the bundle, not gr.I18n
    with pytest.raises(KeyError, match="not in gr.I18n"):
        texts.label("atlas_bleu_axis")


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


def test_a_missing_german_label_falls_back_to_english_and_is_listed(monkeypatch):
    de = {**texts.catalogue("de"), "label": {k: v for k, v in texts.catalogue("de")["label"].items()
                                             if k != "examples_pick"}}
    monkeypatch.setattr(texts, "catalogue", lambda lang="en", real=texts.catalogue: de if lang == "de" else real(lang))
    assert texts.labels("de")["examples_pick"] == "Examples: pick a sentence…"
    assert texts.missing("de") == ["label.examples_pick"]


def test_the_short_words_of_pickers_tables_and_languages_are_in_both_catalogues():
    from attention_lens.compare.tab import PAIRS
    from transformer.decode.language import OTHER_NAMES
    en, de = texts.labels("en"), texts.catalogue("de")["label"]
    assert {f"lang_{c}": n for c, n in OTHER_NAMES.items()}.items() <= en.items()  # the library's names, in English
    assert all(f"lang_{c}" in de for c in OTHER_NAMES)  # ... and German: the caveat's "looks like {name}"
    for src, pairs in PAIRS.items():  # what differs in an example pair: the pair's own words in English
        assert [en[f"pair_{src}_{i + 1}"] for i in range(len(pairs))] == [what for _, _, what in pairs]
    roles = {r["role"] for r in __import__("transformer.interpret.roles", fromlist=["legend"]).legend()}
    assert all(f"role_{r}" in de and f"role_short_{r}" in de for r in roles)  # the lens view's and the atlas's


def test_the_model_pickers_options_are_one_label_each():
    """'German → English' is one [label] text, said in the page's language by Gradio's own gr.Dropdown: Gradio
    translates a gr.I18n marker only at the start of a string (the second of two markers joined stays raw)."""
    from attention_lens.app import shown_choices
    from attention_lens.shell.models import Models
    fake = SimpleNamespace(config=SimpleNamespace(src_lang="de", tgt_lang="en", direction="de-en"), name=None)
    hf = SimpleNamespace(config=fake.config, name="opus-mt-de-en",  # a Hugging Face model (transformer/hf)
                         model=SimpleNamespace(num_parameters=lambda: 74_410_496))
    models = Models.__new__(Models)
    models.by_key, models.default = {"de-en": fake, "hf-opus-mt-de-en": hf}, "de-en"
    (shown, key), (shown_hf, key_hf) = shown_choices(models)
    assert key == "de-en" and shown.startswith("__i18n__") and shown.count("__i18n__") == 1
    assert texts.shown(shown, "de") == "Deutsch → Englisch" and texts.shown(shown, "en") == "German → English"
    assert key_hf == "hf-opus-mt-de-en" and shown_hf.startswith("__i18n__") and shown_hf.count("__i18n__") == 1
    assert texts.shown(shown_hf, "de") == "Deutsch → Englisch · opus-mt-de-en, 74M"  # its name and size after it


def test_the_servers_words_stay_on_the_server():
    said = set(texts.catalogue("en")["said"])
    assert {"th_change", "lh_common", "curve_train", "abl_same"} <= said and not said & set(texts.labels("en"))
    assert not said & set(texts.I18N.translations_dict["de"])
    assert not {f"label.{k}" for k in said} & set(texts.payload()["de"])
    assert texts.said("th_change", "de") == "Änderung" and texts.words("de")["th_change"] == "Änderung"


def test_the_librarys_notes_and_errors_reach_a_german_page_in_german(tiny_translator, monkeypatch):
    """What was cut from an input (a toast) and why an input cannot be read (a gr.Error) are the library's English
    for programs, said in the page's language to a page's user (attention_lens/shell/inputs.py told: NOTES and SAID)."""
    import gradio as gr
    from gradio.context import LocalContext

    from attention_lens.translate import handlers as decoding_views
    from transformer.decode import decoding, language
    warned = []
    monkeypatch.setattr(gr, "Warning", lambda text, *a, **k: warned.append(text))
    long_text = "ein Hund " * (decoding.MAX_INPUT_CHARS // 9 + 20)
    for lang, cut in (("de", "gekürzt"), ("en", "was cut from")):
        token = LocalContext.request.set(request(lang))
        try:
            warned.clear()
            topk = decoding_views.start(tiny_translator, long_text)[3]
            assert any(cut in w for w in warned), warned
            assert any("was cut from" in n for n in topk["notes"])  # programs read English
            if lang == "de":
                assert all(language.detect(w)[0] == "de" for w in warned), warned
            with pytest.raises(gr.Error, match="Tippe einen Satz" if lang == "de" else "type a sentence"):
                decoding_views.start(tiny_translator, "   ")
        finally:
            LocalContext.request.reset(token)


def gradio_german() -> dict[str, set[str]]:
    """Gradio's built German locale: its namespaces and each one's keys (read from the frontend's de-*.js)."""
    import gradio
    (path,) = (Path(gradio.__file__).parent / "templates/frontend/assets").glob("de-*.js")
    js = path.read_text(encoding="utf-8")
    names = dict(re.findall(r"\b(\w+) as (\w+)\b", js.rsplit("export{", 1)[1]))  # variable -> namespace
    flat = {v: re.search(rf"\b{re.escape(v)}=\{{([^{{}}]*)\}}", js) for v in names}  # a namespace of strings
    return {names[v]: set(re.findall(r"(\w+):`", m.group(1))) for v, m in flat.items() if m}


def test_every_word_of_gradios_status_line_is_german_on_the_german_page():
    """The status line (and its screen-reader announcement: "In queue: 1 of 1" while a class waits) says
    Gradio's own words: each key its built tracker asks for is in Gradio's German locale or in ours."""
    import gradio
    (tracker,) = (Path(gradio.__file__).parent / "templates/frontend/assets").glob("statustracker-*.js")
    keys = set(re.findall(r"i18n\(`([\w.]+)`\)", tracker.read_text(encoding="utf-8")))
    assert "status.queue_position" in keys and len(keys) >= 4, keys
    de = gradio_german()
    assert "loading" in de["common"], de.get("common")
    lacking = sorted(k for k in keys if k.split(".", 1)[1] not in de.get(k.split(".", 1)[0], set()))
    assert lacking and set(lacking) <= set(texts.GRADIO_OWN["de"]), lacking
    for k in texts.GRADIO_OWN["de"]:
        assert set(re.findall(r"\{\w+\}", texts.GRADIO_OWN["de"][k])) == set(re.findall(r"\{\w+\}",
                                                                                        texts.GRADIO_OWN["en"][k]))
