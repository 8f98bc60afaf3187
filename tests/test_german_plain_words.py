"""The German page for a 16-year-old (attention_lens/shell/texts/de.toml): what it shows before "genau" is pressed
(every label and said text, every plain version) names no shorthand a student stops at: no "Top-k", "FFN" or "LN", no
"Kreuz" as a button's word, no "Ähnlichkeit, kleiner", no "Tippe auf der Karte auf ihr Wortstück"; "Strahlsuche",
the taught term that stays, is a glossary word (assets/glossary.js) with its meaning in both languages."""
from __future__ import annotations

import re
import tomllib

from attention_lens.shell import texts
from attention_lens.shell.components import asset

STOPS = ["Top-k", "FFN", "LN", "Kreuz", "Ähnlichkeit, kleiner", "Tippe auf der Karte auf ihr Wortstück"]
LETTER = "A-Za-zÄÖÜäöüß"


def read(lang: str) -> dict:
    with open(texts.TEXTS_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


def shown(cat: dict) -> dict[str, str]:
    """Every label and said text, and the plain version of every explanation."""
    out = {}
    for table in ("label", "said"):
        out |= {f"{table}.{k}": v for k, v in cat.get(table, {}).items() if isinstance(v, str)}

    def walk(node, path):
        for k, v in node.items():
            if isinstance(v, dict):
                if "plain" in v and isinstance(v["plain"], str):
                    out[f"{path}{k}.plain"] = v["plain"]
                walk(v, f"{path}{k}.")
    walk({k: v for k, v in cat.items() if k not in ("label", "said", "taught", "names")}, "")
    return out


def test_the_german_page_names_no_shorthand_a_student_stops_at():
    found = {}
    for key, text in shown(read("de")).items():
        for stop in STOPS:  # a word of its own: "Kreuz-Aufmerksamkeit" is a word, "Kreuz" alone is not
            if re.search(rf"(?<![{LETTER}-]){re.escape(stop)}(?![{LETTER}-])", text):
                found.setdefault(stop, []).append(key)
    assert found == {}, found


def test_the_beam_search_term_stays_as_a_glossary_word():
    de, en = read("de"), read("en")
    assert de["label"]["gloss_beam_search"] == "Strahlsuche" and en["label"]["gloss_beam_search"] == "beam search"
    for cat in (de, en):
        assert len(cat["glossary"]["beam-search"]["plain"].split()) > 8
    assert '"beam-search"' in asset("shell/glossary.js")
