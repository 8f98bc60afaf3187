"""transformer/interpret/agreement.py: word alignment of a decoded sentence by several methods, and their agreement.
Word scores are checked against a version written here with loops (a word's rows averaged over the rows that predict its
pieces, its source pieces summed), on hand-made rows; then a session's, against the library's attributions."""
import numpy as np
import pytest

from tests.conftest import DEVICE
from transformer.decode.decoding import Translator
from transformer.interpret.agreement import session_alignment, word_alignment
from transformer.interpret.attribution import METHODS

SRC = ["▁Ein", "▁Hund", "▁renn", "t", ".", "</s>"]  # words: Ein, Hund, rennt. (the '.' joins the word before it)
TGT = ["<s>", "▁A", "▁do", "g", "▁runs", "</s>"]  # words: A, dog, runs


def by_loops(rows, src_spans, tgt_spans):
    out = np.zeros((len(tgt_spans), len(src_spans)))
    for w, (a, b) in enumerate(tgt_spans):
        for r in range(a - 1, b - 1):  # the rows that predict pieces a..b-1
            for k, (x, y) in enumerate(src_spans):
                out[w, k] += sum(rows[r, j] for j in range(x, y)) / (b - a)
    return out


def test_word_scores_and_links_by_loops():
    g = np.random.default_rng(0)
    rows = {m: g.random((len(TGT), len(SRC))) for m in ("one", "two", "three")}
    rows["two"][:, 1] = 5  # every word linked to Hund
    wa = word_alignment(rows, SRC, TGT)
    assert wa.source_words == ["Ein", "Hund", "rennt."] and wa.target_words == ["A", "dog", "runs"]
    for m, r in rows.items():
        want = by_loops(r, [(0, 1), (1, 2), (2, 5)], [(1, 2), (2, 4), (4, 5)])
        np.testing.assert_allclose(wa.scores[m], want, rtol=1e-6)
        assert wa.best[m] == [int(i) for i in np.argmax(want, -1)]
    assert wa.best["two"] == [1, 1, 1]


def test_agreement_counts_the_methods_that_pick_one_source_word():
    rows = {m: np.zeros((len(TGT), len(SRC))) for m in ("a", "b", "c")}
    for m, picks in zip(rows, ([0, 1, 2], [0, 1, 0], [0, 2, 1])):
        for w, (first_row, k) in enumerate(zip([0, 1, 3], picks)):
            rows[m][first_row, [0, 1, 2][k]] = 1  # the row predicting the word's first piece
    wa = word_alignment(rows, SRC, TGT)
    assert wa.agreement() == [3, 2, 1]
    assert wa.majority() == [0, 1, None]


def test_no_target_word_gives_empty_arrays():
    wa = word_alignment({"a": np.full((2, 3), 0.5)}, ["▁Ja", ".", "</s>"], ["<s>", "</s>"])
    assert wa.target_words == [] and wa.scores["a"].shape == (0, 1) and wa.agreement() == []


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


def test_a_sessions_alignment_reads_its_whole_history(tr):
    s = tr.start("Ein Hund rennt.").run()
    s.goto(1)  # the cursor does not matter: the whole history is read
    wa = session_alignment(s)
    assert wa.methods == METHODS
    full = s.fork()
    full.cursor = len(full.positions) - 1
    want = word_alignment({m: full.attribution(m).source for m in METHODS}, full.source_tokens, full.target_tokens)
    assert wa.target_words == want.target_words and len(wa.target_words) >= 2
    for m in METHODS:
        np.testing.assert_allclose(wa.scores[m], want.scores[m], atol=1e-6)
