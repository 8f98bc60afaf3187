"""Hostile input: odd text through the handlers and the Translator, out-of-range UI values through the
handlers and through gradio_client, and script-like text in headless Chromium.

Every hostile text must give a translation (a str) or a gr.Error / ValueError whose message is one of
the expected ones; nothing else may be raised, and the text reaches the tokenizer bounded to
MAX_INPUT_CHARS. Tests whose docstrings say "Regression" guard bugs found and fixed earlier; each docstring
says what went wrong before the fix.
"""
import json
import os
import unicodedata
import warnings

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import httpx
import pytest

from attention_lens.shell import api
from attention_lens.shell.inputs import TOPK
from attention_lens.translate import handlers as decoding_views
from tests.conftest import DEVICE
from transformer.decode.decoding import MAX_INPUT_CHARS, Translator, clean_text

TEXT, EMPTY, TYPE, ANY = "text", "empty", "type", "any"
MESSAGES = {EMPTY: "input is empty", TYPE: "input must be text"}

# (id, input, what must happen): TEXT = a translation; EMPTY / TYPE = an error with that message;
# ANY = either a translation or one of the expected messages.
HOSTILE = [
    ("empty", "", EMPTY),
    ("space", " ", EMPTY),
    ("ascii-whitespace", "\t\n\r \x0b\x0c", EMPTY),
    ("unicode-spaces", "\u00a0\u2003\u3000\u2028\u2029\u1680", EMPTY),
    ("zero-width-only", "\u200b\u200c\u200d\u2060\ufeff", EMPTY),
    ("nul", "\x00", EMPTY),
    ("many-nuls", "\x00" * 5000, EMPTY),
    ("bidi-marks-only", "\u202e\u202d\u200e\u200f\u2066\u2069", EMPTY),
    ("100k-chars", "x" * 100_000, TEXT),
    # leading whitespace is dropped before the 2000-character cut
    ("100k-spaces-then-word", " " * 100_000 + "Hund", ANY),
    ("long-word-5000", "a" * 5000, TEXT),
    ("long-compound", "Hund" * 1250, TEXT),
    ("emoji", "🐶🏃‍♂️❄️🇩🇪", TEXT),
    ("emoji-in-sentence", "Ein 🐕 rennt 🏃 durch den ❄️.", TEXT),
    ("emoji-3000", "🐶" * 3000, TEXT),
    ("split-surrogate-pair", "\ud83d\udc36 Hund", TEXT),
    ("arabic", "كلب يركض في الثلج", TEXT),
    ("hebrew", "כלב רץ בשלג", TEXT),
    ("rlo", "\u202eEin Hund rennt.\u202c", TEXT),
    ("lro-rle-isolates", "\u202d\u202aEin\u202c \u2067Hund\u2069 rennt\u202c", TEXT),
    ("zero-width-inside", "Ein\u200b Hu\u200dnd\u2060 ren\ufeffnt\u00ad.", TEXT),
    ("control-chars", "\x01\x02\x1b[31mEin Hund\x1b[0m\x7f\x08\x85", TEXT),
    ("nul-inside", "Ein\x00Hund\x00rennt", TEXT),
    ("lone-surrogate", "\ud800", TEXT),
    ("lone-surrogates-around", "\udfffEin Hund\ud800", TEXT),
    ("script", "<script>alert(1)</script>", TEXT),
    ("img-onerror", '<img src=x onerror="alert(1)">', TEXT),
    ("svg-onload", "<svg onload=alert(1)>", TEXT),
    ("html-tags", "<b>fett</b> <i>kursiv</i><br><a href='javascript:alert(1)'>x</a> &lt;&amp;&#0;", TEXT),
    ("plotly-templates", "%{x} %{y:.2f} %{customdata[0]} %{text}<extra></extra>", TEXT),
    ("latex", "$x^2$ $$\\int_0^1$$", TEXT),
    ("markdown", "**fett** __unter__ *kursiv* ~~weg~~ # Titel\n> Zitat\n- Liste [a](http://x)", TEXT),
    ("backticks", "```python\nimport os\n``` `inline`", TEXT),
    ("pipes", "| a | b |\n|---|---|\n| 1 | 2 |", TEXT),
    ("chinese", "一只狗在雪地里奔跑。", TEXT),
    ("russian", "Собака бежит по снегу.", TEXT),
    ("greek", "Ένας σκύλος τρέχει στο χιόνι.", TEXT),
    ("hindi", "एक कुत्ता बर्फ में दौड़ता है।", TEXT),
    ("japanese-korean", "犬が雪の中を走る 개가 눈 속을 달린다", TEXT),
    ("numbers-only", "1234567890", TEXT),
    ("number-forms", "3,14159 -42 1e308 NaN Infinity 0x1F ½ ² Ⅻ ٣", TEXT),
    ("newlines-tabs", "Ein\r\nHund\trennt\n\ndurch\rden\u2028Schnee\u2029.", TEXT),
    ("combining", "Hu\u0308nd e\u0301\u0301\u0301 n\u0303", TEXT),
    ("zalgo", "H̷̢̛̛̛̛̛̛̛̛u̵̧̧̧̧n̶̨̨̨d̸̡̡", TEXT),
    ("combining-only", "\u0301\u0308\u0327", TEXT),
    ("many-short-words", "a " * 20_000, TEXT),
    ("repeated-sentence", "Ein Hund rennt. " * 300, TEXT),
    ("punctuation-line", "!?.,;:-_()[]{}<>\"'/\\@#$%^&*+=~`|§°", TEXT),
    ("dots-3000", "." * 3000, TEXT),
    ("sql", "'; DROP TABLE users; -- 1' OR '1'='1", TEXT),
    ("json", '{"data": [1, 2], "fn_index": 0, "session_hash": null, "__proto__": {}}', TEXT),
    ("url", "https://example.com/a?q=<script>&x=1#frag javascript:alert(1)", TEXT),
    ("bytes-like", "b'\\xff\\xfe\\x00' \\u0000 \\x1b %00 %ff \\N{NULL}", TEXT),
    ("format-strings", "{0} {} %s %d {{}} ${HOME} $(rm -rf /) {__class__}", TEXT),
    ("path", "../../etc/passwd C:\\Windows\\system32", TEXT),
    ("private-unassigned", "\ue000\U0010ffff\U000e0001\uffff", TEXT),
    ("sentencepiece-unk", "<unk> <s> </s> <pad>", TEXT),
    ("not-str-none", None, TYPE),
    ("not-str-int", 123, TYPE),
    ("not-str-bytes", b"Ein Hund", TYPE),
    ("not-str-list", ["Ein", "Hund"], TYPE),
]
assert len(HOSTILE) >= 40 and len({h[0] for h in HOSTILE}) == len(HOSTILE)


