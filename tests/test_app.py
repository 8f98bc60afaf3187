"""The app's handlers called directly, and the app launched in-process driven through gradio_client."""
import gradio as gr
import numpy as np
import pytest

from attention_lens.shell import api
from attention_lens.shell.inputs import TOPK
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.payload import decode_array
from tests.conftest import DEVICE
from tests.serving import serving


def test_start_step_run_equals_translate(tiny_translator, tiny_pairs):
    de, en = tiny_pairs[3]
    state, text, payload, topk = decoding_views.start(tiny_translator, de)
    assert text == "" and payload["cursor"] == 0 and payload["target"] == ["<s>"]
    assert len(topk["items"]) == TOPK and topk["items"][0][0] == payload["next"]
    state, text, payload, _ = decoding_views.step(tiny_translator, state)
    assert payload["cursor"] == 1 and len(payload["target"]) == 2
    state, text, payload, topk = decoding_views.run(tiny_translator, state)
    assert text == tiny_translator.translate(de) == en and payload["done"] and topk["done"]


def test_payload_round_trips_the_maps(tiny_translator):
    state, _, payload, _ = decoding_views.run(tiny_translator,
                                              decoding_views.start(tiny_translator, "Ein Hund springt.")[0])
    maps = state.attention
    for kind in ("encoder_self", "decoder_self", "cross"):
        got = decode_array(payload["maps"][kind])
        assert got.shape == maps[kind].shape
        np.testing.assert_allclose(got, maps[kind], atol=1e-4)
    assert payload["source"] == maps.source_tokens and payload["target"] == maps.target_tokens


def test_handlers_do_not_mutate_the_state_they_were_given(tiny_translator):
    s0 = decoding_views.start(tiny_translator, "Ein Mann sitzt.")[0]
    s1 = decoding_views.step(tiny_translator, s0)[0]
    assert s0.cursor == 0 and s1.cursor == 1
    s2 = decoding_views.back(tiny_translator, s1)[0]
    assert s1.cursor == 1 and s2.cursor == 0


def test_back_reset_goto_force(tiny_translator):
    s = decoding_views.run(tiny_translator, decoding_views.start(tiny_translator, "Ein Kind rennt.")[0])[0]
    n = s.cursor
    s = decoding_views.back(tiny_translator, s)[0]
    assert s.cursor == n - 1
    s = decoding_views.goto(tiny_translator, s, 1)[0]
    assert s.cursor == 1
    with pytest.raises(gr.Error, match="step index"):
        decoding_views.goto(tiny_translator, s, 10_000)
    with pytest.raises(gr.Error, match="step index"):
        decoding_views.goto(tiny_translator, s, -3)
    s = decoding_views.goto(tiny_translator, s, 0)[0]
    alt = s.topk(3)[2][0]
    s, _, payload, _ = decoding_views.force(tiny_translator, s, alt)
    assert payload["target"][1] == alt and payload["forced"] == [False, True]
    s = decoding_views.reset(tiny_translator, s)[0]
    assert s.cursor == 0 and len(s.positions) == 1
    with pytest.raises(gr.Error):
        decoding_views.force(tiny_translator, s, "no-such-piece-zz")
    with pytest.raises(gr.Error):
        decoding_views.force(tiny_translator, s, None)


@pytest.mark.parametrize("k", [0, 21, -1, 2.5, "3", True])
def test_out_of_range_k_rejected(tiny_translator, k):
    s = decoding_views.start(tiny_translator, "Ein Hund.")[0]
    with pytest.raises(gr.Error, match="top-k"):
        decoding_views.step(tiny_translator, s, k)


def test_bad_input_gives_clear_errors(tiny_translator):
    for text in ["", "   ", "\u200b"]:
        with pytest.raises(gr.Error, match="empty"):
            decoding_views.start(tiny_translator, text)
    for h in (decoding_views.step, decoding_views.run, decoding_views.back, decoding_views.reset):
        with pytest.raises(gr.Error, match="Start"):
            h(tiny_translator, None)


def test_reference_and_api_endpoints(tiny_translator):
    payload, topk = decoding_views.reference(tiny_translator, "Ein Hund rennt.", "A dog runs.")
    assert payload["mode"] == "reference" and payload["target"][0] == "<s>" and payload["target"][-1] == "</s>"
    assert topk["items"] == []
    with pytest.raises(gr.Error):
        decoding_views.reference(tiny_translator, "Ein Hund rennt.", "  ")
    assert api.api_translate(tiny_translator, "Ein Hund rennt.") == tiny_translator.translate("Ein Hund rennt.")
    d = api.api_attention(tiny_translator, "Ein Hund rennt.")
    L, H = tiny_translator.config.n_decoder_layers, tiny_translator.config.n_heads
    T, S = len(d["target_tokens"]), len(d["source_tokens"])
    assert np.array(d["cross"]).shape == (L, H, T, S)
    assert np.array(d["decoder_self"]).shape == (L, H, T, T)
    assert np.array(d["encoder_self"]).shape == (tiny_translator.config.n_encoder_layers, H, S, S)
    assert d["translation"] == tiny_translator.translate("Ein Hund rennt.")


