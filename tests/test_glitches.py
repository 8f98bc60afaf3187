"""The server side of issue 22's glitches 1-5, without a browser (tests/test_glitches_browser.py drives the page):
teacher forcing along given pieces (DecodingSession.follow), the reference as a trajectory of the started
sentence, which pieces the model would not have chosen (`differs`), Start's validator, beam search of the
started sentence."""
import gradio as gr
import numpy as np
import pytest
import torch

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.beam import handlers as beam_handlers
from attention_lens.shell.inputs import reference_problem, source_problem
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate import payload as P
from tests.answered import in_order
from tests.decoders import decode_trajectory
from transformer.decode.beam import beam_search
from transformer.decode.trajectory import differs

SOURCE = "Ein Hund rennt."
OTHER = "Ein Kind springt."


def model_probs(tr, source_ids, ids):
    """(T, V) next-piece probabilities after every prefix of ids, in one plain teacher-forced pass."""
    src = torch.tensor([source_ids], device=tr.device)  # (1, S)
    tgt = torch.tensor([ids], device=tr.device)  # (1, T)
    with torch.inference_mode():
        logits = tr.model.project(tr.model.decode(tgt, tr.model.encode(src)))[0]  # (T, V)
    return torch.softmax(logits.float(), -1).cpu().numpy()


def test_follow_teacher_forces_the_given_pieces(tiny_translator):
    tr = tiny_translator
    src = tr.source_ids(SOURCE)
    other = tr.start(OTHER).run().target_ids  # pieces the model would not all choose for SOURCE
    s = tr.start_ids(src).follow(other[1:])
    assert s.target_ids == other and s.cursor == len(other) - 1 and s.done
    assert not any(p.forced for p in s.positions)  # given, not chosen by a user
    probs = model_probs(tr, src, other)
    assert [p.greedy for p in s.positions] == list(probs.argmax(-1))  # what the model would have chosen
    maps = tr.attend(SOURCE, tr.tokenizer.pieces(other))
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_allclose(s.attention[kind], maps[kind], atol=1e-5)
    np.testing.assert_allclose(s.history_probs(), probs, atol=1e-5)
    # a target longer than greedy decoding's limit is followed all the same, up to the model's max_len
    piece = tr.tokenizer.piece_id("▁")
    long = [piece] * (tr.start_ids(src).limit + 5)
    assert len(tr.start_ids(src).follow(long).positions) == 1 + len(long)
    too_long = [piece] * (tr.config.max_len + 5)
    assert len(tr.start_ids(src).follow(too_long).positions) == tr.config.max_len
    with pytest.raises(ValueError):
        tr.start_ids(src).follow([tr.config.bos_id])
    with pytest.raises(ValueError):
        tr.start_ids(src).follow([len(tr.tokenizer)])


def test_differs_marks_pieces_the_model_would_not_have_chosen(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE)
    s.step()
    alt = next(p for p, _ in s.topk(5) if p != tr.tokenizer.piece(s.positions[-1].greedy))
    s.force(alt)
    s.run()
    assert differs(s.positions) == [False, False, True] + [False] * (len(s.positions) - 3)
    ref = tr.start_ids(s.source_ids).follow(tr.start(OTHER).run().target_ids[1:])
    want = [False] + [ref.positions[i].token != ref.positions[i - 1].greedy for i in range(1, len(ref.positions))]
    assert differs(ref.positions) == want
    t = P.trajectory_payload(ref.trajectory())
    assert t["steps"]["differs"] == [int(x) for x in want] and t["steps"]["forced"] == [0] * len(want)


def test_ablation_follows_the_intact_prefix_without_calling_it_forced(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE).run()
    L, H = tr.config.n_decoder_layers, tr.config.n_heads
    labels = [f"L{l + 1} H{h + 1}" for l in range(L) for h in range(H)]
    payload = ablation_handlers.ablate(tr, s, [], [], labels)[4]
    heads = [("cross", l, h) for l in range(L) for h in range(H)]
    a = tr.start_ids(s.source_ids, ablate=heads)
    want = [False]
    for token in s.target_ids[1:]:
        want.append(token != a.positions[a.cursor].greedy)
        a.force(token)
    assert payload["target"] == s.target_tokens
    assert payload["forced"] == [False] * len(want)  # nobody forced anything
    assert payload["differs"] == want and any(want)  # all cross-attention off: it would choose otherwise


