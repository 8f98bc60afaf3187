"""A link's model and sentence on the server (attention_lens/shell/link.py opened), without a browser: the browser test
(tests/test_link_browser.py) cannot reach the server's own limits, since the page refuses a long text first."""
from __future__ import annotations

from attention_lens.shell.link import opened
from attention_lens.shell.models import Models
from tests.answered import by_name


def source_box_limit(tr) -> int:
    """The max_length of the Translate tab's source box, as the page is built."""
    from attention_lens.app import build_demo
    demo = build_demo(tr)
    return next(b.max_length for b in demo.blocks.values() if getattr(b, "elem_id", None) == "source")


def test_a_links_text_over_the_boxs_limit_is_not_started(tiny_translator):
    """A link's sentence obeys the source box's limit on the server too: one character over it is not started and
    the note says why; at the limit it is. Catches the mutation "drop `len(text) > MAX_TEXT` from opened" (then the
    long text is started, only cut), which the browser test lets pass because the browser refuses it first."""
    models = Models([tiny_translator])
    limit = source_box_limit(tiny_translator)
    assert isinstance(limit, int) and limit > 0
    text = ("Ein Hund rennt. " * limit)[:limit + 1]
    key, started, notes = opened(models, text, None, None, 8, False)
    assert key == "de-en" and started is None
    assert notes == [f"text ({limit + 1} characters; a sentence of 1 to {limit})"]
    key, started, notes = opened(models, text[:limit], None, None, 8, False)
    assert started is not None and notes == []


def test_a_links_model_that_is_no_text_is_ignored_like_an_unknown_one(tiny_translator, tiny_en_de):
    """Issue 43 B3: a link whose model is a list or a dict (the browser sends whatever the link's JSON holds) keeps
    the model in use and says so in a note, as for an unknown name, instead of a TypeError (unhashable)."""
    models = Models([tiny_translator, tiny_en_de])
    for bad in (["en-de"], {"en-de": 1}):
        key, started, notes = opened(models, "Ein Hund rennt.", bad, "de-en", 8, False)
        assert key == "de-en" and started is not None and started[1] == ""
        assert notes == [f"model {str(bad)[:40]!r} (this app serves de-en, en-de)"]


def test_a_links_answer_names_the_sentence_started_the_part_translated_when_cut(tiny_translator):
    """Issue 43 B4: the views name the part of a cut text that was translated (payload "input"), so the link's
    answer says which sentence to wait for (assets/link.js matches the Start answer by it): a text within the box's
    limit but longer than the model reads is cut to its first pieces; one that fits is named as typed."""
    from types import SimpleNamespace

    from attention_lens.app import build_demo
    demo = build_demo(tiny_translator)
    f = next(f for f in demo.fns.values() if getattr(f.fn, "__name__", None) == "on_link")
    tr, limit = tiny_translator, tiny_translator.config.max_len - 1
    for text, cut in (("Ein Hund rennt. " * 40, True), ("Ein  Hund rennt. ", False)):
        out = by_name(f, f.fn("de-en", 4, False, SimpleNamespace(_data={"id": "x", "model": None, "text": text})))
        answer, started = out["link_box"], out["attention"]  # the link box's answer; the payload of the view
        assert answer["ok"] and answer["id"] == "x" and answer["input"] == started["input"]
        if cut:
            assert len(tr.source_ids(text)) == limit + 1 and len(tr.tokenizer.encode(text)) > limit
            assert tr.source_ids(answer["input"]) == tr.source_ids(text) and answer["input"] != text
        else:
            assert answer["input"] == text


def test_a_view_opened_by_many_at_once_is_decoded_once(tiny_translator, tiny_en_de, monkeypatch):
    """A live class's followers open the teacher's view as a link, all at once: its sentence is decoded once (the
    decodes counted in the library, Translator.trajectory), each follower gets that answer, and the notes of a cut
    input are said to each; another sentence or model is a decode of its own."""
    import threading

    from attention_lens.translate import handlers, shared_start
    from transformer.decode.decoding import Translator
    monkeypatch.setattr(shared_start, "STARTS", shared_start.SharedStarts())
    monkeypatch.setattr("attention_lens.shell.link.STARTS", shared_start.STARTS)
    decodes, told = [], []
    real = Translator.trajectory

    def counted(self, text, *a, **k):
        decodes.append(text)
        gate.wait(10)  # the first decode still running while the others ask
        return real(self, text, *a, **k)
    monkeypatch.setattr(Translator, "trajectory", counted)
    monkeypatch.setattr(handlers, "tell_notes", lambda notes: told.append(list(notes)))
    models = Models([tiny_translator, tiny_en_de])
    gate = threading.Event()
    answers = []
    long = "Ein Hund rennt. " * 100  # cut by the model: a note for each follower

    def follower():
        answers.append(opened(models, long, "de-en", "de-en", 8, False))
    threads = [threading.Thread(target=follower) for _ in range(12)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(60)
    assert len(decodes) == 1 and len(answers) == 12
    assert all(started is answers[0][1] for _, started, _ in answers)  # the one answer, shared
    assert len(told) == 12 and told[0] and all(t == told[0] for t in told)
    assert opened(models, long, "de-en", "de-en", 8, False)[1] is answers[0][1] and len(decodes) == 1  # kept
    opened(models, "Ein Hund rennt.", "de-en", "de-en", 8, False)
    opened(models, "Ein Hund rennt.", "en-de", "de-en", 8, False)
    assert len(decodes) == 3 and shared_start.STARTS.decodes == 3
