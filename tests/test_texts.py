"""The page's explanations (issue 39 item 5): one catalogue (attention_lens/shell/texts/en.toml) with a plain version of
every text,
shown by default, and a detailed one. The plain versions hold no formula, symbol or paper, no sentence over 25 words
and at most 3 % rare words (wordfreq) besides at most 10 taught terms, each explained where it first appears; the
detailed versions keep the formulas and papers."""
from __future__ import annotations

import re

from attention_lens.shell import texts
from tests.plain import FORMULA, MAX_RARE, MAX_TAUGHT, long_sentences, rare, words


def plain_texts() -> dict[str, str]:
    return {k: v["plain"] for k, v in texts.flat().items()}


def untagged(t: str) -> str:
    """A text without its tags: a tag's attributes (<span class=hint-keys>) are not read as a formula's `=`."""
    return re.sub(r"<[^>]+>", " ", t)


def test_every_text_has_both_versions_and_the_plain_one_no_formula_or_paper():
    found = texts.flat()
    assert len(found) >= 15 and all(v["plain"].strip() and v["detail"].strip() for v in found.values())
    assert {k: FORMULA.findall(untagged(t)) for k, t in plain_texts().items() if FORMULA.search(untagged(t))} == {}


def test_plain_sentences_are_at_most_25_words():
    assert {k: long_sentences(t) for k, t in plain_texts().items() if long_sentences(t)} == {}


def test_plain_words_are_common_besides_a_few_taught_terms():
    taught = texts.catalogue()["taught"]
    assert len(taught) <= MAX_TAUGHT
    ws = [w for t in plain_texts().values() for w in words(t)]
    odd = rare(ws, taught)
    assert len(ws) > 500 and len(odd) / len(ws) <= MAX_RARE, (f"{len(odd)} of {len(ws)} words rare", sorted(set(odd)))


def test_each_taught_term_is_explained_in_the_text_that_brings_it():
    for term, key in texts.catalogue()["taught"].items():
        assert term in words(texts.text(key)), (term, key)


def test_the_detailed_versions_keep_their_formulas_and_papers():
    detail = {k: v["detail"] for k, v in texts.flat().items()}
    assert "softmax(q·kᵀ/√d_k)" in detail["howto"]
    assert "0.5 · attention + 0.5 · identity" in detail["layers.intro"]
    assert "Abnar & Zuidema 2020" in detail["layers.intro"]
    assert "Michel et al. 2019" in detail["ablation.why"] and "Ferrando et al. 2022" in detail["align.intro"]
    assert "‖w·v·W_O‖ (Kobayashi et al. 2020)" in detail["glossary.contribution"]
    assert "log-probability per piece" in detail["beam.intro"]


def test_explained_markdown_holds_both_versions_the_page_switches_between():
    md = texts.explained("beam.intro")
    assert md.index('<div class="x-plain l-en" lang="en">') < md.index(texts.text("beam.intro")) \
        < md.index('<div class="x-detail l-en" lang="en">')
    assert texts.text("beam.intro", "detail") in md
    for mode in texts.MODES:  # every language too, each in its own div (issue 44)
        assert f'<div class="x-{mode} l-de" lang="de">\n\n{texts.text("beam.intro", mode, "de")}\n\n</div>' in md
    try:
        texts.text("no.such.key")
    except KeyError as e:
        assert "no.such.key" in str(e)
    else:
        raise AssertionError("a missing key must be an error")


def test_the_role_legends_detailed_words_are_the_rule_tables():
    """The Head atlas legend's detailed descriptions are transformer/interpret/roles.py's (one table), each with a plain
    one."""
    from transformer.interpret import roles
    for row in roles.legend():
        assert texts.text(f"role.{row['role']}", "detail") == row["description"], row["role"]
        assert texts.text(f"role.{row['role']}") != row["description"]
