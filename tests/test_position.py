"""The position the view shows (attention_lens.translate.handlers.at_position): one it accepts is the one it returns,
and one it cannot reach (a step after </s> or past the length limit) is a clear gr.Error, never another step."""
import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.layers import handlers as layers_handlers
from attention_lens.shell import exports
from attention_lens.translate import handlers as decoding_views
from tests.conftest import DEVICE
from transformer.decode.decoding import Translator

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TEXT = "Ein Hund rennt."


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


@pytest.fixture(scope="module")
def sessions(tr):
    """The started greedy session (whole history, cursor 0), one with a piece forced at step 1 (its history
    differs from greedy's), and one with only <s> computed."""
    greedy = decoding_views.start(tr, TEXT)[0]
    tok = tr.tokenizer
    alt = next(p for p, _ in greedy.topk(5, 1)[1:] if tok.piece_id(p) not in (tok.pad_id, tok.bos_id, tok.eos_id))
    forced = decoding_views.force_at(tr, greedy, {"step": 1, "ids": greedy.target_ids[:1] + [greedy.positions[1].token],
                                            "forced": [0, 0]}, alt)[0]
    return {"greedy": greedy, "forced": forced, "fresh": tr.start(TEXT)}


def trajectory(s) -> list[int]:
    return [p.token for p in s.positions]


def test_a_step_after_the_end_is_refused_not_replaced(tr, sessions):
    greedy = sessions["greedy"]
    ids = trajectory(greedy)
    assert ids[-1] == tr.config.eos_id, "the tiny model should end this sentence with </s>"
    end = len(ids) - 1
    for extra, flags in (([ids[1]], [0]), ([ids[1]], [1]), ([ids[1], ids[2]], [0, 1])):
        pos = {"step": end + len(extra), "ids": ids + extra, "forced": [0] * len(ids) + flags}
        for session in sessions.values():
            with pytest.raises(gr.Error, match=rf"step {end + len(extra)} cannot be reached: this decoding "
                                               rf"ends at step {end} \(</s>\)"):
                decoding_views.at_position(tr, session, json.dumps(pos))
        with pytest.raises(gr.Error, match="cannot be reached"):
            exports.export_at(tr, greedy, pos)  # no file named after another step
    # </s> forced early ends the decoding there too
    with pytest.raises(gr.Error, match=r"step 3 cannot be reached: this decoding ends at step 1 \(</s>\)"):
        decoding_views.at_position(tr, greedy, {"step": 3, "ids": [ids[0], tr.config.eos_id, ids[1], ids[2]],
                                          "forced": [0, 1, 0, 0]})


def test_export_at_names_the_step_it_was_asked_for(tr, sessions):
    ids = trajectory(sessions["greedy"])
    for step in (0, len(ids) - 1):
        files = exports.export_at(tr, sessions["forced"], {"step": step, "ids": ids[:step + 1],
                                                            "forced": [0] * (step + 1)})
        assert all(os.path.basename(f).startswith(f"{exports.EXPORT_PREFIX}step{step}.") for f in files)


def positions(tr, base: list[int]):
    """{"step", "ids", "forced"} near a trajectory: each piece the trajectory's own (None) or any id, shorter
    or longer than it; a step that usually matches the ids."""
    V = len(tr.tokenizer)
    pieces = st.lists(st.one_of(st.none(), st.integers(0, V - 1)), max_size=len(base) + 2)
    steps = st.one_of(st.none(), st.integers(-1, len(base) + 3))

    def build(picked, flags, step):
        ids = [base[0]] + [base[i] if p is None and i < len(base) else (p if p is not None else tr.config.eos_id)
                           for i, p in enumerate(picked, 1)]
        forced = ([0] + flags + [0] * len(ids))[:len(ids)]
        return {"step": len(ids) - 1 if step is None else step, "ids": ids, "forced": forced}
    return st.builds(build, pieces, st.lists(st.integers(0, 1), max_size=len(base) + 2), steps)


@FUZZ
@given(data=st.data())
def test_a_position_it_accepts_is_the_one_it_returns(tr, sessions, data):
    name = data.draw(st.sampled_from(sorted(sessions)))
    base = trajectory(data.draw(st.sampled_from([sessions["greedy"], sessions["forced"]])))
    pos = data.draw(positions(tr, base))
    as_json = data.draw(st.booleans())
    before = sessions[name].cursor, len(sessions[name].positions)
    try:
        r = decoding_views.at_position(tr, sessions[name], json.dumps(pos) if as_json else pos)
    except gr.Error as e:
        assert isinstance(e.message, str) and e.message.strip()
        return
    assert r.cursor == pos["step"] == len(pos["ids"]) - 1
    assert r.target_ids == pos["ids"]
    assert [p.forced for p in r.positions[1:r.cursor + 1]] == [bool(f) for f in pos["forced"][1:]]
    assert (sessions[name].cursor, len(sessions[name].positions)) == before  # the user's session is untouched