def outcome(fn, text):
    """('text', result) or ('error', message); anything other than a gr.Error / ValueError propagates."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "text", fn(text)
    except gr.Error as e:
        return "error", e.message
    except ValueError as e:
        return "error", str(e)


def check(expect, kind, value):
    if kind == "text":
        assert expect in (TEXT, ANY), f"translated, but expected an error {MESSAGES[expect]!r}"
        assert isinstance(value, str)
    else:
        allowed = list(MESSAGES.values()) if expect == ANY else [MESSAGES.get(expect, "<a translation>")]
        assert any(m in value for m in allowed), f"unexpected error message {value!r}; wanted one of {allowed}"


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


@pytest.mark.parametrize("name,text,expect", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_text_through_handlers_and_translate(tr, name, text, expect):
    def through_handlers(t):
        state, _, payload, topk = decoding_views.start(tr, t)
        assert payload["cursor"] == 0 and payload["target"] == ["<s>"]
        state, translation, payload, topk = decoding_views.run(tr, state)
        assert payload["done"] and topk["done"]
        assert payload["source"] == tr.tokenizer.pieces(state.source_ids)
        json.dumps(payload, ensure_ascii=False).encode("utf-8")  # what Gradio sends: serialisable, no surrogates
        json.dumps(topk, ensure_ascii=False).encode("utf-8")
        return translation

    kind_a, a = outcome(through_handlers, text)
    kind_b, b = outcome(tr.translate, text)
    check(expect, kind_a, a)
    check(expect, kind_b, b)
    assert (kind_a, a) == (kind_b, b)  # stepping in the app gives exactly Translator.translate's answer


def test_input_is_bounded_before_tokenising(tr, monkeypatch):
    """Everything that reaches SentencePiece, by any path, is at most MAX_INPUT_CHARS characters."""
    seen = []
    sp, enc = tr.tokenizer.sp, tr.tokenizer.sp.encode

    def recording(x, *a, **k):
        seen.extend([len(x)] if isinstance(x, str) else [len(s) for s in x])
        return enc(x, *a, **k)

    monkeypatch.setattr(sp, "encode", recording, raising=False)
    texts = [t for _, t, e in HOSTILE if isinstance(t, str)] + ["Ein Hund " * 10_000, "ä" * (MAX_INPUT_CHARS + 1)]
    for t in texts:
        outcome(lambda x: decoding_views.run(tr, decoding_views.start(tr, x)[0]), t)
        outcome(tr.translate, t)
        outcome(lambda x: decoding_views.reference(tr, "Ein Hund rennt.", x), t)
        outcome(lambda x: decoding_views.reference(tr, x, "A dog runs."), t)
        outcome(lambda x: api.api_attention(tr, x), t)
    outcome(lambda x: tr.translate_batch(x), texts)
    assert seen, "the tokenizer was never called: the recording hook is in the wrong place"
    assert max(seen) <= MAX_INPUT_CHARS
    assert MAX_INPUT_CHARS in seen  # the long inputs were cut to the bound, not dropped


def test_clean_text_output_is_bounded_and_has_no_control_or_format_characters():
    for _, t, _ in HOSTILE:
        if not isinstance(t, str):
            continue
        try:
            c = clean_text(t)
        except ValueError as e:
            assert "input is empty" in str(e)
            continue
        assert 0 < len(c) <= MAX_INPUT_CHARS and c == c.strip()
        c.encode("utf-8")  # no lone surrogates left
        assert not [ch for ch in c if unicodedata.category(ch) in ("Cc", "Cf", "Cs")]


def test_long_input_is_cut_with_a_note(tr):
    """What was cut is reported to the request (notes), not through the process-wide warnings module."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes = []
        tr.source_ids("x" * 100_000, notes)
        session = tr.start("Ein Hund rennt. " * 100)
    assert caught == []
    assert any(f"to {MAX_INPUT_CHARS} characters" in n for n in notes)
    assert any("the model's limit" in n for n in session.notes)


