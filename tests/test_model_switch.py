"""The model switch is a new start (issue 39, item 1), without a browser (tests/test_model_switch_browser.py drives
the page): the page's buttons that need a started sentence answer without one in a note of their own and change
nothing else (no gr.Error into their outputs), the endpoints for programs still answer gr.Error, and a switch
writes a new mark of what is started, so no tab draws its results of the sentence before
(attention_lens/shell/page_state.py)."""
import json

import gradio as gr
import pytest

from attention_lens.app import build_demo
from attention_lens.shell import page_state
from tests.answered import event, in_order
from transformer.decode.decoding import Translator

SOURCE = "Ein Hund rennt."


@pytest.fixture(scope="module")
def demo(tiny_trained, tiny_en_de_dir):
    return build_demo([Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")])


def said(value) -> str:
    """What a note says: a Markdown or Textbox's text, or a box note's (components.box_note_value) `said`."""
    try:
        return json.loads(value)["said"]
    except (TypeError, ValueError, KeyError):
        return value


# (the button, its arguments after the session, the note among its outputs)
BUTTONS = [("beam_run", (3,), "beam_note"), ("ablate_run", (["L1 H1"], [], [], 8, ""), "ablate_note"),
           ("layers_run", ("all layers", 0.15, ""), "layers_note"), ("export", ("", None), "export_note")]


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_a_button_without_a_sentence_says_so_in_its_note_and_changes_nothing_else(demo, button, args, note):
    f = event(demo, button)
    assert f.api_visibility == "private"  # the page's own: the endpoint for programs is another event
    names = [o.elem_id for o in f.outputs]
    out = in_order(f, f.fn("", None, *args))
    where = "" if button == "export" else " in the Translate tab"  # Export is a button of the Translate tab
    assert said(out[names.index(note)]).startswith(f"Press Start{where} first: ")
    box = [i for i, o in enumerate(f.outputs) if "al-results" in (o.elem_classes or [])]  # the note drawn, if in it
    assert all(o == gr.skip() for i, o in enumerate(out) if names[i] != note and i not in box), (button, out)


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_with_a_sentence_the_button_answers_and_its_note_is_empty(demo, tiny_trained, button, args, note):
    f = event(demo, button)
    names = [o.elem_id for o in f.outputs]
    out = in_order(f, f.fn("", Translator.load(tiny_trained, "cpu").start(SOURCE), *args))
    assert said(out[names.index(note)]) in ("", None) or button == "ablate_run"  # Compare's note is its summary
    assert not said(out[names.index(note)] or "").startswith("Press Start")
    assert sum(o != gr.skip() for o in out) >= 2, (button, out)


@pytest.mark.parametrize("api_name, args", [("ablate", (["L1 H1"], [], [], 8, "")),
                                            ("layers", ("all layers", 0.15, "")), ("export", ("", None))])
def test_the_endpoints_for_programs_still_answer_gr_error_without_a_session(demo, api_name, args):
    [f] = [f for f in demo.fns.values() if f.api_name == api_name]
    with pytest.raises(gr.Error, match="Press Start first"):
        f.fn(None, *args)


def test_every_event_that_changes_what_is_started_writes_a_new_mark(demo, tiny_trained):
    """One page state: each tab's results are drawn only for the mark they were computed for
    (attention_lens/shell/page_state.py), so every event of the page that writes the started sentence (ctx.state: Start,
    Enter, an example, the picker, the hint's switch, a link) writes the mark in the same answer, a new one when it
    starts or ends a sentence; no tab registers a clear."""
    mark = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "sentences started")
    session = next(f for f in demo.fns.values() if f.name == "on_start").outputs[0]
    writers = [f for f in demo.fns.values() if session in f.outputs and f.api_visibility == "private"]
    assert {f.name for f in writers} >= {"on_start", "on_example", "picked", "switch", "on_link"}, writers
    # a forced piece keeps the sentence started (the other tabs' results of it stay drawn, as a step keeps them)
    assert [f.name for f in writers if mark not in f.outputs] == ["on_force"]
    follow = [f for f in demo.fns.values() if f.fn is None and f.targets and f.targets[0][0] == mark._id]
    assert len(follow) == 1 and "al-page-state" in follow[0].js  # drawn in the browser, no request


def link(data):
    """The link box's event data, as assets/link.js sends it."""
    from types import SimpleNamespace
    return SimpleNamespace(_data={"id": "x"} | data)


# every event of the page that writes the sentence or the model, each way it can answer: (its name, its arguments)
WRITES = [("on_start", ("Ein Hund rennt.", 4, False, "de-en")), ("on_start", ("   ", 4, False, "de-en")),
          ("on_start", ("", 4, False, "en-de")), ("on_example", ("Ein Hund rennt.", 4, False, "de-en")),
          ("picked", ("en-de",)), ("picked", ("de-en",)), ("switch", ("A dog runs.", 4, False, "de-en")),
          ("on_link", ("de-en", 4, False, link({"model": "en-de", "text": "A dog runs."}))),
          ("on_link", ("de-en", 4, False, link({"model": "en-de", "text": None}))),  # a link naming only a model
          ("on_link", ("en-de", 4, False, link({"model": None, "text": "a" * 2001}))),  # a sentence refused
          ("on_link", ("en-de", 4, False, link({"model": "xx", "text": "\u200b"})))]


def test_every_writer_of_the_model_or_sentence_renews_the_mark_by_value(demo):
    """Each event of the page that writes the started sentence or the model, in each of its answers (a Start refused,
    a link with a sentence, with a model alone, with a sentence refused, ...), answers a new mark (32 hex digits, never
    one answered before), so no tab keeps the results of the state before drawn; the one answer that writes neither
    (an example picker's first line) leaves the mark too. Seen failing when on_start's refusal answered its old
    `[None, "", None, note]` without the mark, and when on_link's refusal kept gr.update() for the sentence and mark."""
    mark = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "sentences started")
    session = next(f for f in demo.fns.values() if f.name == "on_start").outputs[0]
    picker = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model")
    writers = {f.name: f for f in demo.fns.values() if f.api_visibility == "private" and f.name != "on_force"
               and (session in f.outputs or picker in f.outputs)}
    assert set(writers) == {name for name, _ in WRITES}, "a writer of the page state this test does not drive"
    marks = []
    for name, args in WRITES:
        f = writers[name]
        out = dict(zip(f.outputs, in_order(f, f.fn(*args)), strict=True))
        assert out[session] != gr.skip(), (name, args)  # every one of these answers writes the sentence
        assert isinstance(out[mark], str) and len(out[mark]) == 32 and out[mark] not in marks, (name, args, out[mark])
        marks.append(out[mark])
    f = writers["on_example"]
    assert all(o == gr.skip() for o in in_order(f, f.fn("", 4, False, "de-en")))  # the first line: nothing written


