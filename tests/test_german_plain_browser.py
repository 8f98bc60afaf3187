"""The German page reads plainly for a 16-year-old (issue 58, "What to build" 2), measured over what a reader sees, as
tests/test_plain_page_browser.py measures the English page: in Chromium with locale de-DE at 1280x800, a sentence
started and stepped, every tab after its first action, the plots' titles, the tooltips, the glossary's texts, the
tour's stops and the lesson's tools. Every sentence has at most 25 words; at most 3 % of the words are rare by
wordfreq's German frequencies (Zipf < 3.5) besides the German catalogue's taught terms (at most 10, each explained
in the text that brings it; a term's plural and genitive are the term); no word is English outside the taught terms;
no text key (`lesson_count_0`) is shown.

The user's sentence, the model's output, the pairs of Compare and the beam's hypotheses are data, not explanations:
their words are not counted (inputs, chips, code and plot ticks are not read at all)."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from attention_lens.shell import texts
from tests.browser import open_app
from tests.plain import (
    MAX_RARE,
    MAX_TAUGHT,
    MAX_WORDS,
    Localized,
    data_of,
    lesson_tools,
    rare,
    sentences,
    text_keys,
    walk_page,
    words,
)
from tests.short_texts import GRADIO_ENGLISH, english_words

pytestmark = pytest.mark.browser
LANG = "de"
SENTENCE = "Das Wetter war gestern sehr schlecht."  # as the other walks of the page start
SWITCH = "Sprache · Language"  # the language switch names itself in both languages: a reader of either finds it
GERMAN = {"taste"}  # German words far more common in English (a key of the keyboard: die Taste)
ENDINGS = ("", "e", "en", "es", "n", "s")  # a German noun's endings: a taught term's plural and genitive are the term


def taught_forms() -> set[str]:
    """The German catalogue's taught terms and their inflected forms (Wortstück: Wortstücke, Wortstücks, ...)."""
    return {t + e for t in texts.catalogue(LANG)["taught"] for e in ENDINGS}


@pytest.fixture(scope="module")
def walked(served_browser, translator):
    url, b = served_browser
    page = open_app(Localized(b, "de-DE"), url, 1280, 800)
    said, tour, glossary = walk_page(page, SENTENCE)
    assert page.evaluate("document.getElementById('explain_box')?.explain.lang") == LANG
    assert len(glossary) >= 9 and all(glossary)
    said |= lesson_tools(page)
    data = {w for s in data_of(translator, page, SENTENCE) for lang in ("en", "de") for w in words(s, lang)}
    return page, sorted(said | set(glossary)) + tour, data


def measure(said: list[str], data: set[str]) -> dict:
    taught = taught_forms()
    said = [re.sub(r"▁\S*", " ", t) for t in said]  # a piece (▁quit, a top-k choice) is the model's, not the page's
    ws = [w for t in said for w in words(t, LANG) if w not in data]
    odd = rare(ws, taught, LANG)
    english = [w for t in said if not GRADIO_ENGLISH.match(t) and t != SWITCH
               for w in english_words(t) if w.lower() not in data | taught | GERMAN]
    return {"words": len(ws), "rare": odd, "share": len(odd) / max(1, len(ws)), "english": english,
            "long": [s for t in said for s in sentences(t) if len(s.split()) > MAX_WORDS]}


def test_the_german_page_reads_plainly(walked):
    page, said, data = walked
    m = measure(said, data)
    print(f"\n{len(m['rare'])} of {m['words']} German words rare ({100 * m['share']:.1f} %):",
          Counter(m["rare"]).most_common())
    assert m["words"] > 1000, m["words"]  # every tab was read
    assert m["long"] == [], m["long"]
    assert m["share"] <= MAX_RARE, (f"{len(m['rare'])} of {m['words']} words rare ({100 * m['share']:.1f} %)",
                                    Counter(m["rare"]).most_common())
    assert page.errors == []


def test_no_english_word_outside_the_taught_terms(walked):
    _, said, data = walked
    english = measure(said, data)["english"]
    assert english == [], Counter(english).most_common()


def test_the_taught_terms_are_few_and_each_explained_where_it_first_appears():
    taught = texts.catalogue(LANG)["taught"]
    assert 0 < len(taught) <= MAX_TAUGHT
    for term, key in taught.items():
        assert term in words(texts.text(key, "plain", LANG), LANG), (term, key)


def test_no_text_key_on_the_german_page(walked):
    _, said, _ = walked
    assert any("Ansicht" in t for t in said)  # the lesson's count of views was read
    assert text_keys(said) == []
