"""The app's handlers called directly, and the app launched in-process driven through gradio_client."""
import gradio as gr
import numpy as np
import pytest

from ui import handlers
from ui.payload import decode_array
from ui.serving import serving
from tests.conftest import DEVICE


def test_start_step_run_equals_translate(tiny_translator, tiny_pairs):
    de, en = tiny_pairs[3]
    state, text, payload, topk = handlers.start(tiny_translator, de)
    assert text == "" and payload["cursor"] == 0 and payload["target"] == ["<s>"]
    assert len(topk["items"]) == handlers.TOPK and topk["items"][0][0] == payload["next"]
    state, text, payload, _ = handlers.step(tiny_translator, state)
    assert payload["cursor"] == 1 and len(payload["target"]) == 2
    state, text, payload, topk = handlers.run(tiny_translator, state)
    assert text == tiny_translator.translate(de) == en and payload["done"] and topk["done"]


def test_payload_round_trips_the_maps(tiny_translator):
    state, _, payload, _ = handlers.run(tiny_translator, handlers.start(tiny_translator, "Ein Hund springt.")[0])
    maps = state.attention
    for kind in ("encoder_self", "decoder_self", "cross"):
        got = decode_array(payload["maps"][kind])
        assert got.shape == maps[kind].shape
        np.testing.assert_allclose(got, maps[kind], atol=1e-4)
    assert payload["source"] == maps.source_tokens and payload["target"] == maps.target_tokens


def test_handlers_do_not_mutate_the_state_they_were_given(tiny_translator):
    s0 = handlers.start(tiny_translator, "Ein Mann sitzt.")[0]
    s1 = handlers.step(tiny_translator, s0)[0]
    assert s0.cursor == 0 and s1.cursor == 1
    s2 = handlers.back(tiny_translator, s1)[0]
    assert s1.cursor == 1 and s2.cursor == 0


def test_back_reset_goto_force(tiny_translator):
    s = handlers.run(tiny_translator, handlers.start(tiny_translator, "Ein Kind rennt.")[0])[0]
    n = s.cursor
    s = handlers.back(tiny_translator, s)[0]
    assert s.cursor == n - 1
    s = handlers.goto(tiny_translator, s, 1)[0]
    assert s.cursor == 1
    with pytest.raises(gr.Error, match="step index"):
        handlers.goto(tiny_translator, s, 10_000)
    with pytest.raises(gr.Error, match="step index"):
        handlers.goto(tiny_translator, s, -3)
    s = handlers.goto(tiny_translator, s, 0)[0]
    alt = s.topk(3)[2][0]
    s, _, payload, _ = handlers.force(tiny_translator, s, alt)
    assert payload["target"][1] == alt and payload["forced"] == [False, True]
    s = handlers.reset(tiny_translator, s)[0]
    assert s.cursor == 0 and len(s.positions) == 1
    with pytest.raises(gr.Error):
        handlers.force(tiny_translator, s, "no-such-piece-zz")
    with pytest.raises(gr.Error):
        handlers.force(tiny_translator, s, None)


@pytest.mark.parametrize("k", [0, 21, -1, 2.5, "3", True])
def test_out_of_range_k_rejected(tiny_translator, k):
    s = handlers.start(tiny_translator, "Ein Hund.")[0]
    with pytest.raises(gr.Error, match="top-k"):
        handlers.step(tiny_translator, s, k)


def test_bad_input_gives_clear_errors(tiny_translator):
    for text in ["", "   ", "\u200b"]:
        with pytest.raises(gr.Error, match="empty"):
            handlers.start(tiny_translator, text)
    for h in (handlers.step, handlers.run, handlers.back, handlers.reset):
        with pytest.raises(gr.Error, match="Start"):
            h(tiny_translator, None)


def test_reference_and_api_endpoints(tiny_translator):
    payload, topk = handlers.reference(tiny_translator, "Ein Hund rennt.", "A dog runs.")
    assert payload["mode"] == "reference" and payload["target"][0] == "<s>" and payload["target"][-1] == "</s>"
    assert topk["items"] == []
    with pytest.raises(gr.Error):
        handlers.reference(tiny_translator, "Ein Hund rennt.", "  ")
    assert handlers.api_translate(tiny_translator, "Ein Hund rennt.") == tiny_translator.translate("Ein Hund rennt.")
    d = handlers.api_attention(tiny_translator, "Ein Hund rennt.")
    L, H = tiny_translator.config.n_decoder_layers, tiny_translator.config.n_heads
    T, S = len(d["target_tokens"]), len(d["source_tokens"])
    assert np.array(d["cross"]).shape == (L, H, T, S)
    assert np.array(d["decoder_self"]).shape == (L, H, T, T)
    assert np.array(d["encoder_self"]).shape == (tiny_translator.config.n_encoder_layers, H, S, S)
    assert d["translation"] == tiny_translator.translate("Ein Hund rennt.")


@pytest.fixture(scope="module")
def served(tiny_trained):
    from transformer.decoding import Translator
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
    a.predict(de1, handlers.TOPK, api_name="/start")
    b.predict(de2, handlers.TOPK, api_name="/start")
    for _ in range(30):
        ta, pa, _ = a.predict(handlers.TOPK, api_name="/step")
        tb, pb, _ = b.predict(handlers.TOPK, api_name="/step")
    assert ta == tr.translate(de1) and tb == tr.translate(de2)
    assert pa["source"] == tr.tokenizer.pieces(tr.source_ids(de1))
    assert pb["source"] == tr.tokenizer.pieces(tr.source_ids(de2))
    with pytest.raises(Exception, match="step index"):
        a.predict(99999, handlers.TOPK, api_name="/goto")
    with pytest.raises(Exception, match="maximum|top-k"):
        a.predict(500, api_name="/step")
