"""Head atlas: statistics on hand-made maps, roles, BLEU with heads off, pruning curve, the CLI."""
import json
import math
import shutil

import numpy as np
import pytest

from transformer.decode.decoding import Translator
from transformer.interpret.capture import AttentionMaps
from transformer.model.metrics import bleu
from transformer.train import atlas as A

SRC = ["▁Ein", "▁Hund", ".", "</s>"]  # S = 4
TGT = ["<s>", "▁A", "▁dog"]  # T = 3 decoder inputs


def onehot(rows, n):
    a = np.zeros((len(rows), n))
    a[np.arange(len(rows)), rows] = 1.0
    return a


def hand_maps():
    enc = np.stack([onehot([0, 0, 1, 2], 4), np.full((4, 4), 0.25)])[None]  # (1, 2, 4, 4): previous, uniform
    dec = np.array([[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]])[None, None]  # (1, 1, 3, 3)
    cross = np.stack([np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.1, 0.1, 0.2, 0.6]]),
                      onehot([2, 1, 0], 4)])[None]  # (1, 2, 3, 4): diagonal-ish, backwards
    return AttentionMaps(enc, dec, cross, SRC, TGT)


def test_statistics_equal_hand_computed_values():
    st = A.head_statistics([hand_maps()])
    prev, uni = st[("encoder_self", 0, 0)], st[("encoder_self", 0, 1)]
    # previous-token head: row 0 on itself, rows 1..3 on i-1 (row 3 is '</s>' looking at '.')
    assert prev == {"confidence": 1.0, "entropy": 0.0, "share_same": 0.25, "share_previous": 1.0, "share_next": 0.0,
                    "share_bos": None, "share_eos": 0.0, "share_punctuation": 0.25, "distance": 0.75,
                    "monotonicity": None, "argmax_previous": 1.0, "argmax_next": 0.0, "argmax_same": 0.25,
                    "argmax_boundary": 0.0, "argmax_punctuation": 0.25, "argmax_rarest": None, "agreement": None}
    assert uni["confidence"] == 0.25 and uni["entropy"] == round(math.log(4), 4)
    assert uni["share_same"] == uni["share_previous"] == uni["share_next"] == uni["share_eos"] == 0.25
    assert uni["share_punctuation"] == 0.25 and uni["distance"] == 1.25  # (1.5 + 1 + 1 + 1.5) / 4
    # decoder self: the <s> row (a single visible key) is skipped; rows 1 and 2 count
    d = st[("decoder_self", 0, 0)]
    h2 = -(0.2 * math.log(0.2) + 0.3 * math.log(0.3) + 0.5 * math.log(0.5))
    assert d["confidence"] == 0.5 and d["entropy"] == round((math.log(2) + h2) / 2, 4)
    assert d["share_same"] == 0.5 and d["share_previous"] == 0.4 and d["share_next"] is None
    assert d["share_bos"] == 0.35 and d["share_eos"] == 0.0 and d["distance"] == 0.6 and d["monotonicity"] is None
    # cross: argmax 0, 1, </s> -> one pair (0, 1), non-decreasing; the diagonal is d_i = i * 3 / 2
    c = st[("cross", 0, 0)]
    assert c["share_same"] is None and c["share_previous"] is None and c["share_next"] is None
    assert c["confidence"] == round(1.9 / 3, 4) and c["share_eos"] == round(0.8 / 3, 4)
    assert c["share_punctuation"] == round(0.5 / 3, 4) and c["share_bos"] is None
    # strongest keys: source 0, 1, </s> (head 0) and 2 '.', 1, 0 (head 1); each agrees with the other at row 1
    assert (c["argmax_boundary"] == round(1 / 3, 4) and c["argmax_punctuation"] == 0.0
            and c["agreement"] == round(1 / 3, 4))
    assert st[("cross", 0, 1)]["argmax_punctuation"] == round(1 / 3, 4) and c["argmax_previous"] is None
    # the uniform encoder head: its 4 tied keys share each query
    assert uni["argmax_previous"] == uni["argmax_same"] == 0.25 and uni["argmax_punctuation"] == 0.25
    assert c["distance"] == round((0.6 + 0.7 + 0.7) / 3, 4) and c["monotonicity"] == 1.0
    back = st[("cross", 0, 1)]
    assert back["monotonicity"] == 0.0 and back["distance"] == round((2 + 0.5 + 3) / 3, 4)


