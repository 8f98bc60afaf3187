"""The German catalogue of the page's explanations (issue 44): attention_lens/shell/texts/de.toml holds the keys of
attention_lens/shell/texts/en.toml and no others (a key it lacks falls back to English, and
test_no_english_key_is_missing_from_german lists it), every text with the English one's placeholders and markup, every
formula, symbol, paper and number of the English detail version, every text of 4+ words detected as German
(transformer.decode.language.detect), and plain sentences of at most 25 words."""
from __future__ import annotations

import re
import tomllib
import unicodedata

import pytest
from wordfreq import tokenize

from attention_lens.shell import texts
from tests.plain import FORMULA, MAX_WORDS, sentences, strip_markup
from transformer.decode import language

PLACEHOLDER = re.compile(r"\{\w+\}")
TAG = re.compile(r"<[^>]+>")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
SYMBOLS = set("‖√Σ∑×ᵀ·÷≤≥−∞ᵢʰ→←▶◀①②③④⑤^=")  # besides FORMULA's matches: what a formula is written with
ENGLISH_GRAMMAR = {"{s}"}  # placeholders a German text may leave out: "head{s}" is English's plural ending
# texts whose German leaves out an English record: metrics.json's "data" is the training run's own English words
# (data_rows); the German card says what the data is in its own words and points to docs/training.md
RECORDED = {("card.data_value", "detail")}
WORD = re.compile(r"[A-Za-zÄÖÜäöüß]{2,}(?:-[A-Za-zÄÖÜäöüß]+)*")  # a word of two letters or more (d_k, q·k, wᵢ: none)