@pytest.mark.parametrize("text", ["▁", "\ufffd", "▁ ▁ \ufffd"], ids=["meta-space", "replacement-char", "both"])
def test_text_that_tokenises_to_nothing_is_rejected_as_empty(tr, text):
    """Regression (Translator.source_ids): text made only of U+2581 '▁' (SentencePiece's space marker)
    or U+FFFD passes clean_text but encodes to no pieces; the model used to 'translate' a source of only
    </s> and invent a sentence. source_ids now rejects it as empty."""
    with pytest.raises(gr.Error, match="input is empty"):
        decoding_views.start(tr, text)
    with pytest.raises(ValueError, match="input is empty"):
        tr.translate(text)


# -- out-of-range UI values through the handlers ----------------------------------------------------

BAD_STEP = [-1, -10**9, 10**9, 10**100, 2.5, -0.5, float("nan"), float("inf"), float("-inf"), "1", None, True, [1]]
BAD_K = [0, 21, 10**9, 10**100, -1, -10**9, 2.5, float("nan"), float("inf"), "3", None, True, [8]]
BAD_PIECES = [(123, "force needs one piece"), (None, "force needs one piece"), (3.5, "force needs one piece"),
              (["▁A"], "force needs one piece"), (b"A", "force needs one piece"), (True, "force needs one piece"),
              ("", "force needs one piece"), ("A" * 101, "force needs one piece"),
              ("x" * 100_000, "force needs one piece"), ("zz-no-such-piece", "is not a piece of the vocabulary"),
              ("▁A▁dog", "is not a piece of the vocabulary"), ("\x00", "is not a piece of the vocabulary"),
              ("<script>", "is not a piece of the vocabulary"), ("<s>", "cannot force the special piece"),
              ("<pad>", "cannot force the special piece")]