@pytest.fixture(scope="module")
def served(tiny_trained):
    from transformer.decode.decoding import Translator
    tr = Translator.load(tiny_trained, device=DEVICE)
    with serving(tr) as url:
        yield tr, url


def test_gradio_client_endpoints_and_isolation(served, tiny_pairs):
    from gradio_client import Client
    tr, url = served
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    assert a.predict("Ein Hund rennt.", api_name="/translate") == tr.translate("Ein Hund rennt.")
    att = a.predict("Ein Hund rennt.", api_name="/attention")
    assert att["translation"] == tr.translate("Ein Hund rennt.") and len(att["cross"]) == tr.config.n_decoder_layers
    (de1, _), (de2, _) = tiny_pairs[0], tiny_pairs[7]
    a.predict(de1, TOPK, api_name="/start")
    b.predict(de2, TOPK, api_name="/start")
    for _ in range(30):
        ta, pa, _ = a.predict(TOPK, api_name="/step")
        tb, pb, _ = b.predict(TOPK, api_name="/step")
    assert ta == tr.translate(de1) and tb == tr.translate(de2)
    assert pa["source"] == tr.tokenizer.pieces(tr.source_ids(de1))
    assert pb["source"] == tr.tokenizer.pieces(tr.source_ids(de2))
    with pytest.raises(Exception, match="step index"):
        a.predict(99999, TOPK, api_name="/goto")
    with pytest.raises(Exception, match="maximum|top-k"):
        a.predict(500, api_name="/step")


# -- the trajectory payload: Start sends every step, the browser steps locally ----------------------------

def stepped(tr, text, t):
    s = tr.start(text)
    for _ in range(t):
        s.step()
    return s


def check_trajectory(tr, text, payload, sessions):
    """Every step of a trajectory payload equals the matching Python session (sessions[t])."""
    from tests.decoders import decode_trajectory
    d = decode_trajectory(payload)
    T = len(d["pieces"])
    assert T == len(sessions)
    for t, s in enumerate(sessions):
        assert s.cursor == t
        assert d["pieces"][:t + 1] == s.target_tokens and d["ids"][:t + 1] == s.target_ids
        assert d["texts"][t] == s.translation
        assert d["done"][t] == s.done
        assert d["forced"][t] == s.positions[t].forced
        assert d["greedy"][t] == tr.tokenizer.piece(s.positions[t].greedy)
        top = s.topk(20)
        assert [p for p, _ in d["topk"][t]] == [p for p, _ in top]
        np.testing.assert_allclose([q for _, q in d["topk"][t]], [q for _, q in top], atol=2e-5)
        maps = s.attention
        np.testing.assert_allclose(d["maps"]["encoder_self"], maps.encoder_self, atol=2e-5)
        np.testing.assert_allclose(d["maps"]["decoder_self"][:, :, :t + 1, :t + 1], maps.decoder_self, atol=2e-5)
        np.testing.assert_allclose(d["maps"]["cross"][:, :, :t + 1], maps.cross, atol=2e-5)
    from transformer.interpret import analysis
    assert payload["steps"]["spans"]["target"] == [list(x) for x in analysis.word_spans(d["pieces"])]
    assert payload["steps"]["spans"]["source"] == [list(x) for x in analysis.word_spans(payload["source"])]


def test_start_payload_holds_every_step(tiny_translator, tiny_pairs):
    tr = tiny_translator
    de, _ = tiny_pairs[3]
    state, text, payload, topk = decoding_views.start(tr, de, 5, True)
    n = len(tr.start(de).run().positions)
    assert payload["v"] == 2 and payload["steps"]["n"] == n and payload["ui"] == {"k": 5, "words": True}
    assert payload["cursor"] == 0 and payload["target"] == ["<s>"] and text == ""  # the one-step keys: step 0
    assert [p for p, _ in topk["items"]] == [p for p, _ in tr.start(de).topk(5)]
    assert state.cursor == 0 and len(state.positions) == n  # the whole history, shown from step 0
    check_trajectory(tr, de, payload, [stepped(tr, de, t) for t in range(n)])


