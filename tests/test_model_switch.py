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
from transformer.decode.decoding import Translator

SOURCE = "Ein Hund rennt."


@pytest.fixture(scope="module")
def demo(tiny_trained, tiny_en_de_dir):
    return build_demo([Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")])


def event(demo, elem_id, trigger="click"):
    """The page's event of the component `elem_id`."""
    block = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)
    [found] = [f for f in demo.fns.values() if (block._id, trigger) in [(t[0], t[1]) for t in f.targets]]
    return found


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
    out = list(f.fn("", None, *args))
    where = "" if button == "export" else " in the Translate tab"  # Export is a button of the Translate tab
    assert said(out[names.index(note)]).startswith(f"Press Start{where} first: ")
    box = [i for i, o in enumerate(f.outputs) if "al-results" in (o.elem_classes or [])]  # the note drawn, if in it
    assert all(o == gr.skip() for i, o in enumerate(out) if names[i] != note and i not in box), (button, out)


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_with_a_sentence_the_button_answers_and_its_note_is_empty(demo, tiny_trained, button, args, note):
    f = event(demo, button)
    names = [o.elem_id for o in f.outputs]
    out = list(f.fn("", Translator.load(tiny_trained, "cpu").start(SOURCE), *args))
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
    """One page state (issue 57 item 1): each tab's results are drawn only for the mark they were computed for
    (attention_lens/shell/page_state.py), so every event of the page that writes the started sentence (ctx.state: Start,
    Enter,
    an example, the picker, the hint's switch, a link) writes the mark in the same answer, a new one when it starts
    or ends a sentence; no tab registers a clear."""
    mark = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "sentences started")
    session = next(f for f in demo.fns.values() if f.name == "on_start").outputs[0]
    writers = [f for f in demo.fns.values() if session in f.outputs and f.api_visibility == "private"]
    assert {f.name for f in writers} >= {"on_start", "on_example", "picked", "switch", "on_link"}, writers
    # a forced piece keeps the sentence started (the other tabs' results of it stay drawn, as a step keeps them)
    assert [f.name for f in writers if mark not in f.outputs] == ["on_force"]
    picked = next(f for f in writers if f.name == "picked")
    one, two = (dict(zip(picked.outputs, picked.fn("en-de"))) for _ in range(2))
    assert one[session] is None and one[mark] != two[mark] and len(one[mark]) == 32
    follow = [f for f in demo.fns.values() if f.fn is None and f.targets and f.targets[0][0] == mark._id]
    assert len(follow) == 1 and "al-page-state" in follow[0].js  # drawn in the browser, no request


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_a_tabs_answer_is_drawn_for_the_mark_it_read(demo, tiny_trained, button, args, note):
    """Each tab's results box: the page's buttons answer `drawn_for(mark)` of the mark they were given, with a
    sentence and without one (their note is in it), so an answer of an old sentence that comes late is not drawn."""
    f = event(demo, button)
    boxes = [i for i, o in enumerate(f.outputs) if "al-results" in (getattr(o, "elem_classes", None) or [])]
    assert len(boxes) == 1, (button, f.outputs)
    for session in (None, Translator.load(tiny_trained, "cpu").start(SOURCE)):
        out = list(f.fn("ab12", session, *args))
        if button == "export" and session is None:  # Export's note is outside (assets/box_note.js): nothing drawn
            assert out[boxes[0]] == gr.skip()
            continue
        assert out[boxes[0]]["elem_classes"] == ["al-results", "for-ab12"], (button, out[boxes[0]])
    assert page_state.drawn_for("</style>")["elem_classes"] == ["al-results", "for-"]  # a mark is a hex uuid
