"""Which served language a sentence is in, and how much of it the model can read: hints for the user.

`detect` uses py3langid's naive Bayes model (shipped inside the py3langid wheel, no network) cut down to
German, English and "zxx" (py3langid's class for text with no linguistic content, e.g. "asdfgh"). Chosen by
`python -m benchmarks.language` on the Tatoeba test split (10,000 sentences): 99.92 % right overall, 99.33 %
on sentences of 1-3 words, about 0.1 ms a sentence, 0.6-1 s and 48 MB RSS to load. lingua-language-detector
scored 99.70 % / 98.76 % (a 96 MB install, 100 MB RSS). An umlaut/ß rule changed no test answer (one of
5,002 validation sentences), so there is none.
"""
from __future__ import annotations

import re
import threading
import unicodedata

LANGUAGES = {"de": "German", "en": "English"}
UNKNOWN = ""  # detect's code when the text is in neither language (or in none at all)
MAX_CHARS = 500  # only the first MAX_CHARS characters are looked at: bounded work for any input
CONFIDENT = 0.9  # hint() names another language from this confidence on
UNREADABLE = 0.7  # hint() warns from this unreadable_share on
_CLASSES = ("de", "en", "zxx")  # zxx: "no linguistic content"
_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")
_WORD_START = "\u2581"  # SentencePiece's '▁'

_lock = threading.Lock()
_built: dict = {}  # {classes: py3langid.langid.LanguageIdentifier restricted to them}, each built once (_once)


def _restricted(classes):
    """py3langid's model cut down to `classes`: the same cut as py3langid's set_languages, but on an own instance
    that keeps no full model (142 classes, 28 MB) and leaves py3langid's module-level identifier alone."""
    import numpy as np
    from py3langid import langid, modelio
    ptc, pc, all_classes, nextmove, row, output = modelio.load_model(langid.MODEL_DIR / langid.MODEL_FILE)
    cols = [all_classes.index(c) for c in classes]
    return langid.LanguageIdentifier(np.ascontiguousarray(ptc[:, cols]), np.ascontiguousarray(pc[cols]),
                                     list(classes), nextmove, output, norm_probs=True, tk_row=row)


def _once(classes):
    """The identifier restricted to `classes`, built on first use; thread-safe (one build however many ask)."""
    got = _built.get(classes)
    if got is None:
        with _lock:
            got = _built.get(classes)
            if got is None:
                got = _built[classes] = _restricted(classes)
    return got


def load():
    """The identifier restricted to German, English and no language (about 0.6 s the first time)."""
    return _once(_CLASSES)


# other_language chooses among these (py3langid codes): German and English beside languages a student may type.
# It names another language for none of the Tatoeba test split's 10,000 German and English sentences (both sides of
# transformer.train.corpus.tatoeba_split().test, measured 2026-12-02).
WIDE = ("de", "en", "fr", "es", "it", "nl", "pt", "pl", "sv", "da", "no", "fi", "cs", "tr", "ru", "uk", "el",
        "ro", "hu", "hr", "la", "ja", "zh", "ko", "ar", "he", "hi")
OTHER_NAMES = {"fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch", "pt": "Portuguese", "pl": "Polish",
               "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish", "cs": "Czech", "tr": "Turkish",
               "ru": "Russian", "uk": "Ukrainian", "el": "Greek", "ro": "Romanian", "hu": "Hungarian",
               "hr": "Croatian", "la": "Latin", "ja": "Japanese", "zh": "Chinese", "ko": "Korean", "ar": "Arabic",
               "he": "Hebrew", "hi": "Hindi"}
OTHER_CONFIDENT = 0.9  # other_language names a language from this confidence on
OTHER_MIN_LETTERS = 8  # below this, too little to tell ("Hallo!" is many languages)


def warm() -> None:
    """Build both identifiers now (1-3 s on a busy 2-core machine), so that no user's first request pays for them."""
    load()
    _wide_identifier()


def _wide_identifier():
    return _once(WIDE)


def other_language(text: str) -> tuple[str, float] | None:
    """(code, confidence) when `text` looks like a language other than German and English (py3langid over WIDE,
    at least OTHER_CONFIDENT, from OTHER_MIN_LETTERS letters on), else None. Thread-safe."""
    text = _clean(text)
    if sum(ch.isalpha() for ch in text) < OTHER_MIN_LETTERS:
        return None
    code, p = _wide_identifier().rank(text)[0]
    return (code, float(p)) if code not in LANGUAGES and p >= OTHER_CONFIDENT else None


def other_message(code: str, src_lang: str) -> str:
    return (f"This looks like {name(code)}; the models read German and English only (this one reads "
            f"{name(src_lang)}).")


def name(code: str) -> str:
    """'de' -> 'German', 'fr' -> 'French'; an unknown code comes back as it is, '' as 'unknown'."""
    return LANGUAGES.get(code) or OTHER_NAMES.get(code) or code or "unknown"


