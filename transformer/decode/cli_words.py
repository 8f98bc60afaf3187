"""The command line's words for people in the user's language: `python -m transformer.translate` says its help,
notes and errors in German when the locale's language is German (LC_ALL, LC_MESSAGES or LANG starting with `de`), else
in English. One small catalogue per language, transformer/decode/cli_texts/<lang>.toml, read with tomllib (the library
imports nothing of the app: the page's texts are attention_lens/shell/texts/). A key German lacks is said in English
(`missing` lists them). The library's messages keep their English `message`; `said_note` says a hint's or a caveat's
from its details (its kind and fields) in the language asked for."""
from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path

from .language import name as language_name

CLI_DIR = Path(__file__).parent / "cli_texts"
LANGS = ("en", "de")  # the first: what a missing word falls back to


def cli_lang(env=None) -> str:
    """'de' when the locale's language is German (the first of LC_ALL, LC_MESSAGES, LANG that is set), else 'en'."""
    env = os.environ if env is None else env
    value = next((env[k] for k in ("LC_ALL", "LC_MESSAGES", "LANG") if env.get(k)), "")
    return "de" if value.lower().startswith("de") else "en"


@functools.cache
def catalogue(lang: str) -> dict:
    with open(CLI_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


def said(key: str, lang: str = "en", **fill) -> str:
    """The words of `key` in `lang` (English when German lacks them), {blanks} filled."""
    words = catalogue(lang).get(key)
    if not isinstance(words, str):
        words = catalogue(LANGS[0])[key]
    return words.format(**fill) if fill else words


def missing(lang: str = "de") -> list[str]:
    """The keys of English words that `lang`'s catalogue lacks."""
    own = catalogue(lang)
    return [k for k, v in catalogue(LANGS[0]).items() if isinstance(v, str) and k not in own]


def language(code: str, lang: str = "en") -> str:
    """A language's name in `lang` ('fr' -> 'Französisch' in German)."""
    if lang == LANGS[0]:
        return language_name(code)
    return catalogue(lang).get("lang", {}).get(code, language_name(code))


def said_note(item: dict, src_lang: str, lang: str = "en", of: str = "caveat") -> str:
    """A hint (of="hint": transformer.decode.language.hint) or a caveat (of="caveat": transformer.decode.caveats) in
    `lang`: its own English message, or the catalogue's words for its kind (hint_<kind>, caveat_<kind>) filled with its
    details."""
    key = f"{of}_{item.get('kind')}"
    if lang == LANGS[0] or key not in catalogue(LANGS[0]):
        return item["message"]
    pieces = item.get("pieces")
    return said(key, lang, name=language(item.get("code", ""), lang), src=language(src_lang, lang),
                pct=f"{100 * item.get('share', 0):.0f}", words=item.get("words"), p99_words=item.get("p99_words"),
                p99_pieces=item.get("p99_pieces"), times=item.get("times"),
                pieces="".join(pieces).replace("▁", " ").strip() if isinstance(pieces, list) else pieces,
                chars=" ".join(item.get("characters") or []))