def test_statistics_are_pooled_over_queries_and_take_explicit_pieces():
    m1 = hand_maps()
    # a second sentence of 2 source pieces whose encoder heads both look at '</s>'
    enc2 = np.tile(onehot([1, 1], 2), (1, 2, 1, 1))  # (1, 2, 2, 2)
    m2 = AttentionMaps(enc2, m1.decoder_self, m1.cross[:, :, :, :2] * 0 + onehot([0, 1, 1], 2), None, None)
    st = A.head_statistics([m1, m2], [SRC, ["▁Ja", "</s>"]], [TGT, TGT])
    e = st[("encoder_self", 0, 0)]
    assert e["share_eos"] == round(2 / 6, 4)  # 0 of 4 queries + 2 of 2 queries
    assert e["share_previous"] == 0.75  # queries with a previous key: 3 (all on it) + 1 (on itself)
    assert e["share_next"] == round(1 / 4, 4)  # queries with a next key: 3 + 1, only the second's row 0 has it
    # cross of sentence 2: argmax 0, </s>, </s> -> no pair; sentence 1 gives the only pair
    assert st[("cross", 0, 0)]["monotonicity"] == 1.0
    with pytest.raises(ValueError, match="pieces"):
        A.head_statistics([m2])  # no pieces anywhere
    with pytest.raises(ValueError):
        A.head_statistics([m1], [["▁Ein", "</s>"]], [TGT])  # 2 pieces for 4 keys


# ----------------------------------------------------------------------------------------------------
# With the tiny trained model

HEADS = [("encoder_self", 1, 2), ("cross", 0, 1)]


def test_translate_batch_ablate_matches_the_session_and_checks_heads(tiny_translator, tiny_pairs):
    tr = tiny_translator
    texts = [s for s, _ in tiny_pairs[:6]]
    every_cross = [("cross", l, h) for l in range(tr.config.n_decoder_layers) for h in range(tr.config.n_heads)]
    assert tr.translate_batch(texts, ablate=None) == tr.translate_batch(texts) == tr.translate_batch(texts, ablate=[])
    for heads in (HEADS, every_cross):
        for text in texts[:3]:
            ids = tr.translate_ids([tr.source_ids(text)], ablate=heads)[0]
            assert [tr.config.bos_id] + ids == tr.start(text, ablate=heads).run().target_ids
    assert tr.translate_batch(texts, ablate=every_cross) != tr.translate_batch(texts)  # no source: other output
    with pytest.raises(ValueError, match="kind"):
        tr.translate_batch(texts, ablate=[("enc", 0, 0)])


def test_importance_equals_translate_batch_and_metrics_bleu(tiny_translator, tiny_pairs):
    tr, pairs = tiny_translator, tiny_pairs[:12]
    srcs, refs = [s for s, _ in pairs], [t for _, t in pairs]
    imp = A.importance(tr, pairs, HEADS, batch_size=5, progress=None)
    base = bleu(tr.translate_batch(srcs, 5), refs)
    assert (imp["bleu"], imp["bleu_lc"]) == (base["bleu"], base["bleu_lc"])
    assert set(imp["heads"]) == set(HEADS)
    for head in HEADS:
        expect = bleu(tr.translate_batch(srcs, 5, ablate=[head]), refs)
        assert imp["heads"][head]["bleu_ablated"] == expect["bleu"]
        assert imp["heads"][head]["bleu_lc_ablated"] == expect["bleu_lc"]
        assert imp["heads"][head]["bleu_drop"] == round(base["bleu"] - expect["bleu"], 2)


def test_teacher_forced_maps_are_the_rows_the_session_shows(tiny_translator, tiny_pairs):
    tr = tiny_translator
    texts = [s for s, _ in tiny_pairs[:3]]
    outputs = A.greedy_ids(tr, texts, batch_size=2)
    for text, out, maps in zip(texts, outputs, A.teacher_forced_maps(tr, texts, outputs)):
        s = tr.start(text).run()
        assert s.target_ids == [tr.config.bos_id] + out
        shown = s.attention  # one more row than the statistics read: the query at the final </s>
        T = len(out)
        assert maps.target_tokens == shown.target_tokens[:T] and maps.source_tokens == shown.source_tokens
        np.testing.assert_allclose(maps.encoder_self, shown.encoder_self, atol=1e-5)
        np.testing.assert_allclose(maps.decoder_self, shown.decoder_self[:, :, :T, :T], atol=1e-5)
        np.testing.assert_allclose(maps.cross, shown.cross[:, :, :T], atol=1e-5)


def test_pruning_order_breaks_ties_by_kind_layer_head():
    drops = {("cross", 0, 0): 0.0, ("encoder_self", 1, 0): 0.0, ("decoder_self", 0, 3): -0.5,
             ("encoder_self", 0, 2): 0.0, ("decoder_self", 0, 1): 2.0}
    assert A.pruning_order(drops) == [("decoder_self", 0, 3), ("encoder_self", 0, 2), ("encoder_self", 1, 0),
                                      ("cross", 0, 0), ("decoder_self", 0, 1)]


@pytest.fixture(scope="module")
def tiny_atlas(tiny_trained, tiny_dir, tmp_path_factory):
    """main() on a copy of the tiny checkpoint, 12 val sentences (--limit), default output path."""
    ckpt = tmp_path_factory.mktemp("atlas") / "ckpt"
    shutil.copytree(tiny_trained, ckpt)
    A.main(["--checkpoint", str(ckpt), "--data-dir", str(tiny_dir), "--split", "val", "--limit", "12",
            "--device", "cpu", "--batch-size", "5"])
    return ckpt, json.loads((ckpt / A.ATLAS).read_text())