def read(lang: str) -> dict:
    with open(texts.TEXTS_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


def leaves(node: dict, path: tuple = ()) -> set[str]:
    """Every value's dotted path, the [taught] and [names] tables aside (their terms differ by language)."""
    out = set()
    for k, v in node.items():
        if not path and k in ("taught", "names"):
            continue
        out |= leaves(v, path + (k,)) if isinstance(v, dict) else {".".join(path + (k,))}
    return out


@pytest.fixture(scope="module")
def en() -> dict[str, dict]:
    return texts.flat("en")


@pytest.fixture(scope="module")
def de() -> dict[str, dict]:
    read("de")  # parses, or this fixture's tests fail with the TOML error
    return texts.flat("de")


def pairs(en, de):
    """(key, mode, English, German) of every text both catalogues hold."""
    return [(k, m, en[k][m], de[k][m]) for k in en if k in de for m in texts.MODES]


def test_german_has_no_key_english_lacks():
    assert sorted(leaves(read("de")) - leaves(read("en"))) == []


def test_no_english_key_is_missing_from_german():
    missing = sorted(leaves(read("en")) - leaves(read("de")))
    assert missing == [], f"{len(missing)} English texts have no German version (shown in English): {missing}"


def test_every_text_has_both_versions_and_nothing_else(en, de):
    assert len(de) >= 15 and all(v["plain"].strip() and v["detail"].strip() for v in de.values())
    assert all(set(node) == set(texts.MODES) for node in (texts.entry(k, "de") for k in de))


def test_placeholders_are_the_english_ones(en, de):
    odd = {(k, m): (sorted(set(PLACEHOLDER.findall(e))), sorted(set(PLACEHOLDER.findall(g))))
           for k, m, e, g in pairs(en, de) if (k, m) not in RECORDED and (
           set(PLACEHOLDER.findall(e)) - ENGLISH_GRAMMAR != set(PLACEHOLDER.findall(g)) - ENGLISH_GRAMMAR
           or set(PLACEHOLDER.findall(g)) - set(PLACEHOLDER.findall(e)))}
    assert odd == {}


def markup(t: str) -> tuple:
    """Tags, bold, italics, code marks, headings and line breaks: what must survive translation unchanged."""
    bold = t.count("**")
    return (sorted(TAG.findall(t)), bold, t.replace("**", "").count("*"), t.count("`"),
            len(re.findall(r"^#+ ", t, re.MULTILINE)), t.count("\n"), t[:1] == " ")


def test_markup_is_the_english_one(en, de):
    assert {(k, m): (markup(e), markup(g)) for k, m, e, g in pairs(en, de) if markup(e) != markup(g)} == {}


def formula_tokens(t: str) -> set[str]:
    return (set(FORMULA.findall(t)) | {ch for ch in t if ch in SYMBOLS or unicodedata.category(ch) in ("Sm", "Lm")}
            | set(NUMBER.findall(strip_markup(t))))


def test_detail_versions_keep_every_formula_symbol_paper_and_number(en, de):
    lost = {k: sorted(t for t in formula_tokens(en[k]["detail"]) if t not in de[k]["detail"]) for k in en if k in de}
    assert {k: v for k, v in lost.items() if v} == {}
    assert "softmax(q·kᵀ/√d_k)" in de["howto"]["detail"]
    assert "0.5 · attention + 0.5 · identity" in de["layers.intro"]["detail"]
    assert "‖w·v·W_O‖ (Kobayashi et al. 2020)" in de["glossary.contribution"]["detail"]


def test_plain_versions_hold_no_formula_or_paper(de):
    bare = {k: TAG.sub(" ", v["plain"]) for k, v in de.items()}  # a tag's attributes (class=hint-keys): no formula
    assert {k: FORMULA.findall(t) for k, t in bare.items() if FORMULA.search(t)} == {}


def word_count(t: str) -> int:
    """Words outside tags and placeholders; a token holding a formula's letters (d_k, wᵢvᵢ, q·k) is none."""
    bare = PLACEHOLDER.sub(" ", TAG.sub(" ", t)).replace("*", " ")
    return sum(1 for tok in bare.split() if WORD.fullmatch(tok.strip(".,;:!?()[]'„“”\"…")))


def test_every_text_of_four_words_or_more_is_german(de):
    checked, odd = 0, {}
    for k, v in de.items():
        for m in texts.MODES:
            plain = strip_markup(v[m])
            if word_count(v[m]) >= 4:
                checked += 1
                code, p = language.detect(plain)
                if code != "de":
                    odd[(k, m)] = (code, round(p, 3), plain[:80])
    assert checked >= 80 and odd == {}


def test_plain_sentences_are_at_most_25_words(de):
    long = {k: s for k, v in de.items() for s in sentences(v["plain"]) if len(s.split()) > MAX_WORDS}
    assert long == {}


def test_taught_terms_are_german_words_explained_where_they_first_appear(de):
    taught = read("de")["taught"]
    assert set(taught) >= {"encoder", "decoder"} and all(k in de for k in taught.values())
    for term, key in taught.items():
        assert tokenize(term, "de") == [term], term  # lower case, one word as wordfreq splits it
        assert term in tokenize(strip_markup(de[key]["plain"]), "de"), (term, key)


def shown_by_default(de) -> dict[str, str]:
    """What the German page says before "genau" is pressed: every text's plain version, every label and said text."""
    cat = read("de")
    out = {k: v["plain"] for k, v in de.items()}
    for table in ("label", "said"):
        out |= {f"{table}.{k}": v for k, v in cat.get(table, {}).items() if isinstance(v, str)}
    return out


def test_each_concept_has_one_name_on_the_german_page(de):
    """The [names] glossary (issue 58): a concept is called by its one name (Wortstück, Kopf, Schicht,
    Aufmerksamkeit, Strahlsuche ...) in every plain text and label, never by a synonym ("Stück", "Head", "Ebene",
    "Beam-Search"; an inflected form, or the end of a compound with a hyphen, "Quell-Stück", counts)."""
    names = read("de")["names"]
    assert {"Wortstück", "Kopf", "Schicht", "Aufmerksamkeit"} <= set(names) and all(names.values())
    said = shown_by_default(de)
    letter = "A-Za-zÄÖÜäöüß"
    found = {}
    for name, others in names.items():
        assert any(name in t for t in said.values()), name  # the name itself is used
        for other in others:
            pattern = re.compile(rf"(?<![{letter}]){re.escape(other)}(?:e|s|es|en|n)?(?![{letter}])")
            hits = sorted(k for k, t in said.items() if pattern.search(strip_markup(t)))
            if hits:
                found[f"{other} (say {name})"] = hits
    assert found == {}
