"""Measures of plain English for the page's texts (issue 39 item 5), shared by tests/test_texts.py (the catalogue)
and the browser test of the page's own texts: sentences of at most MAX_WORDS words, at most MAX_RARE of the words
rare by wordfreq (Zipf frequency under RARE_ZIPF), not counting the catalogue's taught terms."""
from __future__ import annotations

import re

from wordfreq import tokenize, zipf_frequency

MAX_WORDS = 25
MAX_RARE = 0.03
RARE_ZIPF = 3.5
MAX_TAUGHT = 10
# no formula, no symbol of one, no paper: what a plain text never holds
FORMULA = re.compile(r"[‖√Σ×ᵀ∑^=]|\w_\w|\bq·k|·v\b|\bsoftmax\b|\blog-prob|\bet al\b|\(\w+ (?:&|and) \w+ \d{4}\)|"
                     r"\b(?:19|20)\d\d\b")


def strip_markup(text: str) -> str:
    """Markdown and HTML to their words: tags, emphasis, code marks and headings out."""
    text = re.sub(r"<[^>]+>|\{\w+\}", " ", text)  # tags, and a text's blanks ({dk}: filled in by the page)
    return re.sub(r"[*_`#]+", "", text)


def sentences(text: str) -> list[str]:
    """Sentences: split after . ! ? (and at line breaks, which end a title or a list item)."""
    parts = re.split(r"(?<=[.!?])\s+|\n+", strip_markup(text))
    return [p.strip() for p in parts if re.search(r"[A-Za-z]", p or "")]


def words(text: str) -> list[str]:
    """Words as wordfreq splits them, letters only (numbers, arrows and pieces such as ▁Hund are not words)."""
    ws = tokenize(strip_markup(text).replace("▁", " "), "en")
    return [re.sub(r"'s$", "", w) for w in ws if re.fullmatch(r"[a-z]+(?:'[a-z]+)?", w)]  # word's: word


def rare(ws: list[str], taught=()) -> list[str]:
    """The rare words of `ws`, the taught terms aside."""
    return [w for w in ws if w not in taught and zipf_frequency(w, "en") < RARE_ZIPF]


def long_sentences(text: str) -> list[str]:
    return [s for s in sentences(text) if len(s.split()) > MAX_WORDS]
