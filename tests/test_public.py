"""A public link that stays up: bounded answers, notes for one user alone (exports: tests/test_exports.py)."""
import html
import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import numpy as np
import pytest

from attention_lens.shell import api, inputs
from attention_lens.shell import api as ui_api
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.payload import decode_array
from tests.conftest import DEVICE
from tests.serving import serving
from transformer.decode.decoding import Translator


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


def test_attention_api_is_bounded_with_a_clear_error(tr, monkeypatch):
    d = api.api_attention(tr, "Ein Hund rennt.")
    n = sum(np.array(d[k]).size for k in ("encoder_self", "decoder_self", "cross"))
    monkeypatch.setattr(ui_api, "MAX_API_WEIGHTS", n - 1)
    with pytest.raises(gr.Error, match="attention_compact"):
        api.api_attention(tr, "Ein Hund rennt.")
    monkeypatch.setattr(ui_api, "MAX_API_WEIGHTS", n)
    assert api.api_attention(tr, "Ein Hund rennt.")["translation"] == tr.translate("Ein Hund rennt.")


def test_nested_lists_under_the_bound_stay_under_a_few_megabytes(tr):
    """The worst case the bound allows: MAX_API_WEIGHTS weights of the longest JSON form ('0.1234')."""
    worst = len(json.dumps([0.1234] * api.MAX_API_WEIGHTS))
    assert worst < 3_000_000
    d = api.api_attention(tr, "Ein Hund rennt. " * 200)  # the tiny model's longest input (64 positions)
    assert len(json.dumps(d)) < 3_000_000


def test_compact_attention_round_trips(tr):
    c = api.api_attention_compact(tr, "Eine Katze schläft.")
    maps = tr.start("Eine Katze schläft.").run().attention
    assert c["target_tokens"] == maps.target_tokens and c["translation"] == tr.translate("Eine Katze schläft.")
    for k in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_allclose(decode_array(c[k]), maps[k], atol=1e-4)


def test_truncation_notes_reach_only_the_user_whose_input_was_cut(tr, monkeypatch):
    """Concurrent starts: the long input's request alone gets the note, as gr.Warning and in its answer;
    no process-wide warning state is used (warnings would make this test error)."""
    import threading
    import warnings
    told = []
    monkeypatch.setattr(decoding_views.gr, "Warning", lambda msg, *a, **k: told.append((threading.get_ident(), msg)))
    long_text, short_text = "Ein Hund rennt. " * 200, "Ein Hund rennt."
    answers, barrier = {}, threading.Barrier(8)

    def user(i):
        barrier.wait()
        text = long_text if i % 2 else short_text
        answers[i] = (threading.get_ident(), decoding_views.start(tr, text)[3]["notes"])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        threads = [threading.Thread(target=user, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(answers) == 8
    for i, (ident, notes) in answers.items():
        mine = [m for who, m in told if who == ident]
        if i % 2:
            assert notes and any("to 2000 characters" in n for n in notes)
            assert mine == [html.escape(inputs.told(n)) for n in notes]  # the catalogue's words, as a toast's HTML
        else:
            assert notes == [] and mine == []


def test_truncation_note_in_the_api_answer(tr):
    from gradio_client import Client
    with serving(tr) as url:
        c = Client(url, verbose=False)
        long_topk = c.predict("Ein Hund rennt. " * 200, 8, api_name="/start")[2]
        short_topk = c.predict("Ein Hund rennt.", 8, api_name="/start")[2]
        c.close()
    assert any("to 2000 characters" in n for n in long_topk["notes"]) and short_topk["notes"] == []