def test_api_stepping_after_start_is_unchanged(tiny_translator, tiny_pairs):
    """/start now keeps the whole history: /step, /back, /goto move along it as the server did before."""
    tr = tiny_translator
    de, _ = tiny_pairs[5]
    s = decoding_views.start(tr, de)[0]
    ref = tr.start(de)
    for _ in range(3):
        s, text, payload, _ = decoding_views.step(tr, s)
        ref.step()
        assert payload["v"] == 1 and payload["target"] == ref.target_tokens and text == ref.translation
    s = decoding_views.back(tr, s)[0]
    assert s.cursor == 2
    s, text, payload, _ = decoding_views.run(tr, s)
    assert text == tr.translate(de) and payload["done"]


def test_force_at_the_browsers_step_returns_the_forced_trajectory(tiny_translator, tiny_pairs):
    import json
    tr = tiny_translator
    de, _ = tiny_pairs[3]
    state = decoding_views.start(tr, de)[0]
    at = 1
    alt = stepped(tr, de, at).topk(3)[2][0]
    pos = json.dumps({"step": at, "ids": [p.token for p in state.positions[:at + 1]], "forced": [0] * (at + 1)})
    s, text, payload, _topk = decoding_views.force_at(tr, state, pos, alt)
    want = stepped(tr, de, at)
    want.force(alt)
    assert payload["cursor"] == at + 1 and text == want.translation and s.cursor == at + 1
    assert payload["forced"] == [False] * (at + 1) + [True]
    sessions = []
    for t in range(len(s.positions)):  # the forced prefix, then greedy to the end
        x = stepped(tr, de, min(t, at))
        if t > at:
            x.force(alt)
            for _ in range(t - at - 1):
                x.step()
        sessions.append(x)
    check_trajectory(tr, de, payload, sessions)
    assert s.positions[-1].token == tr.config.eos_id or len(s.positions) - 1 >= s.limit  # decoded to the end


def test_at_position_follows_the_view_or_decodes_it_again(tiny_translator, tiny_pairs):
    import json
    tr = tiny_translator
    de, _ = tiny_pairs[3]
    greedy = decoding_views.start(tr, de)[0]
    ids = [p.token for p in greedy.positions]
    alt = stepped(tr, de, 0).topk(2)[1][0]
    forced_state = decoding_views.force_at(tr, greedy, {"step": 0, "ids": ids[:1], "forced": [0]}, alt)[0]
    # the view went back to greedy (a local Reset) and shows step 2 there: the server holds the forced history
    s = decoding_views.at_position(tr, forced_state, json.dumps({"step": 2, "ids": ids[:3], "forced": [0, 0, 0]}))
    assert s.target_ids == ids[:3] and s.cursor == 2 and s is not forced_state
    assert decoding_views.at_position(tr, greedy, "").cursor == greedy.cursor
    same = decoding_views.at_position(tr, greedy, {"step": 1, "ids": ids[:2], "forced": [0, 0]})
    assert same.cursor == 1 and len(same.positions) == len(greedy.positions) and greedy.cursor == 0
    for bad in ("{", "[1]", json.dumps({"ids": []}), json.dumps({"ids": [999999]}), json.dumps({"ids": ids[1:3]}),
                json.dumps({"step": 5, "ids": ids[:2]}), json.dumps({"ids": [ids[0], True]}),
                json.dumps({"ids": ids[:1] * 10_000}), {"ids": ids[:2], "forced": [0]}):
        with pytest.raises(gr.Error, match="position must be"):
            decoding_views.at_position(tr, greedy, bad)
    with pytest.raises(gr.Error, match="Start"):
        decoding_views.at_position(tr, None, "")


def test_tril_packing_round_trips():
    from attention_lens.translate.payload import decode_array, encode_tril
    rng = np.random.default_rng(0)
    a = np.tril(rng.random((2, 3, 5, 5), dtype=np.float32))
    d = encode_tril(a)
    assert d["packed"] == "tril" and d["shape"] == [2, 3, 5, 5]
    np.testing.assert_allclose(decode_array(d), a, atol=1e-5)


def test_the_config_copied_on_every_page_load_is_plain_data():
    """Gradio deep-copies the app's config for every page load and every client (/config). gr.HTML answers any
    missing attribute named in quotes in its js_on_load with an event trigger bound to the component; a role
    called "self" in atlas.js put one in the config's props, so the copy failed on a lock deep inside the app
    and fell back to copying piece by piece: 0.44 s per page load, and 32 clients connecting at once timed out."""
    import copy
    import functools

    from attention_lens.app import build_demo
    from transformer.decode.decoding import Translator
    from transformer.model.checkpoint import DEFAULT_CHECKPOINT
    demo = build_demo(Translator.load(DEFAULT_CHECKPOINT, device=DEVICE))  # the shipped one has a head atlas
    assert any(c["props"].get("elem_id") == "atlas" for c in demo.config["components"])
    bound = [(c["props"].get("elem_id"), k) for c in demo.config["components"] for k, v in c["props"].items()
             if isinstance(v, functools.partial) or hasattr(v, "__self__")]
    assert bound == []
    copy.deepcopy(demo.config)  # raised RuntimeError ("Lock objects should only be shared ...")