@pytest.fixture()
def running(tr):
    """A session run to the end and stepped back to 1, so goto has history 0..n."""
    s = decoding_views.run(tr, decoding_views.start(tr, "Ein Hund rennt.")[0])[0]
    return decoding_views.goto(tr, s, 1)[0]


def still_works(tr, state, text="Ein Hund rennt."):
    _s, translation, payload, _ = decoding_views.run(tr, state)
    assert translation == tr.translate(text) and payload["done"]
    assert api.api_translate(tr, "Eine Katze schläft.") == tr.translate("Eine Katze schläft.")


@pytest.mark.parametrize("i", BAD_STEP, ids=repr)
def test_goto_out_of_range_is_rejected(tr, running, i):
    with pytest.raises(gr.Error, match="step index must be an integer from 0 to"):
        decoding_views.goto(tr, running, i)
    assert running.cursor == 1
    still_works(tr, running)


@pytest.mark.parametrize("k", BAD_K, ids=repr)
def test_k_out_of_range_is_rejected_by_every_handler(tr, running, k):
    calls = [lambda: decoding_views.start(tr, "Ein Hund rennt.", k), lambda: decoding_views.step(tr, running, k),
             lambda: decoding_views.run(tr, running, k), lambda: decoding_views.back(tr, running, k),
             lambda: decoding_views.reset(tr, running, k),
             lambda: decoding_views.goto(tr, running, 0, k), lambda: decoding_views.step_view(tr, running, k),
             lambda: decoding_views.force(tr, running, "</s>", k)]
    for call in calls:
        with pytest.raises(gr.Error, match="top-k must be an integer from 1 to 20"):
            call()
    assert running.cursor == 1
    still_works(tr, running)


@pytest.mark.parametrize("piece,message", BAD_PIECES, ids=[repr(p)[:24] for p, _ in BAD_PIECES])
def test_force_bad_piece_is_rejected(tr, running, piece, message):
    with pytest.raises(gr.Error, match=message):
        decoding_views.force(tr, running, piece)
    assert running.cursor == 1 and len(running.positions) > 2  # the state it was given is untouched
    still_works(tr, running)


def test_force_after_the_end_and_on_no_session(tr):
    done = decoding_views.run(tr, decoding_views.start(tr, "Ein Hund rennt.")[0])[0]
    with pytest.raises(gr.Error, match="decoding has finished"):
        decoding_views.force(tr, done, "▁A")
    for bad_state in (None, 123, "session", {"cursor": 0}, object()):
        for h in (decoding_views.step, decoding_views.run, decoding_views.back, decoding_views.reset,
                  decoding_views.step_view):
            with pytest.raises(gr.Error, match="Press Start first"):
                h(tr, bad_state)
        with pytest.raises(gr.Error, match="Press Start first"):
            decoding_views.goto(tr, bad_state, 0)
        with pytest.raises(gr.Error, match="Press Start first"):
            decoding_views.force(tr, bad_state, "▁A")


@pytest.mark.parametrize("ref,message", [("", "input is empty"), ("\u200b", "input is empty"), (None, "target must be"),
                                         (42, "target must be")])
def test_reference_bad_values(tr, ref, message):
    with pytest.raises(gr.Error, match=message):
        decoding_views.reference(tr, "Ein Hund rennt.", ref)


@pytest.mark.parametrize("piece", ["\ud800", "▁\udfff"], ids=["lone-surrogate", "meta-space+surrogate"])
def test_force_lone_surrogate_piece_gives_a_clear_error(tr, running, piece):
    """Regression (Tokenizer.piece_id): a piece with a lone surrogate reached SentencePiece, which raised
    TypeError('Sequence elements must be str or bytes'), so the UI/API got Gradio's generic error without a
    message (reachable over HTTP: JSON allows "\\ud800"). piece_id now answers ValueError."""
    with pytest.raises(gr.Error, match="is not a piece of the vocabulary"):
        decoding_views.force(tr, running, piece)


# -- out-of-range UI values through gradio_client against the launched app --------------------------

@pytest.fixture(scope="module")
def served(tr):
    from tests.browser import serve
    with serve(tr) as url:
        yield url


