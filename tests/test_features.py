"""Ablation, beam, across layers, words, export and attention-being-learned, through the app's handlers."""
import json

import gradio as gr
import numpy as np
import pytest

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.beam import handlers as beam_handlers
from attention_lens.layers import handlers as layers_handlers
from attention_lens.learned import handlers as learned_handlers
from attention_lens.shell import exports
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.payload import decode_array
from transformer.interpret import analysis
from transformer.interpret.capture import attention_modules


@pytest.fixture()
def finished(tiny_translator):
    return decoding_views.run(tiny_translator, decoding_views.start(tiny_translator, "Ein Hund rennt.")[0])[0]


def test_ablation_panel_compares_intact_and_ablated(tiny_translator, finished):
    tr = tiny_translator
    every = {kind: ablation_handlers.head_choices(tr, kind) for kind in ("encoder_self", "decoder_self", "cross")}
    intact, ablated, probs, topk, payload, _note = ablation_handlers.ablate(tr, finished, every["encoder_self"],
                                                             every["decoder_self"], every["cross"], 5)
    assert intact == tr.translate("Ein Hund rennt.")
    heads = [(k, l, h) for k, l, _ in attention_modules(tr.model) for h in range(tr.config.n_heads)]
    assert ablated == tr.start("Ein Hund rennt.", ablate=heads).run().translation
    ids = tr.start("Ein Hund rennt.").run().target_ids
    p0 = tr.token_probs(tr.source_ids("Ein Hund rennt."), ids)
    p1 = tr.token_probs(tr.source_ids("Ein Hund rennt."), ids, heads)
    assert [r[1] for r in probs] == tr.tokenizer.pieces(ids[1:])
    np.testing.assert_allclose([r[2] for r in probs], p0, atol=1e-4)
    np.testing.assert_allclose([r[3] for r in probs], p1, atol=1e-4)
    np.testing.assert_allclose([r[4] for r in probs], p1 - p0, atol=2e-4)
    assert len(topk) == 5 and payload["mode"] == "ablated" and payload["target"] == finished.target_tokens
    # the intact session handed in is untouched, and the model still translates as before
    assert finished.ablated == frozenset() and tr.translate("Ein Hund rennt.") == intact
    with pytest.raises(gr.Error, match="at least one head"):
        ablation_handlers.ablate(tr, finished, [], [], [], 5)
    with pytest.raises(gr.Error, match="head label"):
        ablation_handlers.ablate(tr, finished, ["L9 H9 <script>"], [], [], 5)
    with pytest.raises(gr.Error):
        ablation_handlers.ablate(tr, finished, ["L9 H1"], [], [], 5)


def test_beam_panel(tiny_translator):
    tr = tiny_translator
    state, _fig, choices, payload = beam_handlers.beam(tr, "Ein Kind springt.", 3)
    assert len(choices["choices"]) == 3 and choices["value"] == choices["choices"][0]
    assert tr.tokenizer.decode(state["hyps"][0]) in choices["choices"][0]
    assert payload["mode"] == "beam" and payload["target"][-1] == "</s>"
    _fig2, payload2 = beam_handlers.beam_pick(tr, state, choices["choices"][2])
    assert payload2["target"] == tr.tokenizer.pieces([tr.config.bos_id] + state["hyps"][2])
    s1 = beam_handlers.beam(tr, "Ein Kind springt.", 1)[0]
    assert tr.tokenizer.decode(s1["hyps"][0]) == tr.translate("Ein Kind springt.")
    for bad in (0, 9, 2.5, "4"):
        with pytest.raises(gr.Error):
            beam_handlers.beam(tr, "Ein Kind springt.", bad)
    with pytest.raises(gr.Error):
        beam_handlers.beam_pick(tr, state, "17. nope")
    with pytest.raises(gr.Error):
        beam_handlers.beam_pick(tr, None, choices["choices"][0])


def test_across_layers(tiny_translator, finished):
    roll, _lines, matrix = layers_handlers.across_layers(tiny_translator, finished, "all layers", 0.15)
    S = len(finished.source_ids)
    T = len(finished.target_ids) - 1  # finished: the </s> row predicts nothing
    z = np.array(matrix.data[0].z)
    assert z.shape == (T, S)
    np.testing.assert_allclose(z, analysis.alignment(finished.attention.cross)[:T], atol=1e-4)
    assert np.array(roll.data[0].z).shape == (S, S)
    layers_handlers.across_layers(tiny_translator, finished, "layer 2", 0.5)
    for bad in ("layer 0", "layer 3", "<b>"):
        with pytest.raises(gr.Error):
            layers_handlers.across_layers(tiny_translator, finished, bad, 0.15)
    with pytest.raises(gr.Error):
        layers_handlers.across_layers(tiny_translator, finished, "all layers", 0)


