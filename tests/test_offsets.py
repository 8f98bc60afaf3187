"""The translation after each step travels as one text and the end of each step's prefix
(attention_lens/payload.step_texts);
lens.js slices it with JavaScript's String.slice, which counts UTF-16 code units. So the ends count UTF-16 code
units: a character outside the Basic Multilingual Plane (an emoji) is one Python character but two units."""
import json

import pytest

from attention_lens.translate import payload as P
from tests.conftest import DEVICE
from tests.decoders import decode_trajectory
from transformer.decode.decoding import Translator
from transformer.model.tokenizer import Tokenizer

EMOJI = "\U0001F436"  # 🐶, outside the BMP: 2 UTF-16 code units


class PieceTokenizer:
    """decode() joins fixed strings: enough for step_texts, which reads nothing else of a tokenizer."""

    def __init__(self, pieces):
        self.table = pieces

    def decode(self, ids):
        return "".join(self.table[i] for i in ids)


def js_slice(text: str, end: int) -> str:
    """What JavaScript's text.slice(0, end) gives (end in UTF-16 code units), computed through UTF-16 bytes."""
    return text.encode("utf-16-le", "surrogatepass")[:2 * end].decode("utf-16-le", "surrogatepass")


PIECES = {
    "emoji": ["A", " dog", f" {EMOJI}", " runs", " \U0001F44D\U0001F3FD", "."],  # 👍🏽: two astral code points
    "bmp only": ["Ein", " Hund", " läuft", " über", " die", " Straße", "."],
    "lone surrogate": ["a", "\ud800", "b", "\udfff", "c"],  # hostile input can leave one in a decoded text
}


@pytest.mark.parametrize("name", PIECES)
def test_ends_count_utf16_code_units_and_read_back(name):
    tok = PieceTokenizer(PIECES[name])
    ids = list(range(len(PIECES[name])))
    texts = [tok.decode(ids[:t + 1]) for t in range(len(ids))]
    steps = {"n": len(ids), **P.step_texts([tok.decode(ids[:t + 1]) for t in range(len(ids))])}
    assert steps["text"] == texts[-1]
    for t, want in enumerate(texts):
        assert js_slice(steps["text"], steps["ends"][t]) == want  # what lens.js shows at step t
        assert P.step_text(steps, t) == want  # what Python clients read
    astral = sum(ord(c) > 0xFFFF for c in texts[-1])
    assert steps["ends"][-1] == len(texts[-1]) + astral  # not Python's len where there are emoji
    assert json.loads(json.dumps(steps)) == steps  # the payload is JSON (lone surrogates escaped)


def test_texts_that_are_not_prefixes_travel_whole():
    tok = PieceTokenizer([])
    tok.decode = lambda ids: {1: f"a{EMOJI}", 2: "ab"}[len(ids)]  # a later piece may change earlier text
    steps = {"n": 2, **P.step_texts([tok.decode([0]), tok.decode([0, 1])])}
    assert steps == {"n": 2, "texts": [f"a{EMOJI}", "ab"]}
    assert [P.step_text(steps, t) for t in range(2)] == [f"a{EMOJI}", "ab"]


@pytest.fixture()
def emoji_translator(tiny_trained):
    """The tiny model, whose decoded text gets an emoji after every space (a mapping of single characters, so
    each step's text stays a prefix of the next, as for a real tokenizer's emoji pieces)."""
    tr = Translator.load(tiny_trained, device=DEVICE)
    tr.tokenizer = Tokenizer(tr.tokenizer.proto)  # a copy: loaded tokenizers are shared (Tokenizer.shared)
    decode = tr.tokenizer.decode
    tr.tokenizer.decode = lambda ids: decode(ids).replace(" ", f" {EMOJI}")
    return tr


def test_trajectory_payload_reads_back_every_steps_text(emoji_translator):
    tr = emoji_translator
    s = tr.start("Ein Hund rennt.").run()
    assert s.translation.count(EMOJI) >= 2, s.translation
    ids = [p.token for p in s.positions]
    p = json.loads(json.dumps(P.trajectory_payload(s.trajectory())))
    assert "ends" in p["steps"]
    assert decode_trajectory(p)["texts"] == [tr.tokenizer.decode(ids[:t + 1]) for t in range(len(ids))]


@pytest.mark.browser
def test_the_view_shows_each_steps_text_with_an_emoji(emoji_translator):
    from tests.browser import browser, open_app, require_chromium, serve, start
    require_chromium()
    tr = emoji_translator
    text = "Ein Hund rennt."
    s = tr.start(text).run()
    ids = [p.token for p in s.positions]
    want = [tr.tokenizer.decode(ids[:t + 1]) for t in range(len(ids))]
    assert EMOJI in want[-1]
    with serve(tr) as url, browser() as b:
        page = open_app(b, url)
        start(page, text)
        shown = page.evaluate("""(n) => { const v = window.__lens, out = [];
            for (let t = 0; t < n; t++) { v.ctl.goto(t); out.push(v.sync()[0]); } return out; }""", len(ids))
        assert page.errors == []
    assert shown == want