@pytest.fixture()
def client(served):
    from gradio_client import Client
    c = Client(served, verbose=False)
    yield c
    c.close()


def client_running(client, tr, text="Ein Hund rennt."):
    """/start, /run, then /goto 1: a session with history, as in `running`."""
    client.predict(text, TOPK, api_name="/start")
    _, payload, _ = client.predict(TOPK, api_name="/run")
    assert payload["done"] and len(payload["target"]) > 3
    _, payload, _ = client.predict(1, TOPK, api_name="/goto")
    assert payload["cursor"] == 1
    return payload


def client_still_works(client, tr, text="Ein Hund rennt."):
    _, payload, _ = client.predict(TOPK, api_name="/step")
    assert payload["cursor"] == 2  # the session survived the bad call, at the step it was on
    assert client.predict("Eine Katze schläft.", api_name="/translate") == tr.translate("Eine Katze schläft.")
    translation, payload, _ = client.predict(TOPK, api_name="/run")
    assert translation == tr.translate(text) and payload["done"]


CLIENT_CASES = [
    ("/goto", (-1, TOPK), "step index must be an integer"),
    ("/goto", (-10**9, TOPK), "step index must be an integer"),
    ("/goto", (10**9, TOPK), "step index must be an integer"),
    ("/goto", (10**30, TOPK), "step index must be an integer"),
    ("/goto", (None, TOPK), "step index must be an integer"),
    ("/goto", (1, 0), "top-k|minimum"),
    ("/step", (0,), "top-k|minimum"),
    ("/step", (21,), "top-k|maximum"),
    ("/step", (10**9,), "top-k|maximum"),
    ("/step", (-5,), "top-k|minimum"),
    ("/step", (2.5,), "top-k must be an integer"),
    ("/run", (0,), "top-k|minimum"),
    ("/back", (21,), "top-k|maximum"),
    ("/reset", (-1,), "top-k|minimum"),
    ("/topk", (0,), "top-k|minimum"),
    ("/topk", (21,), "top-k|maximum"),
    ("/force", (None, TOPK), "force needs one piece"),
    ("/force", ("", TOPK), "force needs one piece"),
    ("/force", ("x" * 100_000, TOPK), "force needs one piece"),
    ("/force", ("zz-no-such-piece", TOPK), "is not a piece of the vocabulary"),
    ("/force", (123, TOPK), "is not a piece of the vocabulary|force needs one piece"),
    ("/force", (["▁A"], TOPK), "is not a piece of the vocabulary|force needs one piece"),
    ("/force", ("<s>", TOPK), "cannot force the special piece"),
    ("/force", ("▁A", 0), "top-k|minimum"),
    ("/start", ("", TOPK), "input is empty"),
    ("/start", ("\u200b\u202e\x00", TOPK), "input is empty"),
    ("/start", (None, TOPK), "input must be text"),
    ("/start", ("Ein Hund.", 21), "top-k|maximum"),
    ("/reference", ("Ein Hund rennt.", "   "), "input is empty"),
    ("/translate", ("",), "input is empty"),
    ("/translate", (None,), "input must be text"),
    ("/attention", (" \t",), "input is empty"),
]


@pytest.mark.parametrize("api,args,message", CLIENT_CASES, ids=[f"{a}{repr(x)[:30]}" for a, x, _ in CLIENT_CASES])
def test_bad_values_via_gradio_client_are_rejected_and_the_app_keeps_working(client, tr, api, args, message):
    client_running(client, tr)
    with pytest.raises(Exception, match=message):
        client.predict(*args, api_name=api)
    client_still_works(client, tr)


def test_hostile_text_via_gradio_client(client, tr):
    for name, text, expect in HOSTILE:
        if not isinstance(text, str) or any("\ud800" <= ch <= "\udfff" for ch in text):
            continue  # the client cannot send lone surrogates (see test_lone_surrogates_over_raw_http)
        if expect == EMPTY:
            with pytest.raises(Exception, match=MESSAGES[EMPTY]):
                client.predict(text, api_name="/translate")
        elif expect == TEXT:
            assert client.predict(text, api_name="/translate") == tr.translate(text), name
    assert client.predict("Ein Hund rennt.", api_name="/translate") == tr.translate("Ein Hund rennt.")