def test_a_forced_piece_is_never_taken_for_the_greedy_one(tr, sessions):
    """A view whose piece at a position is the greedy one but forced there (the user forced the model's own choice)
    is that position forced, also from a session that holds the same pieces unforced; and a piece the view says was
    not forced is not, also where the session holds it forced: what Compare keeps forced (forced_plan) is what the
    view shows forced."""
    from attention_lens.ablation.help import forced_plan
    greedy, forced = sessions["greedy"], sessions["forced"]
    ids = trajectory(greedy)
    r = decoding_views.at_position(tr, greedy, {"step": 2, "ids": ids[:3], "forced": [0, 0, 1]})
    assert r.target_ids == ids[:3] and [p.forced for p in r.positions] == [False, False, True]
    assert forced_plan(r) == {2: ids[2]}
    fids = trajectory(forced)
    assert forced.positions[2].forced
    r = decoding_views.at_position(tr, forced, {"step": 2, "ids": fids[:3], "forced": [0, 0, 0]})
    assert r.target_ids == fids[:3] and not any(p.forced for p in r.positions) and forced_plan(r) == {}


@FUZZ
@given(data=st.data())
def test_every_step_of_a_trajectory_is_reachable(tr, sessions, data):
    """Any prefix of the greedy or the forced trajectory is accepted, from any session, as that prefix."""
    base = trajectory(data.draw(st.sampled_from([sessions["greedy"], sessions["forced"]])))
    step = data.draw(st.integers(0, len(base) - 1))
    forced = [0] + [data.draw(st.integers(0, 1)) for _ in range(step)]
    r = decoding_views.at_position(tr, sessions[data.draw(st.sampled_from(sorted(sessions)))],
                             {"step": step, "ids": base[:step + 1], "forced": forced})
    assert r.cursor == step and r.target_ids == base[:step + 1]


def test_a_step_of_a_reference_past_the_greedy_limit_is_reachable(tr):
    """A reference is followed with a longer limit than greedy decoding's (Script.reach): its steps past
    the greedy limit are positions the view shows, and Head ablation, Across layers and Export there work (issue 56
    item 7: they failed with "position must be ..." at any step past the greedy limit)."""
    greedy = decoding_views.start(tr, "Hallo.")[0]
    ref = tr.start("Ein Hund rennt über die Wiese.").run()
    pieces = [i for i in trajectory(ref)[1:] if i != tr.config.eos_id] * 3
    r = tr.follow(greedy.source_ids, pieces)
    assert len(r.positions) - 1 > greedy.limit + 2, "the reference should run well past the greedy limit"
    step = len(r.positions) - 1
    pos = {"step": step, "ids": trajectory(r), "forced": [0] * (step + 1)}
    s = decoding_views.at_position(tr, greedy, json.dumps(pos))
    assert s.cursor == step and s.target_ids == trajectory(r)
    ablation_handlers.ablate_at(tr, greedy, [], [], ["L1 H1"], 5, pos)
    layers_handlers.across_layers_at(tr, greedy, "all layers", 0.15, pos)
    files = exports.export_at(tr, greedy, pos)
    assert all(os.path.basename(f).startswith(f"{exports.EXPORT_PREFIX}step{step}.") for f in files)


def test_the_browser_sends_the_step_with_each_request_and_no_box_relays_it(tr):
    """Issue 57 item 2: the browser owns the step shown. Every event that needs it (Head ablation's Compare and
    /ablate, Across layers and /layers, the word alignment, Export and /export) takes the view as an input whose
    value its js replaces with the view's position at the moment of the request (components.live_position); no
    component is written with the position on a step (the hidden #view_pos box the view once kept up to date)."""
    from attention_lens.app import build_demo
    config = build_demo(tr).config
    comps = {c["id"]: c["props"].get("elem_id") for c in config["components"]}
    assert "view_pos" not in comps.values()
    needing = [d for d in config["dependencies"] if any(comps.get(i) == "lens_bus" for i in d["inputs"])]
    names = {d.get("api_name") for d in needing}
    assert {"ablate", "layers", "export"} <= names, names
    for d in needing:  # the view stands for its position: each of these events' js puts it in the request
        assert d["js"] and ("position()" in d["js"] or "JSON.stringify({step" in d["js"]), (d.get("api_name"), d["js"])
    stepping = [d for d in config["dependencies"] if d["js"] and "sync()" in d["js"]]  # the view's own js-only event
    assert stepping and all([comps[o] for o in d["outputs"]] == ["translation"] for d in stepping)