def test_reference_of_the_started_sentence_is_a_trajectory(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE).run()
    s.goto(1)
    ref = tr.translate(OTHER)
    payload, topk = decoding_views.reference_at(tr, s, ref, 3)
    ids = tr.target_ids_of(ref)
    d = decode_trajectory(payload)
    assert payload["v"] == P.TRAJECTORY_VERSION and payload["mode"] == "reference"
    assert payload["source"] == s.source_tokens and d["pieces"] == tr.tokenizer.pieces(ids)
    assert payload["cursor"] == len(ids) - 1 and d["forced"] == [False] * len(ids)
    probs = model_probs(tr, s.source_ids, ids)
    for t, row in enumerate(d["topk"]):  # the model's own top-k after every prefix of the reference
        assert [p for p, _ in row[:3]] == tr.tokenizer.pieces(list(np.argsort(-probs[t], kind="stable")[:3]))
    assert [p for p, _ in topk["items"]] == [p for p, _ in d["topk"][-1][:3]]
    np.testing.assert_allclose(d["maps"]["cross"], tr.attend(SOURCE, ref).cross, atol=2e-5)
    greedy = tr.start(SOURCE).run()
    assert s.cursor == 1 and [p.token for p in s.positions] == greedy.target_ids  # the session is left as it was
    with pytest.raises(gr.Error, match="Start"):
        decoding_views.reference_at(tr, None, ref)
    with pytest.raises(gr.Error, match="empty"):
        decoding_views.reference_at(tr, s, "   ")


def test_reference_problem_says_why_a_reference_cannot_be_shown(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE)
    assert reference_problem(s, "A dog runs.") == ""
    for session, ref, message in ((None, "A dog runs.", "Press Start first"), (s, "   ", "empty")):
        assert message in reference_problem(session, ref)


def test_the_compare_tabs_start_says_which_sentence_it_cannot_read_under_the_boxes(tiny_translator):
    """Start both with a sentence the model cannot read: the note under the boxes (#compare_note) names the
    sentence and why, and the view is left as it was; two good ones: both decoded and nothing said."""
    import json

    from attention_lens.app import build_demo
    demo = build_demo(tiny_translator)
    go = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "compare_start")
    [click] = [f for f in demo.fns.values() if (go._id, "click") in [(t[0], t[1]) for t in f.targets]]
    assert [o.elem_id for o in click.outputs] == ["compare", "compare_note"]
    view, note = in_order(click, click.fn(SOURCE, "   ", 8, ""))
    said = json.loads(note)
    assert view == gr.skip() and said["said"] == "Sentence B: " + source_problem(tiny_translator, "   ")
    assert said["texts"] == {"compare_a": SOURCE, "compare_b": "   "}
    view, note = in_order(click, click.fn(SOURCE, SOURCE, 8, ""))
    assert set(view) >= {"a", "b"} and json.loads(note)["said"] == ""


def test_beam_search_of_the_started_sentence(tiny_translator):
    tr = tiny_translator
    s = tr.start(SOURCE)
    state, _, _choices, payload = beam_handlers.beam_started(tr, s, 3)
    best = beam_search(tr.model, tr.source_ids(SOURCE), 3).hypotheses[0]
    assert state["source_ids"] == s.source_ids and state["hyps"][0] == best.ids
    assert payload["target"] == tr.tokenizer.pieces([tr.config.bos_id] + best.ids)
    assert beam_handlers.beam(tr, SOURCE, 3)[0]["hyps"] == state["hyps"]  # the API's /beam of the same text
    with pytest.raises(gr.Error, match="Start"):
        beam_handlers.beam_started(tr, None, 3)