def test_a_link_naming_only_a_model_leaves_no_sentence_started(demo):
    """A link (or a class's view) that names a model and no sentence is a page with no sentence started: the picker on
    that model, the sentence before gone from the session, the translation and the view, under a new mark; so is a link
    whose sentence is refused. Seen failing when on_link answered gr.update() for the sentence (the old German sentence
    stayed drawn under English → German)."""
    f = next(f for f in demo.fns.values() if f.name == "on_link")
    names = {o: o.elem_id or o.label for o in f.outputs}
    for data in ({"model": "en-de", "text": None}, {"model": "en-de", "text": "a" * 2001}):
        out = {names[o]: v for o, v in zip(f.outputs, in_order(f, f.fn("de-en", 4, False, link(data))), strict=True)}
        assert out["model"] == "en-de" and out["translation"] == "" and out["attention"] is None, out
        assert not out["link_box"]["ok"]
    state = next(o for o in f.outputs if isinstance(o, gr.State))
    assert dict(zip(f.outputs, in_order(f, f.fn("de-en", 4, False, link({"model": "en-de"})))))[state] is None


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_a_tabs_answer_is_drawn_for_the_mark_it_read(demo, tiny_trained, button, args, note):
    """Each tab's results box: the page's buttons answer `drawn_for(mark)` of the mark they were given, with a
    sentence and without one (their note is in it), so an answer of an old sentence that comes late is not drawn."""
    f = event(demo, button)
    boxes = [i for i, o in enumerate(f.outputs) if "al-results" in (getattr(o, "elem_classes", None) or [])]
    assert len(boxes) == 1, (button, f.outputs)
    for session in (None, Translator.load(tiny_trained, "cpu").start(SOURCE)):
        out = in_order(f, f.fn("ab12", session, *args))
        if button == "export" and session is None:  # Export's note is outside (assets/box_note.js): nothing drawn
            assert out[boxes[0]] == gr.skip()
            continue
        assert out[boxes[0]]["elem_classes"] == ["al-results", "for-ab12"], (button, out[boxes[0]])
    assert page_state.drawn_for("</style>")["elem_classes"] == ["al-results", "for-"]  # a mark is a hex uuid