def raw_call(url, api, data, session_hash=None):
    """POST /gradio_api/call/<api> with a body json.dumps writes (lone surrogates as \\udXXX escapes),
    then read the result stream. -> ('complete', data) or ('error', payload). Parameters not given
    are filled with the endpoint's defaults, as gradio_client does."""
    params = httpx.get(f"{url}gradio_api/info", timeout=30).json()["named_endpoints"][f"/{api}"]["parameters"]
    data = list(data) + [p.get("parameter_default") for p in params[len(data):]]
    body = {"data": data, **({"session_hash": session_hash} if session_hash else {})}
    r = httpx.post(f"{url}gradio_api/call/{api}", content=json.dumps(body),
                   headers={"content-type": "application/json"}, timeout=60)
    r.raise_for_status()
    event = None
    with httpx.stream("GET", f"{url}gradio_api/call/{api}/{r.json()['event_id']}", timeout=60) as s:
        for line in s.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                return event, json.loads(line[5:])
    raise AssertionError("no result event")


def test_lone_surrogates_over_raw_http(served, tr):
    assert raw_call(served, "translate", ["\ud800 Ein Hund rennt."]) == ("complete", [tr.translate("Ein Hund rennt.")])
    event, data = raw_call(served, "start", ["\udfff", TOPK], "hostile-surrogate")
    assert event == "complete" and data[2]["target"] == ["<s>"]
    event, data = raw_call(served, "run", [TOPK], "hostile-surrogate")
    assert event == "complete" and data[2]["done"]
    assert raw_call(served, "translate", ["Ein Hund rennt."]) == ("complete", [tr.translate("Ein Hund rennt.")])


def test_force_lone_surrogate_over_raw_http_gives_a_message(served, tr):
    """Regression: the same as test_force_lone_surrogate_piece_gives_a_clear_error, seen from the API: the
    error event used to carry no message ({'error': None})."""
    raw_call(served, "start", ["Ein Hund rennt.", TOPK], "hostile-force")
    event, data = raw_call(served, "force", ["\ud800", TOPK], "hostile-force")
    assert raw_call(served, "translate", ["Ein Hund rennt."]) == ("complete", [tr.translate("Ein Hund rennt.")])
    assert event == "error" and "not a piece" in str(data.get("error"))


def test_goto_non_integer_via_gradio_client_is_rejected(client, tr):
    """Regression (the step-index gr.Number): with precision=0 Gradio rounded 2.5 to 2 before decoding_views.goto
    saw it, so the call silently jumped to step 2. The Number now has precision=None and decoding_views.goto's own
    check rejects 2.5 with its clear message."""
    client_running(client, tr)
    with pytest.raises(Exception, match="step index must be an integer"):
        client.predict(2.5, TOPK, api_name="/goto")
    client_still_works(client, tr)


@pytest.mark.parametrize("api,args", [("/goto", ("abc", TOPK)), ("/step", ("3",)), ("/step", (None,))],
                         ids=repr)
def test_non_numbers_via_gradio_client_get_a_clear_error(client, tr, api, args):
    """Regression (attention_lens/shell/requests.py): a non-number sent for the step index or k used to fail
    inside Gradio's own preprocessing (TypeError), reported without a message. The app survives (checked below)
    and the message names the value."""
    client_running(client, tr)
    with pytest.raises(Exception) as e:
        client.predict(*args, api_name=api)
    client_still_works(client, tr)
    assert "step index" in str(e.value) or "top-k" in str(e.value), str(e.value)


# -- the browser: script-like text is shown literally and runs nothing ------------------------------

PAYLOAD = ('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
           '<svg onload="window.__pwned=3"></svg><iframe srcdoc="<script>parent.__pwned=4</script>"></iframe>')
INJECTED = ("#attention img, #topk img, #attention svg[onload], #topk svg[onload], #attention iframe, "
            "#topk iframe, #attention script, #topk script")
INLINE_HANDLERS = """() => [...document.querySelectorAll('#attention *, #topk *')]
    .flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))"""


