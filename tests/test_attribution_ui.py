"""Attribution in the app, Python side: the Translate view's payload (attention_lens/translate/attribution_payload.py)
decodes back
to the library's arrays for the whole trajectory the view holds (a forced or an ablated one included), its rows sum
to 1, a bad request is answered with the panel's message; the Across layers tab's word alignment is the library's;
the /attribution API answer is bounded."""
import json

import gradio as gr
import numpy as np
import pytest

from attention_lens.shell import api
from attention_lens.shell import api as ui_api
from attention_lens.translate import attribution as attribution_views
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.attribution import alignment_table
from attention_lens.translate.attribution_panel import answer
from tests.conftest import DEVICE
from tests.decoders import decode_attribution
from transformer.decode.decoding import Translator
from transformer.interpret.agreement import session_alignment
from transformer.interpret.attribution import attribute_ids

TEXT = "Ein Hund rennt."
Q = 1 / 65535  # the payload's resolution (uint16)


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


def position_of(session) -> str:
    """What assets/attribution.js sends: the trajectory's last position, as JSON."""
    ids = [p.token for p in session.positions]
    return json.dumps({"step": len(ids) - 1, "ids": ids, "forced": [int(p.forced) for p in session.positions]})


def library(tr, session, method):
    """The library's rows of the session's whole history: (source (T, S), target (T, T))."""
    ids = [p.token for p in session.positions]
    return attribute_ids(tr.model, session.source_ids, ids, method, session.ablated)


@pytest.mark.parametrize("method", ["alti", "saliency"])
def test_the_payload_decodes_to_the_librarys_rows_which_sum_to_one(tr, method):
    state = decoding_views.start(tr, TEXT)[0]  # the server's session sits at step 0, as after Start
    full = tr.start(TEXT).run()
    p = attribution_views.attribution_at(tr, state, position_of(full), method, "7|" + method)
    src, tgt = decode_attribution(p)
    want_src, want_tgt = library(tr, full, method)
    assert p["ids"] == full.target_ids and p["key"] == "7|" + method and p["method"] == method
    assert p["source"] == full.source_tokens and p["target"] == full.target_tokens
    np.testing.assert_allclose(src, want_src, atol=Q)
    np.testing.assert_allclose(tgt, want_tgt, atol=Q)
    assert np.allclose(src.sum(-1) + tgt.sum(-1), 1, atol=(src.shape[1] + tgt.shape[1]) * Q)
    assert (np.triu(tgt, 1) == 0).all()  # causal
    # no position: the session's whole history, whatever its cursor
    same = decode_attribution(attribution_views.attribution_at(tr, state, None, method))
    np.testing.assert_array_equal(same[0], src)


def test_a_forced_trajectorys_attribution_is_that_trajectorys(tr):
    state = decoding_views.start(tr, TEXT)[0]
    pos = json.dumps({"step": 1, "ids": [p.token for p in state.positions[:2]], "forced": [0, 0]})
    piece = decoding_views.step_view(tr, state)[3]["items"][1][0]  # the second most probable piece at step 1
    forced_state = decoding_views.force_at(tr, state, pos, piece)[0]
    assert any(p.forced for p in forced_state.positions)
    p = attribution_views.attribution_at(tr, forced_state, position_of(forced_state), "alti")
    np.testing.assert_allclose(decode_attribution(p)[0], library(tr, forced_state, "alti")[0], atol=Q)
    # the view back on the greedy trajectory while the session holds the forced one: decoded again, the greedy's
    greedy = tr.start(TEXT).run()
    p = attribution_views.attribution_at(tr, forced_state, position_of(greedy), "alti")
    assert p["ids"] == greedy.target_ids
    np.testing.assert_allclose(decode_attribution(p)[0], library(tr, greedy, "alti")[0], atol=Q)