def _clean(text: str) -> str:
    """The first MAX_CHARS characters as the translator reads them: lone surrogates replaced, control
    characters turned into spaces, format characters (zero-width, bidi marks) dropped, whitespace collapsed."""
    text = text[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")
    text = "".join(" " if unicodedata.category(ch) == "Cc" else ch
                   for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def detect(text: str) -> tuple[str, float]:
    """(code, confidence) of the served language `text` is in: code is "de" or "en", or UNKNOWN ("") with
    confidence 0.0 when the text has no letters, gives the model no evidence, or looks like no language.
    confidence is py3langid's probability of `code` among German, English and no language (0..1); below
    CONFIDENT it is a guess (short sentences: "Hello" -> ("en", 0.58)). Thread-safe."""
    if not isinstance(text, str):
        raise TypeError(f"detect() wants a str, got {type(text).__name__}")
    text = _clean(text)
    if not any(ch.isalpha() for ch in text):
        return UNKNOWN, 0.0
    ranked = load().rank(text)  # [(class, probability)], best first
    (best, p), low = ranked[0], ranked[-1][1]
    if best not in LANGUAGES or p - low < 1e-6:  # "no language", or no feature of the model in the text
        return UNKNOWN, 0.0
    return best, min(1.0, max(0.0, float(p)))


def _unreadable_counts(tokenizer, text: str) -> tuple[int, int]:
    """(unreadable, counted) pieces of the cleaned text; see unreadable_share."""
    ids = tokenizer.encode(_clean(text))
    words, word = [], []  # each word: [(unknown, piece without '▁')] of one word, punctuation left out
    for i, piece in zip(ids, tokenizer.pieces(ids)):
        unknown = i == tokenizer.unk_id or _BYTE_PIECE.fullmatch(piece) is not None
        body = piece[1:] if piece.startswith(_WORD_START) else piece
        wordy = unknown or any(ch.isalnum() for ch in body)
        if word and (piece.startswith(_WORD_START) or not wordy):
            words.append(word)
            word = []
        if wordy:
            word.append((unknown, body))
    words.append(word)
    bad = sum(1 for w in words for unknown, body in w if unknown or (len(w) > 1 and len(body) == 1 and body.isalpha()))
    return bad, sum(len(w) for w in words)


def unreadable_share(tokenizer, text: str) -> float:
    """The share (0..1) of the text's SentencePiece pieces the model cannot read as words, on the first
    MAX_CHARS characters cleaned as the translator cleans them. Counted: pieces holding a letter or digit, and
    unknown pieces; punctuation and a bare '▁' are not counted. Unreadable: '<unk>' (a character outside the
    vocabulary: emoji, Cyrillic, CJK), a byte piece '<0xNN>', or a lone letter inside a word of 2+ pieces
    (the tokenizer had to spell the word out). 0.0 when nothing is counted.

    Measured with checkpoints/de-en/tokenizer.model (`python -m benchmarks.language`): "asdfgh 🙂" 0.83,
    "xkcd qwrtz zzgh" 1.00, "Привет, как дела?" 1.00, "Ich bin müde." 0.00, "I love you" 0.00, "The quick brown
    fox jumps over the lazy dog." 0.27; the Tatoeba test split (5,000 German, 5,000 English sentences): mean
    0.07 / 0.05, 99th percentile 0.43 / 0.37, max 0.64 ("Tom hat oft Alpträume.", whose rare word is spelled out
    letter by letter), the validation split the same (max 0.60). Hence UNREADABLE = 0.7. "Anddicallywning"
    scores 0.50, like a real sentence with one rare word: pieces cannot tell it from one, and detect() takes it
    for English."""
    bad, counted = _unreadable_counts(tokenizer, text)
    return bad / counted if counted else 0.0


def hint(text: str, src_lang: str, tokenizer=None) -> dict | None:
    """A warning for a model that reads `src_lang`, or None when `text` looks like that language (or detect()
    is not CONFIDENT and the pieces are readable). A language neither model reads first (other_language): {"kind":
    "other", "code", "name", "confidence", "message"}; then the other served language: {"kind": "language", "code",
    "name",
    "confidence", "message"}; then, when `tokenizer` is given and unreadable_share >= UNREADABLE: {"kind":
    "unreadable", "share", "message"}. Looks at the first MAX_CHARS characters only; never raises for a str."""
    if not isinstance(text, str) or not (text := _clean(text)):
        return None
    other = other_language(text)
    if other:
        return {"kind": "other", "code": other[0], "name": name(other[0]), "confidence": other[1],
                "message": other_message(other[0], src_lang)}
    code, confidence = detect(text)
    if code and code != src_lang and confidence >= CONFIDENT:
        return {"kind": "language", "code": code, "name": name(code), "confidence": confidence,
                "message": f"This looks like {name(code)}, not {name(src_lang)}."}
    if tokenizer is not None:
        bad, counted = _unreadable_counts(tokenizer, text)
        if counted and bad / counted >= UNREADABLE:
            return {"kind": "unreadable", "share": bad / counted,
                    "message": f"Most of this is not words the model knows ({bad} of {counted} pieces are unknown "
                               f"characters or single letters): expect a poor translation."}
    return None
