"""The whole page reads plainly by default (issue 39 item 5), measured over what a reader sees: every tab (Translate
after a Start and a few steps, Compare, Head ablation and Beam search after a run, Across layers, Head atlas,
Attention being learned, Model), the plots' titles, the tooltips (the glossary's included) and the tour's stops,
in Chromium at 1280x800. Every sentence has at most 25 words, at most 3 % of the words are rare (wordfreq) besides
the catalogue's taught terms, and no plain text holds a formula; one click on "in detail" shows the precise texts.

The user's sentence, the model's output and pieces, the example sentences and numbers are data, not explanations:
inputs, chips, code and plot ticks are not read, and the words of the sentences decoded are not counted."""
from __future__ import annotations

import re

import pytest

from attention_lens.shell import texts
from tests.browser import open_app
from tests.plain import (
    FORMULA,
    MAX_RARE,
    MAX_TAUGHT,
    MAX_WORDS,
    lesson_tools,
    open_tab,
    rare,
    sentences,
    text_keys,
    walk_page,
    words,
)
from transformer.decode.beam import beam_search

pytestmark = pytest.mark.browser
SENTENCE = "Das Wetter war gestern sehr schlecht."
def data_words(translator, sentences_decoded) -> set[str]:
    """The words of the sentences decoded on the page and of the model's output for them (greedy and beam)."""
    out = set()
    for s in sentences_decoded:
        out |= set(words(s)) | set(words(translator.translate(s)))
        ids = translator.source_ids(s)
        for h in beam_search(translator.model, ids, 4).hypotheses:
            out |= set(words(translator.tokenizer.decode(h.ids)))
    return out


def measure(said: list[str], data: set[str]) -> dict:
    taught = texts.catalogue()["taught"]
    ws = [w for t in said for w in words(t) if w not in data]
    odd = rare(ws, taught)
    return {"words": len(ws), "rare": odd, "share": len(odd) / max(1, len(ws)),
            "long": [s for t in said for s in sentences(t) if len(s.split()) > MAX_WORDS],
            "formulas": [t for t in said if FORMULA.search(t)]}


@pytest.fixture(scope="module")
def walked(served_browser, translator):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    said, tour, glossary = walk_page(page, SENTENCE)
    assert len(glossary) >= 9 and all(glossary)
    pairs = page.evaluate("[...document.querySelectorAll('#compare_a textarea, #compare_b textarea')]"
                          ".map(e => e.value)")
    said |= lesson_tools(page)
    return page, sorted(said | set(glossary)) + tour, data_words(translator, [SENTENCE, *pairs])


def test_the_page_reads_plainly_by_default(walked):
    page, said, data = walked
    m = measure(said, data)
    assert len(texts.catalogue()["taught"]) <= MAX_TAUGHT
    assert m["words"] > 1000, m["words"]  # every tab was read
    assert m["long"] == [], m["long"]
    assert m["formulas"] == [], m["formulas"]
    assert m["share"] <= MAX_RARE, (f"{len(m['rare'])} of {m['words']} words rare ({100 * m['share']:.1f} %)",
                                    sorted(set(m["rare"])))
    assert page.errors == []


def test_no_text_key_on_the_page(walked):
    """Issue 58: the lesson's tools showed `lesson_count_0` where the count of views belongs."""
    _, said, _ = walked
    assert any("view" in t for t in said)  # the lesson's count of views was read
    assert text_keys(said) == []


def test_in_detail_the_precise_texts_are_shown(walked):
    page, _, _ = walked
    page.click("#explain_detail")
    try:
        open_tab(page, "Model")
        card, note = page.inner_text("#model_card"), page.inner_text("#curves_note")
        assert "d_model" in card and "SentencePiece" in card and "How it is built" not in card
        assert "label smoothing" in note and "on purpose" not in note
        assert re.search(r"ε = [\d.]+", note), note
        open_tab(page, "Head atlas")
        assert "Voita et al. 2019" in page.inner_text("#atlas") and "≥" in page.inner_text("#atlas")
        open_tab(page, "Compare")
        assert "minimal pair" in page.inner_text("#compare_intro") and "A − B" in page.inner_text("#compare_intro")
        open_tab(page, "Translate")  # the inside panel's formula, stages and column heads; the map's help and grid
        inside = page.inner_text("#inside")
        assert "softmax(Q·Kᵀ / √dk) · V" in inside and "⑤ Σ wᵢvᵢ" in inside and "out = Σ wᵢvᵢ" in inside, inside
        assert "÷√" in page.inner_text("#inside [data-role=scaledhead]")
        assert "q·k" in page.get_attribute("#inside th[data-tip='inside.th_score_tip']", "title")
        assert "Rows are queries" in page.inner_text("#attention .lens-help")
        assert "layers × " in page.inner_text("#attention [data-role=grid-title]")
    finally:
        page.click("#explain_plain")
        open_tab(page, "Translate")
    assert page.errors == []