def test_an_ablated_sessions_attribution_has_its_heads_off(tr):
    heads = [("cross", 0, 0), ("cross", 0, 1), ("decoder_self", 0, 2)]
    ablated = tr.start(TEXT, ablate=heads).run()
    p = attribution_views.attribution_at(tr, ablated, None, "alti")
    got = decode_attribution(p)[0]
    np.testing.assert_allclose(got, library(tr, ablated, "alti")[0], atol=Q)
    intact = attribute_ids(tr.model, ablated.source_ids, ablated.target_ids, "alti")[0]
    assert np.abs(got - intact).max() > 10 * Q  # it is not the intact model's


def test_bad_requests_are_answered_with_the_panels_message(tr):
    assert "Press Start first" in answer(None, {"method": "alti", "key": "k"})["error"]
    state = decoding_views.start(tr, TEXT)[0]
    bad = answer(state, {"method": "nonsense", "key": "3|nonsense", "position": position_of(state)})
    assert bad["key"] == "3|nonsense" and "alti" in bad["error"]
    assert "position" in answer(state, {"method": "alti", "position": "{\"ids\": [99999]}", "key": 5})["error"]
    ok = answer(state, {"method": "alti", "position": position_of(state), "key": "x" * 500})
    assert "source_rows" in ok and len(ok["key"]) == 200


def test_the_word_alignment_is_the_librarys(tr):
    state = decoding_views.start(tr, TEXT)[0]
    full = tr.start(TEXT).run()
    fig, table, summary = attribution_views.word_alignment_follow(state, "alti", position_of(full))
    wa = session_alignment(full)
    assert table == alignment_table(wa) and len(table) == len(wa.target_words)
    for row, word, agree in zip(table, wa.target_words, wa.agreement()):
        assert row[0] == word and row[-1] == f"{agree}/3"
        assert row[1:4] == [wa.source_words[wa.best[m][wa.target_words.index(word)]] for m in wa.methods]
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=np.float32), wa.scores["alti"], atol=5e-5)  # 4 decimals
    assert f"{len(wa.target_words)} target word" in summary
    assert attribution_views.word_alignment_follow(None, "alti", None)[0] == gr.skip()  # before Start: quietly nothing
    with pytest.raises(gr.Error):
        attribution_views.word_alignment_at(tr, state, "weights", None)


def test_the_api_answer_is_bounded(tr, monkeypatch):
    d = api.api_attribution(tr, TEXT, "alti")
    s = tr.start(TEXT).run()
    src, tgt = np.array(d["source"]), np.array(d["target"])
    assert src.shape == (len(s.target_ids), len(s.source_ids)) and tgt.shape == (len(s.target_ids),) * 2
    assert src.shape[0] <= 60 and src.shape[1] <= 200 and d["notes"] == []
    assert all(len(repr(x)) <= 6 for row in d["source"] for x in row)  # 4 decimals: 0.1234
    np.testing.assert_allclose(src.sum(-1) + tgt.sum(-1), 1, atol=(src.shape[1] + tgt.shape[1]) * 5e-5)
    np.testing.assert_allclose(src, s.attribution("alti").source, atol=5e-5)
    monkeypatch.setattr(ui_api, "ATTRIBUTION_ROWS", 2)
    cut = api.api_attribution(tr, TEXT, "saliency")
    assert np.array(cut["source"]).shape[0] == 2 and np.array(cut["target"]).shape == (2, 2)
    assert cut["target_tokens"] == s.target_tokens[:2] and "first 2" in cut["notes"][0]
    monkeypatch.setattr(ui_api, "ATTRIBUTION_COLUMNS", 2)
    with pytest.raises(gr.Error, match="source columns"):
        api.api_attribution(tr, TEXT, "alti")
    with pytest.raises(gr.Error, match="method"):
        api.api_attribution(tr, TEXT, "contribution")


def test_the_app_offers_attribution_to_programs(tr):
    from attention_lens.app import build_demo
    demo = build_demo(tr)
    names = {d.get("api_name") for d in demo.config["dependencies"]}
    assert "attribution" in names
