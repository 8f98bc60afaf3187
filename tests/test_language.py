"""transformer.decode.language: detect() tells German from English (hand-written sentences, not the data), says
"unknown" for junk, is thread-safe and loads once; unreadable_share's definition; hint() never raises."""
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer.decode import language as L
from transformer.model.checkpoint import DEFAULT_CHECKPOINT
from transformer.model.tokenizer import Tokenizer

GERMAN = ["Ich bin müde.", "Wo ist der Bahnhof?", "Morgen fahren wir mit dem Zug nach Hamburg.",
          "Kannst du mir bitte das Salz geben?", "Der Hund schläft unter dem Tisch.", "Guten Morgen",
          "Das Wetter ist heute wirklich schön.", "Ich liebe dich."]
ENGLISH = ["I love you", "Where is the station?", "Tomorrow we are taking the train to Hamburg.",
           "Could you pass me the salt, please?", "The dog is sleeping under the table.", "Good morning",
           "The weather is really nice today.", "How are you?"]
JUNK = ["asdfgh 🙂", "12345", "", "🙂🙂", "   ", "!!!", "xkcd qwrtz zzgh", "3.14 + 2 = 5.14"]
OTHER = ["Bonjour, je suis fatigué.", "¿Dónde está la estación?", "Dov'è la stazione?", "Waar is het station?",
         "Привет, как дела?", "你好", "lorem ipsum dolor sit amet"]
HOSTILE = ["\ud800" * 1000, "\x00" * 10_000, "a\u200b" * 5000, "🙂" * 1_000_000, "Ich bin müde. " * 100_000,
           "<unk> <s></s> ▁▁▁", "\u202e\u2066 reversed", "A" * 3_000_000, "\ufffd" * 600]
FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
any_text = st.one_of(st.text(st.characters(exclude_categories=()), max_size=80),  # lone surrogates included
                     st.text(st.sampled_from("Ich bin müde I love you 🙂\x00\u200b\ud800<unk>▁ .,!?"), max_size=800))


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.load(DEFAULT_CHECKPOINT / "tokenizer.model")


@pytest.mark.parametrize("text", GERMAN)
def test_german_is_german(text):
    code, confidence = L.detect(text)
    assert code == "de" and confidence >= L.CONFIDENT, (text, code, confidence)


@pytest.mark.parametrize("text", ENGLISH)
def test_english_is_english(text):
    code, confidence = L.detect(text)
    assert code == "en" and confidence >= L.CONFIDENT, (text, code, confidence)


@pytest.mark.parametrize("text", JUNK)
def test_junk_is_unknown_with_low_confidence(text):
    assert L.detect(text) == (L.UNKNOWN, 0.0)


def test_short_guesses_stay_below_confident():
    code, confidence = L.detect("Hello")  # a word several languages share: a guess, not a claim
    assert code in L.LANGUAGES and confidence < L.CONFIDENT


@pytest.mark.parametrize("text", OTHER + HOSTILE)
def test_answers_only_the_served_languages(text):
    code, confidence = L.detect(text)
    assert code in ("de", "en", L.UNKNOWN) and 0.0 <= confidence <= 1.0
    assert isinstance(code, str) and isinstance(confidence, float)


@FUZZ
@given(any_text)
def test_detect_any_text(text):
    code, confidence = L.detect(text)
    assert code in ("de", "en", L.UNKNOWN) and 0.0 <= confidence <= 1.0
    assert (code == L.UNKNOWN) <= (confidence == 0.0)


def test_leaves_py3langids_global_identifier_alone():
    from py3langid import langid
    L.detect("Ich bin müde.")
    assert langid.IDENTIFIER is None or "fr" in langid.IDENTIFIER.nb_classes  # never built nor restricted by us


def test_detect_wants_a_str():
    with pytest.raises(TypeError):
        L.detect(None)


def test_names():
    assert L.LANGUAGES == {"de": "German", "en": "English"}
    assert (L.name("de"), L.name("en"), L.name(""), L.name("fr"), L.name("xx")) == ("German", "English", "unknown",
                                                                    "French", "xx")


def test_threads_load_once_and_agree_with_serial(monkeypatch):
    from py3langid import modelio
    loads, real = [], modelio.load_model

    def counting(path):
        loads.append(path)
        time.sleep(0.2)  # widen the window in which the other threads ask for the model
        return real(path)
    monkeypatch.setattr(modelio, "load_model", counting)
    monkeypatch.setattr(L, "_built", {})
    texts = (GERMAN + ENGLISH + JUNK + OTHER) * 5
    results, start = [None] * 8, threading.Barrier(8)

    def work(k):
        start.wait()
        results[k] = [L.detect(t) for t in texts]
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1
    serial = [L.detect(t) for t in texts]
    assert all(r == serial for r in results)


def test_detect_is_fast():
    L.load()
    t0 = time.perf_counter()
    for text in (GERMAN + ENGLISH) * 10:
        L.detect(text)
    assert (time.perf_counter() - t0) / 160 < 0.005  # a few ms a sentence at most (measured: ~0.1 ms)