@pytest.fixture(scope="module")
def wide_vocab_translator(tiny_pairs, tmp_path_factory):
    """A tiny checkpoint whose vocabulary holds every character of PAYLOAD, so the typed characters can
    come back as pieces instead of <unk> (weights untrained: only the pieces matter here)."""
    import torch

    from transformer.model.checkpoint import save_checkpoint
    from transformer.model.config import ModelConfig
    from transformer.model.model import Transformer
    from transformer.model.tokenizer import Tokenizer
    tok = Tokenizer.train([s for p in tiny_pairs for s in p] + [PAYLOAD] * 5, vocab_size=150)
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=len(tok), d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64,
                      dropout=0.0, attn_dropout=0.0, max_len=128)
    ckpt = tmp_path_factory.mktemp("wide_vocab_ckpt")
    save_checkpoint(ckpt, Transformer(cfg).eval(), tok, half=False)
    return Translator.load(ckpt, device=DEVICE)


@pytest.fixture(scope="module")
def chromium():
    from tests.browser import browser, require_chromium
    require_chromium()
    with browser() as b:
        yield b


def start_and_run(page, text):
    from tests.browser import click, start
    start(page, text)
    click(page, "#run")


def show_reference(page, text):
    from tests.browser import renders, wait_render
    if not page.is_visible("#reference textarea"):
        page.click("text=Inspect a reference translation")
    page.fill("#reference textarea", text)
    n = renders(page)
    page.click("#show_reference")
    wait_render(page, n)


def assert_nothing_ran_or_was_injected(page):
    page.wait_for_timeout(300)  # an onerror / onload would have fired by now
    assert page.evaluate("window.__pwned === undefined")
    assert page.dialogs == []
    assert page.query_selector_all(INJECTED) == []
    assert page.evaluate(INLINE_HANDLERS) == []
    assert page.errors == []


def chips(page):
    return page.eval_on_selector_all("#attention .lens-tok", "es => es.map(e => e.textContent)")


def tick_texts(page, axis="xlabels"):
    """The big view's axis labels (spans set with textContent; the canvas itself holds no text)."""
    return page.eval_on_selector_all(f"#attention [data-role={axis}] span", "es => es.map(e => e.textContent)")


@pytest.mark.browser
def test_browser_script_payload_runs_nothing_tiny_checkpoint(chromium, tr):
    from tests.browser import open_app, serve
    with serve(tr) as url:
        page = open_app(chromium, url)
        start_and_run(page, PAYLOAD)
        assert_nothing_ran_or_was_injected(page)
        session = tr.start(PAYLOAD).run()
        assert chips(page) == session.target_tokens  # '<s>', '</s>' as text: not parsed as tags
        assert page.input_value("#translation textarea") == tr.translate(PAYLOAD)
        assert tick_texts(page) == session.source_tokens  # '<unk>' pieces drawn literally on the axis
        show_reference(page, PAYLOAD)
        assert_nothing_ran_or_was_injected(page)
        assert chips(page) == tr.attend(PAYLOAD, PAYLOAD).target_tokens
        page.close()


@pytest.mark.browser
def test_browser_typed_characters_appear_literally(chromium, wide_vocab_translator):
    from tests.browser import open_app, serve
    tr = wide_vocab_translator
    notes = []
    assert "<unk>" not in tr.tokenizer.pieces(tr.source_ids(PAYLOAD, notes))
    assert notes == []  # not truncated either
    with serve(tr) as url:
        page = open_app(chromium, url)
        start_and_run(page, PAYLOAD)
        assert_nothing_ran_or_was_injected(page)
        session = tr.start(PAYLOAD).run()
        assert chips(page) == session.target_tokens
        source_axis = "".join(tick_texts(page)).replace("▁", " ")
        assert clean_text(PAYLOAD) in source_axis  # every typed character, literally, on the source axis
        show_reference(page, PAYLOAD)
        assert_nothing_ran_or_was_injected(page)
        got = chips(page)
        assert got == tr.attend(PAYLOAD, PAYLOAD).target_tokens
        assert got[0] == "<s>" and got[-1] == "</s>"
        assert "".join(got[1:-1]).replace("▁", " ").strip() == clean_text(PAYLOAD)  # literally what was typed
        page.close()
