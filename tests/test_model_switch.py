"""The model switch is a new start (issue 39, item 1), without a browser (tests/test_model_switch_browser.py drives
the page): the page's buttons that need a started sentence answer without one in a note of their own and change
nothing else (no gr.Error into their outputs), the endpoints for programs still answer gr.Error, and the clears
after a switch that left no sentence say nothing of a sentence."""
import json

import gradio as gr
import pytest

from transformer.decode.decoding import Translator
from ui.app import build_demo
from ui.shell import page_state
from ui.shell.texts import shown

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
    out = list(f.fn(None, *args))
    where = "" if button == "export" else " in the Translate tab"  # Export is a button of the Translate tab
    assert said(out[names.index(note)]).startswith(f"Press Start{where} first: ")
    assert all(o == gr.skip() for i, o in enumerate(out) if names[i] != note), (button, out)


@pytest.mark.parametrize("button, args, note", BUTTONS)
def test_with_a_sentence_the_button_answers_and_its_note_is_empty(demo, tiny_trained, button, args, note):
    f = event(demo, button)
    names = [o.elem_id for o in f.outputs]
    out = list(f.fn(Translator.load(tiny_trained, "cpu").start(SOURCE), *args))
    assert said(out[names.index(note)]) in ("", None) or button == "ablate_run"  # Compare's note is its summary
    assert not said(out[names.index(note)] or "").startswith("Press Start")
    assert sum(o != gr.skip() for o in out) >= 2, (button, out)


@pytest.mark.parametrize("api_name, args", [("ablate", (["L1 H1"], [], [], 8, "")),
                                            ("layers", ("all layers", 0.15, "")), ("export", ("", None))])
def test_the_endpoints_for_programs_still_answer_gr_error_without_a_session(demo, api_name, args):
    [f] = [f for f in demo.fns.values() if f.api_name == api_name]
    with pytest.raises(gr.Error, match="Press Start first"):
        f.fn(None, *args)


def test_the_clears_after_a_switch_with_no_sentence_say_nothing_of_a_sentence(demo, tiny_trained):
    """The clears (ui/shell/page_state.py) read the session the event left: none after the picker's switch (the notes
    that name "this sentence" are empty: each tab's sentence line says none is started), a new one after a Start."""
    count = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "sentences started")
    [clear] = [f for f in demo.fns.values() if [(t[0], t[1]) for t in f.targets] == [(count._id, "change")]]
    assert next(getattr(i, "elem_id", None) for i in clear.inputs) == "model" and isinstance(clear.inputs[1], gr.State)
    names = [o.elem_id for o in clear.outputs]
    assert {"beam_note", "ablate_note", "layers_note", "word_align_summary", "word_align_matrix"} <= set(names)
    idle = dict(zip(names, clear.fn("en-de", None)))
    started = dict(zip(names, clear.fn("de-en", Translator.load(tiny_trained, "cpu").start(SOURCE))))
    assert idle["beam_note"] == idle["ablate_note"] == idle["layers_note"] == idle["word_align_summary"] == ""
    # the beam note is a label of the catalogue (gr.I18n): the page shows it in its language (texts.shown)
    assert "Run beam search" in shown(started["beam_note"]) and "Press Compare" in shown(started["ablate_note"])
    assert "Strahlsuche" in shown(started["beam_note"], "de")
    assert idle["word_align_matrix"] is None and started["word_align_matrix"] is None  # of the sentence before


def test_on_new_checks_the_idle_values_too():
    from ui.shell.page_state import PageState

    class Ctx:
        page = PageState()  # the registry lives in the page's state (ui/shell/page_state.py), not in ctx.__dict__
    ctx = Ctx()
    with pytest.raises(ValueError, match="2 outputs but 1 values"):
        page_state.on_new(ctx, [object(), object()], [1, 2], idle=[1])
    page_state.on_new(ctx, ["a", "b"], lambda key: [key, "x"], idle=["", ""])
    page_state.on_new(ctx, ["c"], ["same"])
    assert page_state.cleared(ctx, "de-en") == ["de-en", "x", "same"]
    assert page_state.cleared(ctx, "de-en", sentence=False) == ["", "", "same"]