class FakeTokenizer:
    """Pieces chosen by hand: encode returns indices into `pieces`; index 1 is '<unk>' as in Tokenizer."""
    unk_id = 1

    def __init__(self, pieces):
        self.all = ["<pad>", "<unk>"] + pieces
        self.ids = [1 if p == "<unk>" else 2 + k for k, p in enumerate(pieces)]

    def encode(self, text):
        return list(self.ids) if text else []

    def pieces(self, ids):
        return [self.all[i] for i in ids]


@pytest.mark.parametrize("pieces, share", [
    (["▁Ich", "▁bin", "."], 0.0),
    (["▁a", "▁I", "'", "m"], 0.0),  # one-letter words are words; punctuation is not counted
    (["▁be", "t", "r", "ü", "g", "t"], 5 / 6),  # a word spelled out letter by letter
    (["▁", "<unk>", "▁Hund"], 1 / 2),  # the bare '▁' before an unknown character is not counted
    (["▁x", "<0xF0>", "<0x9F>"], 1.0),  # byte pieces; 'x' is a lone letter inside a 3-piece word
    (["▁12", "3", "4"], 0.0),  # digits are not letters
    (["▁", ".", "!"], 0.0),  # nothing counted
])
def test_unreadable_share_definition(pieces, share):
    assert L.unreadable_share(FakeTokenizer(pieces), "text") == pytest.approx(share)


@pytest.mark.parametrize("text", ["asdfgh 🙂", "xkcd qwrtz zzgh", "🙂🙂", "Привет, как дела?", "sdfsdf sdfsdf"])
def test_junk_is_unreadable(tok, text):
    assert L.unreadable_share(tok, text) >= L.UNREADABLE


@pytest.mark.parametrize("text", GERMAN + ENGLISH + ["12345", "The quick brown fox jumps over the lazy dog."])
def test_sentences_are_readable(tok, text):
    assert L.unreadable_share(tok, text) < L.UNREADABLE


def test_hint_language(tok):
    for tokenizer in (None, tok):
        h = L.hint("Where is the station?", "de", tokenizer)
        assert h["kind"] == "language" and h["code"] == "en" and h["name"] == "English"
        assert L.CONFIDENT <= h["confidence"] <= 1.0 and h["message"] == "This looks like English, not German."
        h = L.hint("Wo ist der Bahnhof?", "en", tokenizer)
        assert (h["kind"], h["code"], h["message"]) == ("language", "de", "This looks like German, not English.")


def test_hint_none_for_the_source_language_or_a_guess(tok):
    for tokenizer in (None, tok):
        assert L.hint("Wo ist der Bahnhof?", "de", tokenizer) is None
        assert L.hint("Where is the station?", "en", tokenizer) is None
        assert L.hint("Hello", "de", tokenizer) is None  # not CONFIDENT, readable
        assert L.hint("", "de", tokenizer) is None and L.hint("   ", "de", tokenizer) is None


def test_hint_unreadable(tok):
    h = L.hint("asdfgh 🙂", "de", tok)
    assert h["kind"] == "unreadable" and L.UNREADABLE <= h["share"] <= 1.0
    assert h["message"].startswith("Most of this is not words the model knows") and "poor translation" in h["message"]
    assert L.hint("asdfgh 🙂", "de") is None  # without a tokenizer: unknown language, nothing to say


@pytest.mark.parametrize("text", HOSTILE + JUNK + OTHER)
def test_hint_bounded_and_never_raises(tok, text):
    L.load(), L._wide_identifier()  # (built once per process: not part of one hint's time)
    t0 = time.perf_counter()
    for tokenizer in (None, tok):
        h = L.hint(text, "de", tokenizer)
        assert h is None or h["kind"] in ("other", "language", "unreadable")
        assert 0.0 <= L.unreadable_share(tok, text) <= 1.0
    assert time.perf_counter() - t0 < 1.0


@FUZZ
@given(any_text, st.sampled_from(["de", "en", "", "xx"]))
def test_hint_any_text(tok, text, src):
    h = L.hint(text, src, tok)
    assert h is None or (h["kind"] in ("language", "unreadable") and isinstance(h["message"], str))


def test_hint_not_a_str():
    assert L.hint(None, "de") is None and L.hint(b"Where is the station?", "de") is None


@pytest.mark.parametrize("text, code, called", [
    ("Je voudrais un café, s'il vous plaît.", "fr", "French"), ("¿Dónde está la estación de tren?", "es", "Spanish"),
    ("Dov'è la stazione dei treni?", "it", "Italian"), ("Waar is het station?", "nl", "Dutch")])
def test_a_language_neither_model_reads_is_named(tok, text, code, called):
    """The classroom issue's caveat (c): "This looks like French; the models read German and English only"."""
    assert L.other_language(text)[0] == code
    for src in ("de", "en"):
        h = L.hint(text, src, tok)
        assert h["kind"] == "other" and h["code"] == code
        assert h["message"] == (f"This looks like {called}; the models read German and English only (this one reads "
                                f"{L.name(src)}).")


def test_german_and_english_are_never_taken_for_another_language():
    """None of the Tatoeba-like everyday sentences here, nor the short ones, is named as a third language."""
    for text in ["Ich bin müde.", "Das Wetter war gestern sehr schlecht.", "I know that he is coming tomorrow.",
                 "Tom ist ein guter Koch.", "Hallo!", "Where is the station?", "Wir haben den Film gesehen.",
                 "She calls her mother every day."]:
        assert L.other_language(text) is None, text
