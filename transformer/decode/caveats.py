"""Honest caveats on an input and its translation: what the model was not made for, said beside the output.

A caveat never blocks a translation; it explains one. Four kinds, each a dict {"kind", "message"} (+ details):
- "long": the source has more words (or pieces) than 99 % of the sentences the model learned from (the
  checkpoint's stored training lengths, transformer.train.lengths);
- "repeating": the output holds the same 1-4 pieces three or more times in a row: a sign that the model is lost;
- "language": the text looks like a language neither model reads (transformer.decode.language.other_language);
- "unknown": characters the vocabulary has no piece for (emoji, symbols, other scripts): named.
Used by the app (beside the translation), the API (`notes`) and `python -m transformer.translate` (stderr).
"""
from __future__ import annotations

import unicodedata

from . import language as L

MAX_REPEAT_N = 4  # the longest run of pieces looked for
MIN_REPEATS = 3  # "three times or more in a row"
MAX_NAMED = 8  # unknown characters named at most


def repetition(pieces: list[str]) -> tuple[list[str], int] | None:
    """The first run of the same 1..MAX_REPEAT_N pieces MIN_REPEATS or more times in a row: (the pieces, times)."""
    for start in range(len(pieces)):
        for n in range(1, MAX_REPEAT_N + 1):
            unit, times = pieces[start:start + n], 1
            if len(unit) < n:
                break
            while pieces[start + times * n:start + (times + 1) * n] == unit:
                times += 1
            if times >= MIN_REPEATS:
                return unit, times
    return None


def unknown_characters(tokenizer, text: str) -> list[str]:
    """The characters of `text` (in order, once each) that the tokenizer turns into <unk>."""
    seen, out = set(), []
    for ch in L._clean(text):
        if ch in seen or ch.isspace():
            continue
        seen.add(ch)
        if tokenizer.unk_id in tokenizer.encode(ch):
            out.append(ch)
    return out


def describe_char(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"{ch} ({name.lower()})" if name else repr(ch)


def caveats(text: str, source_pieces: int, output_pieces: list[str], tokenizer, src_lang: str,
            lengths: dict | None) -> list[dict]:
    """Every caveat that applies, in the order above. `source_pieces`: the pieces the model read (without </s>);
    `output_pieces`: the pieces it wrote (without <s>/</s>); `lengths`: the checkpoint's record or None."""
    out = []
    words = len(text.split())
    if lengths:
        w99, p99 = lengths["words"]["p99"], lengths["pieces"]["p99"]
        if words > w99 or source_pieces > p99:
            out.append({"kind": "long", "words": words, "pieces": source_pieces, "p99_words": w99,
                        "p99_pieces": p99, "message": (
                            f"This sentence is long ({words} words, {source_pieces} pieces): 99 % of the sentences "
                            f"the model learned from have at most {w99} words ({p99} pieces). Expect parts to be "
                            "left out or repeated.")})
    rep = repetition(output_pieces)
    if rep:
        unit, times = rep
        shown = "".join(unit).replace("\u2581", " ").strip() or " ".join(unit)
        out.append({"kind": "repeating", "pieces": unit, "times": times, "message": (
            f"The model is repeating itself (\u201c{shown}\u201d {times} times in a row), a sign that it is lost.")})
    other = L.other_language(text)
    if other:
        code, p = other
        out.append({"kind": "language", "code": code, "name": L.name(code), "confidence": round(p, 3),
                    "message": L.other_message(code, src_lang)})
    unknown = unknown_characters(tokenizer, text)
    if unknown:
        named = ", ".join(describe_char(ch) for ch in unknown[:MAX_NAMED])
        more = f" and {len(unknown) - MAX_NAMED} more" if len(unknown) > MAX_NAMED else ""
        out.append({"kind": "unknown", "characters": unknown, "message": (
            f"The model has no piece for {named}{more}: it reads {'them' if len(unknown) > 1 else 'it'} as "
            "<unk> (unknown).")})
    return out