def test_the_queue_tells_waiting_requests_their_place_at_a_rate_and_absent_matplotlib_is_not_searched(
        tiny_translator):
    """A class waiting in the queue is told its places once a second, not again at every start (Gradio's "auto":
    a message per waiting request per start, on the event loop); where matplotlib is not installed, the import Gradio
    attempts around every event fails at once instead of searching sys.path (attention_lens/app.py)."""
    import importlib.util
    import sys

    from attention_lens.app import build_demo
    saved = sys.modules.pop("matplotlib", "absent")
    installed = importlib.util.find_spec("matplotlib") is not None
    try:
        demo = build_demo(tiny_translator)
        assert demo._queue.live_updates is False and demo._queue.update_intervals == 1.0
        if not installed:
            assert "matplotlib" in sys.modules and sys.modules["matplotlib"] is None
            with pytest.raises(ImportError):
                import matplotlib  # noqa: F401
    finally:
        sys.modules.pop("matplotlib", None)
        if saved != "absent":
            sys.modules["matplotlib"] = saved


def test_the_page_writes_the_top_k_box_from_no_answer_and_start_has_one_builder(tiny_translator):
    """Issue 57 item 2: Start's answer is built in one place (attention_lens/translate/handlers.py trajectory_outputs:
    the payload
    with the sentence started and its caveats, the top-k with its notes) and the top-k is sent to the page once, in
    the payload's steps.topk, which the view draws: no event of the page (Start, Enter, an example, a forced piece,
    a link, the language hint's switch, the picker) has the top-k box among its outputs; only the endpoints for
    programs do."""
    from attention_lens.app import build_demo
    config = build_demo(tiny_translator).config
    topk = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "topk")
    writers = [d for d in config["dependencies"] if topk in d["outputs"]]
    private = [(d.get("api_name"), d["targets"], d["js"]) for d in writers if d["api_visibility"] == "private"]
    assert writers and private == []
    state, translation, payload, top = decoding_views.start(tiny_translator, "Ein Hund rennt.")
    assert decoding_views.for_page((state, translation, payload, top)) == [state, translation, payload]
    assert payload["input"] == "Ein Hund rennt." and payload["caveats"] == [] and top["notes"] == []
    forced = decoding_views.force_at(tiny_translator, state, None, state.topk(3)[2][0])[2]
    assert "input" not in forced and "caveats" not in forced  # only a Start names a sentence started


def test_the_stepping_endpoints_read_the_trajectory_start_answered(tiny_translator):
    """Issue 57 item 2: /step /back /run /goto /reset /topk move a cursor along the very history /start decoded and
    answer what its trajectory payload holds at that step (the pieces, the translation, the top-k, the maps' rows),
    decoding nothing again: a program may step through /start's answer alone (README, "From another program")."""
    from attention_lens.translate.payload import decode_ints, step_text
    state, _, traj, _ = decoding_views.start(tiny_translator, "Ein Hund springt über den Zaun.")
    steps, n = traj["steps"], traj["steps"]["n"]
    vocab, top_ids, top_p = steps["vocab"], decode_ints(steps["topk"]["ids"]), decode_array(steps["topk"]["p"])
    cross = decode_array(traj["maps"]["cross"])

    def same(answer, t):
        s, text, payload, topk = answer
        assert s.positions is not state.positions and s.cursor == t == payload["cursor"] == topk["step"]
        assert all(a is b for a, b in zip(s.positions, state.positions))  # the same positions: nothing decoded again
        assert payload["target"] == steps["pieces"][:t + 1] and text == step_text(steps, t)
        assert [p for p, _ in topk["items"]] == [vocab[i] for i in top_ids[t, :TOPK]]
        np.testing.assert_allclose([p for _, p in topk["items"]], top_p[t, :TOPK], atol=2e-5)
        np.testing.assert_allclose(decode_array(payload["maps"]["cross"]), cross[:, :, :t + 1], atol=2e-5)
        return s

    s = same(decoding_views.step_view(tiny_translator, state), 0)
    for t in range(1, n):
        s = same(decoding_views.step(tiny_translator, s), t)
    s = same(decoding_views.back(tiny_translator, s), n - 2)
    s = same(decoding_views.goto(tiny_translator, s, 1), 1)
    s = same(decoding_views.run(tiny_translator, s), n - 1)
    same(decoding_views.reset(tiny_translator, s), 0)
