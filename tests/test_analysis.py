import json

import numpy as np
import pytest

from attention_lens.beam.figures import beam_tree_figure
from attention_lens.layers.figures import alignment_figure
from transformer.interpret.analysis import alignment, merge_words, rollout, word_labels, word_spans


def random_stochastic(shape, seed=0):
    a = np.random.default_rng(seed).random(shape)
    return a / a.sum(-1, keepdims=True)


# -- rollout

def test_rollout_hand_made():
    layer1 = [[[1, 0], [1, 0]], [[0, 1], [0, 1]]]  # heads average to [[.5, .5], [.5, .5]]
    layer2 = [[[1, 0], [1, 0]], [[1, 0], [1, 0]]]  # [[1, 0], [1, 0]]
    enc = np.array([layer1, layer2], dtype=np.float32)  # (L=2, H=2, S=2, S=2)
    r = rollout(enc)  # A1 = [[.75, .25], [.25, .75]], A2 = [[1, 0], [.5, .5]]
    assert r.shape == (2, 2, 2)
    np.testing.assert_allclose(r[0], [[0.75, 0.25], [0.25, 0.75]])
    np.testing.assert_allclose(r[1], [[0.75, 0.25], [0.5, 0.5]])  # A2 @ A1, not A1 @ A2
    plain = rollout(enc, residual=False)
    np.testing.assert_allclose(plain[0], [[0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_allclose(plain[1], [[0.5, 0.5], [0.5, 0.5]])


def test_rollout_rows_sum_to_one_and_validates():
    enc = random_stochastic((3, 4, 5, 5))
    for residual in (True, False):
        r = rollout(enc, residual)
        assert r.shape == (3, 5, 5)
        np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(rollout(enc[:1], residual=False)[0], enc[0].mean(0))
    with pytest.raises(ValueError):
        rollout(np.ones((2, 3, 3)))
    with pytest.raises(ValueError):
        rollout(np.ones((1, 1, 2, 3)))


# -- alignment

def test_alignment_hand_made_and_validates():
    cross = np.array([[[[1, 0]], [[0, 1]]],  # layer 0: heads average to [.5, .5]
                      [[[1, 0]], [[1, 0]]]])  # layer 1: [1, 0]; (L=2, H=2, T=1, S=2)
    np.testing.assert_allclose(alignment(cross), [[0.75, 0.25]])
    np.testing.assert_allclose(alignment(cross, 0), [[0.5, 0.5]])
    np.testing.assert_allclose(alignment(cross, 1), [[1.0, 0.0]])
    np.testing.assert_allclose(alignment(random_stochastic((2, 4, 3, 6))).sum(-1), 1.0)
    for bad in (2, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match="layer"):
            alignment(cross, bad)


# -- words

def test_word_spans_and_labels():
    pieces = ["<s>", "▁Eine", "▁Kat", "ze", "▁springt", ".", "</s>"]
    spans = word_spans(pieces)
    assert spans == [(0, 1), (1, 2), (2, 4), (4, 6), (6, 7)]
    assert word_labels(pieces, spans) == ["<s>", "Eine", "Katze", "springt.", "</s>"]
    # the first piece starts a word even without '▁'; a piece after a special does not join it
    assert word_spans(["ab", "c", "▁d"]) == [(0, 2), (2, 3)]
    assert word_spans(["<s>", "x", "▁y", "<unk>", "z"]) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert word_labels(["▁a", "<unk>", "<pad>"], word_spans(["▁a", "<unk>", "<pad>"])) == ["a", "<unk>", "<pad>"]
    assert word_spans([]) == []


def test_merge_words_hand_made():
    w = np.array([[0.2, 0.3, 0.5],
                  [0.6, 0.2, 0.2],
                  [0.1, 0.1, 0.8]])  # 3 query pieces x 3 key pieces
    q_spans, k_spans = [(0, 2), (2, 3)], [(0, 1), (1, 3)]
    # keys summed: [[.2, .8], [.6, .4], [.1, .9]]; then query rows 0-1 averaged
    expected = np.array([[0.4, 0.6],
                         [0.1, 0.9]])
    np.testing.assert_allclose(merge_words(w, q_spans, k_spans), expected)
    stacked = np.stack([w, np.eye(3)])  # (2, 3, 3): leading axes are kept
    out = merge_words(stacked, q_spans, k_spans)
    assert out.shape == (2, 2, 2)
    np.testing.assert_allclose(out[1], [[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(merge_words(w, [(0, 1), (1, 2), (2, 3)], [(0, 1), (1, 2), (2, 3)]), w)


def test_merge_words_rows_sum_to_one_and_validates():
    w = random_stochastic((2, 3, 7, 9), seed=1)  # (L, H, Q, K)
    q_spans = word_spans(["<s>", "▁a", "b", "▁c", "d", "e", "</s>"])
    k_spans = word_spans(["▁x", "y", "▁z", "▁u", "v", "w", "▁t", ".", "</s>"])
    out = merge_words(w, q_spans, k_spans)
    assert out.shape == (2, 3, len(q_spans), len(k_spans))
    np.testing.assert_allclose(out.sum(-1), 1.0)
    for bad_q, bad_k in (([(0, 3)], k_spans), (q_spans, [(0, 4), (5, 9)]), (q_spans, [(0, 5), (4, 9)]),
                         ([(0, 7), (7, 8)], k_spans)):
        with pytest.raises(ValueError):
            merge_words(w, bad_q, bad_k)


# -- figures

def make_tree():
    from transformer.decode.beam import BeamNode
    # root -> 10 ("<script>") -> EOS, and root -> 11 -> 12
    return [[BeamNode(0, 2, -1, 0.0, 0, True)],
            [BeamNode(1, 10, 0, -0.1, 0, True), BeamNode(1, 11, 0, -0.5, 1, True)],
            [BeamNode(2, 3, 0, -0.2, 0, False), BeamNode(2, 12, 1, -0.9, 1, True)]]


PIECES = {2: "<s>", 3: "</s>", 10: "<script>", 11: "▁b", 12: "c"}


def test_beam_tree_figure():
    tree = make_tree()
    fig = beam_tree_figure(tree, PIECES.get)
    assert len(fig["data"]) == 3  # edges, live nodes, finished nodes
    edges, live, done = fig["data"]
    assert edges["x"].count(None) == 4  # one segment per non-root node
    assert len(live["x"]) == 4 and len(done["x"]) == 1
    assert done["marker"]["symbol"] != live["marker"]["symbol"]
    assert (done["x"], done["y"]) == ([2], [1])  # ranks shown from 1
    assert "&lt;script&gt;" in live["text"] and "<script>" not in json.dumps(fig)
    fig = beam_tree_figure(tree, PIECES.get, highlight_path=[(0, 0), (1, 0), (2, 0)])
    assert len(fig["data"]) == 4
    path = fig["data"][1]
    assert path["line"]["width"] > edges["line"]["width"] and (path["x"], path["y"]) == ([0, 1, 2], [1, 1, 1])


def test_beam_tree_figure_of_a_real_search():
    from tests.conftest import small_model
    from transformer.decode.beam import beam_search
    result = beam_search(small_model(vocab=30), [5, 6, 7, 3], 3, max_new=5)
    fig = beam_tree_figure(result, lambda i: f"p{i}", highlight_path=result.best.path)
    n_nodes = sum(len(nodes) for nodes in result.tree)
    assert sum(len(t["x"]) for t in fig["data"][2:]) == n_nodes
    assert len(fig["data"][1]["x"]) == len(result.best.ids) + 1


def test_alignment_figure():
    a = np.array([[0.8, 0.15, 0.05],
                  [0.05, 0.05, 0.9]])  # 2 target x 3 source
    fig = alignment_figure(a, ["▁Ein", "<script>", "</s>"], ["<s>", "▁A"], threshold=0.1)
    lines, (src, tgt) = fig["data"][:-2], fig["data"][-2:]
    assert len(lines) == 3  # weights >= 0.1: (0, 0), (0, 1), (1, 2)
    assert src["y"] == [1, 1, 1] and tgt["y"] == [0, 0]
    assert src["text"][1] == "&lt;script&gt;" and "<script>" not in json.dumps(fig)
    widths = [l["line"]["width"] for l in lines]
    assert widths[0] > widths[1] and widths[2] > widths[0]  # 0.8 > 0.15, 0.9 > 0.8
    assert lines[0]["x"] == [src["x"][0], tgt["x"][0]] and lines[2]["x"] == [src["x"][2], tgt["x"][1]]
    assert len(alignment_figure(a, ["a", "b", "c"], ["x", "y"], threshold=1.0)["data"]) == 2
    with pytest.raises(ValueError):
        alignment_figure(a, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError):
        alignment_figure(a, ["a", "b", "c"], ["x", "y"], threshold=0)


def test_each_tab_turns_its_own_figure_upright_on_a_phone_and_leaves_the_others_to_the_heatmap_rule():
    from attention_lens.beam.figures import upright_beam
    from attention_lens.layers.figures import upright_alignment
    from attention_lens.shell.figures import for_width
    tree = beam_tree_figure(make_tree(), PIECES.get)
    lines = alignment_figure(np.eye(2), ["a", "b"], ["x", "y"])
    assert for_width(tree, 1280, upright_beam) is tree  # a wide page: as it is
    beam = for_width(tree, 390, upright_beam).to_dict()
    assert beam["layout"]["xaxis"]["side"] == "top"  # upright: the places across, the steps down the screen
    assert beam["data"][1]["x"] == [1, 1, 2, 2] and beam["data"][1]["y"] == [0, 1, 1, 2]  # x and y swapped
    upright = for_width(lines, 390, upright_alignment).to_dict()
    assert upright["layout"]["xaxis"]["visible"] is False and "annotations" in upright["layout"]
    for fig, other in ((tree, upright_alignment), (lines, upright_beam)):  # not the tab's figure: drawn as a heatmap
        as_heatmap = for_width(fig, 390, other).to_dict()
        assert as_heatmap["layout"]["xaxis"].get("tickangle") == -90 and "annotations" not in as_heatmap["layout"]


def test_the_side_by_side_heatmaps_titles_are_wrapped_to_their_half_of_a_wide_page():
    """Across layers' matrix and rollout sit side by side on a wide page: their German titles (85 and 92 characters)
    were cut at the plot's right edge at 1280x800 ("... das gelesen w"). in_box wraps a title to its box; the plot
    is otherwise as it was, and a phone's figure (for_width's) or an unknown width passes."""
    import re

    from attention_lens.shell.figures import NARROW, PAGE_SIDES, in_box
    from attention_lens.shell.texts import said
    from transformer.interpret import figures as F
    for title in (said("matrix_title", "de", which=said("all_layers", "de")), said("rollout_title", "de")):
        fig = F.heatmap(np.eye(3), ["a", "b", "c"], ["x", "y", "z"], f"{title}<br><sup>↓ Zeilen · Spalten →</sup>")
        fits = int(((1280 - PAGE_SIDES) * 0.5 - 42) / 8.4)  # characters of the 15 px title in half of 1280 px
        assert len(title) > fits  # the German title does not fit on one line there
        boxed = in_box(fig, 1280, 0.5).to_dict()
        lines = [re.sub(r"<[^>]+>", "", s) for s in boxed["layout"]["title"]["text"].split("<br>")]
        assert len(lines) >= 3 and all(len(s) <= fits for s in lines[:-1]), lines
        assert " ".join(lines[:-1]) == title and lines[-1] == "↓ Zeilen · Spalten →"  # every word kept, in order
        assert boxed["layout"]["margin"]["t"] > fig.layout.margin.t  # room for its lines above the plot
        assert boxed["data"][0]["z"] == fig.to_dict()["data"][0]["z"]
        assert in_box(fig, NARROW - 1, 0.5) is fig and in_box(fig, 0, 0.5) is fig  # a phone's, an unknown width