def test_word_toggle_merges_pieces(tiny_translator, finished):
    _, _, payload, _ = decoding_views.outputs(finished, 5, words=True)
    maps = finished.attention
    ss, ts = analysis.word_spans(maps.source_tokens), analysis.word_spans(maps.target_tokens)
    assert payload["words"] and payload["source"] == analysis.word_labels(maps.source_tokens, ss)
    cross = decode_array(payload["maps"]["cross"])
    assert cross.shape == (maps.cross.shape[0], maps.cross.shape[1], len(ts), len(ss))
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-3)
    np.testing.assert_allclose(cross, analysis.merge_words(maps.cross, ts, ss), atol=1e-4)
    _s2, _, p2, _ = decoding_views.step_view(tiny_translator, finished, 5, True)
    assert p2["words"]


def test_export_files_hold_the_maps(tiny_translator, finished):
    npz, js, page = exports.export_maps(tiny_translator, finished)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    assert html.startswith("<!doctype html>") and "Plotly" in html and html.count("plotly-graph-div") == 3
    maps = finished.attention
    z = np.load(npz)
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(z[kind], maps[kind])
    assert list(z["source_tokens"]) == maps.source_tokens and list(z["target_tokens"]) == maps.target_tokens
    with open(js, encoding="utf-8") as f:
        d = json.load(f)
    assert d["target_tokens"] == maps.target_tokens and d["translation"] == finished.translation
    np.testing.assert_allclose(np.array(d["cross"]), maps.cross, atol=1e-6)
    with pytest.raises(gr.Error):
        exports.export_maps(tiny_translator, None)


def test_attention_history_recorded_during_training_and_shown(tmp_path):
    from transformer.interpret.history import HISTORY, AttentionHistory
    from transformer.train.train import main
    main(["--dry-run", "--out", str(tmp_path / "ck"), "--no-progress", "--epochs", "2"])
    h = AttentionHistory.load(tmp_path / "ck" / HISTORY)
    assert h.epochs[0] == 0 and h.epochs[-2:] == [1, 2] and len(h.sentences) == 4  # before training ... epoch 2
    assert all(0 < e < 1 for e in h.epochs[1:-2])  # and inside epoch 1
    fig, text = learned_handlers.learned(h, 0, 2)
    z = np.array(fig.data[0].z)
    assert z.ndim == 2 and np.allclose(z.sum(1), 1, atol=2e-3)
    np.testing.assert_allclose(z, h.cross(0, 2).mean((0, 1)), atol=1e-4)
    assert text == "".join(p for p in h.target(0, 2) if p not in ("<s>", "</s>")).replace("▁", " ").strip()
    fig1, _ = learned_handlers.learned(h, 1, 1, "layer 1", "head 2")
    np.testing.assert_allclose(np.array(fig1.data[0].z), h.cross(1, 1)[0, 1], atol=1e-4)
    for bad in ((0, 7), (9, 1), (0, 1, "layer 5"), (0, 1, "layer 1", "head 9"), (None, 1), ("0", 1)):
        with pytest.raises(gr.Error):
            learned_handlers.learned(h, *bad)
    with pytest.raises(gr.Error, match="no attention history"):
        learned_handlers.learned(None, 0, 1)
    with pytest.raises(FileNotFoundError):
        AttentionHistory.load(tmp_path / "missing.npz")


def test_attention_maps_figure_one_head_mean_and_grid(finished):
    maps = finished.attention
    L, H, _T, _S = maps.cross.shape
    one = maps.figure("cross", 1, 2)
    np.testing.assert_allclose(np.array(one.data[0].z), maps.cross[1, 2], atol=1e-4)
    from transformer.interpret.figures import label
    assert list(one.layout.xaxis.ticktext) == [label(p) for p in maps.source_tokens]  # escaped for Plotly
    assert "layer 2 · head 3" in one.layout.title.text
    mean = maps.figure("decoder_self", 0)
    np.testing.assert_allclose(np.array(mean.data[0].z), maps.decoder_self[0].mean(0), atol=1e-4)
    assert "mean of heads" in mean.layout.title.text
    grid = maps.figure("encoder_self")
    assert len(grid.data) == maps.encoder_self.shape[0] * H
    np.testing.assert_allclose(np.array(grid.data[H + 1].z), maps.encoder_self[1, 1], atol=1e-4)  # row-major panels
    column = maps.figure("cross", None, 0)
    assert len(column.data) == L
    for bad in (("cross", L, 0), ("cross", 0, H), ("cross", -1, None), ("cross", True, None)):
        with pytest.raises(ValueError):
            maps.figure(*bad)
    with pytest.raises(KeyError):
        maps.figure("encoder")