def test_a_start_the_model_cannot_read_says_why_under_the_box_and_changes_nothing(tiny_translator):
    """The page's Start (the button, Enter) answers a sentence the model cannot read with the note under the box
    (#source_hint's value, drawn by assets/sentence.js), and the sentence before ends (issue 58 item 10): the
    Translate view emptied and a new mark of what is started, so no tab keeps the old sentence's results drawn
    (attention_lens/shell/page_state.py: drawn for the mark they were computed for); a sentence it can read is started
    and the mark moves on too."""
    import json

    from attention_lens.app import build_demo
    demo = build_demo(tiny_translator)
    by_id = {b._id: b for b in demo.blocks.values()}
    start_id = next(i for i, b in by_id.items() if getattr(b, "elem_id", None) == "start")
    [click] = [f for f in demo.fns.values() if (start_id, "click") in [(t[0], t[1]) for t in f.targets]]
    note = next(i for i, o in enumerate(click.outputs) if o.elem_id == "source_hint")
    count = next(i for i, o in enumerate(click.outputs) if getattr(o, "label", None) == "sentences started")
    [follow] = [f for f in demo.fns.values() if [(t[0], t[1]) for t in f.targets] == [(click.outputs[count]._id,
                                                                                       "change")]]
    assert follow.fn is None and not follow.outputs  # the results drawn for the mark: in the browser, on it alone
    marks = set()
    for bad, why in (("   ", "input is empty"), ("", "input is empty")):
        out = in_order(click, click.fn(bad, 8, False, ""))
        value = json.loads(out[note])
        assert why in value["said"] and value["texts"] == {"source": bad}
        assert all(o in (None, "") for i, o in enumerate(out) if i not in (note, count))  # the old decoding: gone
        assert out[count] != gr.skip() and out[count] not in marks  # a new mark: the old results undrawn
        marks.add(out[count])
    out, again = (in_order(click, click.fn(SOURCE, 8, False, "")) for _ in range(2))
    assert json.loads(out[note]) == {"n": json.loads(out[note])["n"], "texts": {"source": SOURCE}, "said": ""}
    assert out[0] != gr.skip() and out[count] != again[count]  # started, and the mark changed: old results undrawn


def test_source_problem_is_startings_own_check(tiny_translator):
    assert source_problem(tiny_translator, SOURCE) == ""
    for bad, message in (("   ", "input is empty"), (None, "input must be text")):
        assert message in source_problem(tiny_translator, bad)
        with pytest.raises(gr.Error, match=message):
            decoding_views.start(tiny_translator, bad)


def test_start_echoes_the_text_it_translated_not_the_uncut_input(tiny_translator):
    """Issue 43 B4: /start names the sentence every tab shows (payload "input"); for a 200,000-character text it
    is the part that was translated (the source read back gives exactly the pieces translated), the note that the
    input was cut is kept, and the answer stays small (it quoted the whole text: megabytes). Text that was not cut
    is echoed as typed, spaces and all (a link finds its sentence by it: assets/link.js)."""
    import json
    tr = tiny_translator
    text = "Ein Hund rennt. " * 12_500
    state, _, payload, topk = decoding_views.start(tr, text, 4)
    limit = tr.config.max_len - 1  # the model reads this many pieces, then </s>
    assert len(state.source_ids) == limit + 1
    assert tr.source_ids(payload["input"]) == state.source_ids  # what it names is what was translated
    assert len(payload["input"]) < 2000 and text.startswith(payload["input"])
    assert topk["notes"][0] == f"The input was cut from {len(text)} to 2000 characters."
    assert topk["notes"][1].endswith(f"only the first {limit} are translated (the model's limit).")
    # the translated part started alone: the same answer's size
    again = decoding_views.start(tr, payload["input"], 4)[2]
    assert abs(len(json.dumps(payload)) - len(json.dumps(again))) < 1000
    typed = "  Ein  Hund rennt. "
    state, _, payload, topk = decoding_views.start(tr, typed, 4)
    assert payload["input"] == typed and topk["notes"] == []


def test_reset_keeps_the_sessions_switched_off_heads(tiny_translator):
    """Issue 43 B7: Reset goes back to step 0 of the same sentence with the same heads switched off, as at_position
    and reference_at keep them: its maps are those of a fresh start with those heads off, not the intact model's."""
    tr = tiny_translator
    heads = [("cross", 0, 0), ("cross", 1, 2), ("encoder_self", 0, 1)]
    s = tr.start(SOURCE, ablate=heads).run()
    r, translation, payload, _ = decoding_views.reset(tr, s)
    fresh = tr.start(SOURCE, ablate=heads)
    assert r.ablated == frozenset(heads) and r.cursor == 0 and translation == ""
    np.testing.assert_array_equal(r.attention.encoder_self, fresh.attention.encoder_self)
    np.testing.assert_array_equal(r.attention.cross, fresh.attention.cross)
    assert payload["ablated"] == [list(h) for h in sorted(heads)]  # the view greys them