def test_main_writes_a_valid_atlas(tiny_atlas):
    ckpt, atlas = tiny_atlas
    tr = Translator.load(ckpt, "cpu")
    heads = A.all_heads(tr.model)
    assert len(atlas["heads"]) == len(heads) == 3 * tr.config.n_decoder_layers * tr.config.n_heads
    assert atlas["split"] == "val" and atlas["sentences"] == 12 and atlas["seconds"] > 0
    assert [(h["kind"], h["layer"], h["head"]) for h in atlas["heads"]] == heads
    for h in atlas["heads"]:
        assert set(h) == {"kind", "layer", "head", "role", "bleu_ablated", "bleu_drop", "rank", *A.STATS}
        assert h["role"] == A.assign_role(h["kind"], h)  # the table's role of the recorded statistics
        assert h["role"] in A.ROLES and h["bleu_drop"] == round(atlas["bleu"] - h["bleu_ablated"], 2)
        assert 0 < h["confidence"] <= 1 and h["entropy"] >= 0
        assert (h["monotonicity"] is None) == (h["kind"] != "cross")
    assert sorted(h["rank"] for h in atlas["heads"]) == list(range(1, len(heads) + 1))
    assert atlas["role_rules"] == A.role_rules_json() and [r["role"] for r in atlas["role_rules"]] == list(A.ROLES[:-1])
    assert set(atlas["chance"]) == {"encoder_self", "decoder_self", "cross"}
    assert (0 < atlas["chance"]["encoder_self"]["argmax_previous"] < 1
            and atlas["chance"]["cross"]["argmax_previous"] is None)
    assert any(h["argmax_rarest"] is not None for h in atlas["heads"])  # the tokenizer's piece scores were used


def test_atlas_bleu_ablated_is_translate_batch_plus_metrics_bleu(tiny_atlas, tiny_dir):
    from transformer.train import data as D
    ckpt, atlas = tiny_atlas
    tr = Translator.load(ckpt, "cpu")
    pairs = A.spread(D.load_pairs(tiny_dir, "val"), 12)  # what --limit 12 takes
    srcs, refs = [s for s, _ in pairs], [t for _, t in pairs]
    assert atlas["bleu"] == bleu(tr.translate_batch(srcs), refs)["bleu"]
    entry = {(h["kind"], h["layer"], h["head"]): h for h in atlas["heads"]}
    for head in HEADS:
        assert entry[head]["bleu_ablated"] == bleu(tr.translate_batch(srcs, ablate=[head]), refs)["bleu"]


def test_pruning_curve_is_monotone_starts_intact_and_respects_the_stop_rule(tiny_atlas):
    _, atlas = tiny_atlas
    curve, base = atlas["pruning"], atlas["bleu"]
    assert curve[0] == {"removed": None, "heads_off": 0, "bleu": base}
    assert [p["heads_off"] for p in curve] == list(range(len(curve)))
    drops = {(h["kind"], h["layer"], h["head"]): h["bleu_drop"] for h in atlas["heads"]}
    assert [tuple(p["removed"]) for p in curve[1:]] == A.pruning_order(drops)[:len(curve) - 1]
    removed = [drops[tuple(p["removed"])] for p in curve[1:]]
    assert removed == sorted(removed)  # least important first
    per_kind = {k: sum(1 for h in drops if h[0] == k) for k in ("encoder_self", "decoder_self", "cross")}

    def emptied(n):
        off = [p["removed"][0] for p in curve[1:n + 1]]
        return any(off.count(k) == per_kind[k] for k in per_kind)

    for n, p in enumerate(curve[:-1]):
        assert p["bleu"] >= A.PRUNE_STOP_FRACTION * base and not emptied(n)
    last = len(curve) - 1
    assert last == len(drops) or emptied(last) or curve[-1]["bleu"] < A.PRUNE_STOP_FRACTION * base
    assert atlas["pruning_stop"] == A.pruning_stop(atlas) and atlas["prune_stop_fraction"] == A.PRUNE_STOP_FRACTION
    assert atlas["pruning_stop"]["heads_off"] == last
    within = atlas["prunable_within_1_bleu"]
    assert curve[within]["bleu"] >= base - 1
    assert all(p["bleu"] < base - 1 for p in curve[within + 1:])


def test_atlas_tab_roles_follow_the_atlas_file():
    from attention_lens.atlas import tab as atlas_tab
    atlas = {"heads": [{"kind": "cross", "layer": 1, "head": 2, "role": "alignment"},
                       {"kind": "cross", "layer": 0, "head": 0, "role": "diffuse"},
                       {"kind": "encoder_self", "layer": 0, "head": 1, "role": "previous-token"}]}
    r = atlas_tab.roles(atlas)
    assert r["cross"][1][2] == "alignment" and r["cross"][0][0] == "diffuse"
    assert r["encoder_self"][0] == [None, "previous-token"] and "decoder_self" not in r
    assert atlas_tab.roles(None) == {}
