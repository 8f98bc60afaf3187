"""The inside panel's Python side: its payload (attention_lens/translate/inside_payload.py) decodes to
DecodingSession.inside for
the whole trajectory the view holds, the handler takes the view's position and answers bad input with gr.Error, and
the /inside API endpoint is bounded."""
import json

import gradio as gr
import numpy as np
import pytest

from attention_lens.shell import api
from attention_lens.shell import api as ui_api
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.inside_payload import (
    INSIDE_VERSION,
    encode_mask,
    encode_rows16,
    encode_unit16,
    encode_visible,
)
from tests.conftest import DEVICE
from tests.decoders import decode_inside, decode_mask, decode_rows16, decode_unit16, decode_visible
from tests.serving import serving
from transformer.decode.decoding import Translator
from transformer.interpret.capture import KINDS

TEXT = "Ein Hund rennt durch den Schnee."
ATOL = 1e-4


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


def position_of(session) -> str:
    """What assets/inside.js sends: the trajectory's last position, as JSON."""
    ids = [p.token for p in session.positions]
    return json.dumps({"step": len(ids) - 1, "ids": ids, "forced": [int(p.forced) for p in session.positions]})


def test_the_payload_is_session_inside_over_the_whole_trajectory(tr):
    state = decoding_views.start(tr, TEXT)[0]  # the server's session sits at step 0, as after Start
    full = tr.start(TEXT).run()
    for kind in KINDS:
        layer, head = 1, tr.config.n_heads - 1
        p = decoding_views.inside_at(tr, state, position_of(full), kind, layer, head)
        got, want = decode_inside(p), full.inside(kind, layer, head, norms=True)
        assert (p["kind"], p["layer"], p["head"], p["d_k"]) == (kind, layer, head, tr.config.d_head)
        assert p["version"] == INSIDE_VERSION  # its own key: "v" is the values (it once overwrote the version)
        assert p["ids"] == full.target_ids and p["queries"] == want.query_tokens and p["keys"] == want.key_tokens
        np.testing.assert_array_equal(got["q"], want.q)  # float32, exact
        np.testing.assert_array_equal(got["k"], want.k)
        np.testing.assert_array_equal(got["mask"], want.mask)
        for name in ("raw", "scores", "weights", "out", "contribution", "value_norms", "out_norms"):  # float32, exact
            np.testing.assert_array_equal(got[name], getattr(want, name), err_msg=f"{kind} {name}")
        for name in ("v",):
            np.testing.assert_allclose(got[name], getattr(want, name), atol=ATOL, err_msg=f"{kind} {name}")
        for k in KINDS:
            np.testing.assert_allclose(got["norms"][k], want.norms[k], atol=2e-5 * want.norms[k].max(), err_msg=k)


def test_encodings_round_trip():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(7, 16)).astype(np.float32) * 3
    v[2] = 0  # a zero row keeps its zeros
    back = decode_rows16(encode_rows16(v))
    assert np.abs(back - v).max() <= np.abs(v).max(-1).max() / 65534 + 1e-7
    assert (back[2] == 0).all()
    n = rng.random((3, 4, 9)).astype(np.float32) * 12
    np.testing.assert_allclose(decode_unit16(encode_unit16(n)), n, atol=n.max() / 65535)
    causal = np.triu(np.ones((5, 5), bool), 1)
    assert "from" in encode_mask(causal)  # a suffix per row: one number per row
    padding = np.zeros((3, 6), bool)
    padding[:, 4:] = True
    holes = rng.random((4, 6)) < 0.5
    holes[0, :2] = [True, False]  # not a suffix: sent as bits
    assert "bits" in encode_mask(holes)
    for m in (causal, padding, holes, np.zeros((2, 3), bool)):
        np.testing.assert_array_equal(decode_mask(json.loads(json.dumps(encode_mask(m)))), m)
        w = np.where(m, 0, rng.random(m.shape)).astype(np.float32)  # 0 where masked, as weights are
        np.testing.assert_array_equal(decode_visible(json.loads(json.dumps(encode_visible(w, m))), m), w)


def test_the_views_trajectory_is_used_even_when_the_server_holds_another(tr):
    """After a forced piece the server's session is the forced trajectory; the view may go back to the greedy
    one (Reset, locally): the panel's position says which, and the payload is for that one."""
    greedy = tr.start(TEXT).run()
    forced = tr.start(TEXT)
    forced.step()
    forced.force(forced.topk(2)[1][0])
    forced.run()
    for state, shown in ((forced, greedy), (greedy, forced)):
        p = decoding_views.inside_at(tr, state, position_of(shown), "decoder_self", 0, 0)
        assert p["ids"] == shown.target_ids
        np.testing.assert_array_equal(decode_inside(p)["q"], shown.inside("decoder_self", 0, 0).q)
    # no position: the history
    whole = decoding_views.inside_at(tr, decoding_views.start(tr, TEXT)[0], None, "cross", 0, 0)
    assert whole["ids"] == greedy.target_ids


def test_bad_requests_are_clear_errors(tr):
    state = decoding_views.start(tr, TEXT)[0]
    pos = position_of(tr.start(TEXT).run())
    for kind, layer, head in (("self", 0, 0), ("cross", 99, 0), ("cross", 0, 99), ("cross", 0, True),
                              ("cross", "0", 0), (None, None, None)):
        with pytest.raises(gr.Error):
            decoding_views.inside_at(tr, state, pos, kind, layer, head)
    with pytest.raises(gr.Error, match="Press Start"):
        decoding_views.inside_at(tr, None, pos, "cross", 0, 0)
    with pytest.raises(gr.Error, match="position"):
        decoding_views.inside_at(tr, state, '{"step": 0, "ids": [99999]}', "cross", 0, 0)


def test_inside_api_answers_one_step_as_nested_lists_and_is_bounded(tr, monkeypatch):
    s = tr.start(TEXT).run()
    d = api.api_inside(tr, TEXT, "decoder_self", 1, 2, 2)
    s.goto(2)
    want = s.inside("decoder_self", 1, 2)
    assert d["step"] == 2 and d["translation"] == tr.translate(TEXT) and d["key_tokens"] == want.key_tokens
    for name in ui_api.INSIDE_ARRAYS:
        got, expected = np.array(d[name]), np.asarray(getattr(want, name))
        assert got.shape == expected.shape, (name, got.shape, expected.shape)  # what the API answered, its shape
        if name == "mask":
            assert got.dtype == bool and np.array_equal(got, expected)
        np.testing.assert_allclose(got.astype(float), expected.astype(float), atol=1e-5, err_msg=name)
    assert api.api_inside(tr, TEXT, "cross", 0, 0)["step"] == len(s.positions) - 1  # no step: the last
    with pytest.raises(gr.Error, match="step index"):
        api.api_inside(tr, TEXT, "cross", 0, 0, 999)
    n = sum(np.array(d[a]).size for a in ui_api.INSIDE_ARRAYS)
    monkeypatch.setattr(ui_api, "MAX_API_WEIGHTS", n - 1)
    with pytest.raises(gr.Error, match="at most"):
        api.api_inside(tr, TEXT, "decoder_self", 1, 2, 2)


def test_inside_endpoint_through_gradio_client(tr):
    from gradio_client import Client
    with serving(tr) as url:
        d = Client(url, verbose=False).predict(TEXT, "cross", 0, 1, 1, api_name="/inside")
    s = tr.start(TEXT)
    s.step()
    np.testing.assert_allclose(np.array(d["weights"]), s.inside("cross", 0, 1).weights, atol=1e-5)
