"""Word alignment and AER (transformer/decode/align.py): talp parsing, the AER formula on hand-computed cases, the
piece-to-word mapping (and its fallback), the two row conventions, and the command line on a tiny synthetic
pairs/gold set made here (no gold data lives in the repository)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from transformer.decode import align as A

ROOT = Path(__file__).resolve().parent.parent


def test_talp_lines_give_sure_and_possible_links():
    sure, possible = A.parse_talp("1-1 2p3 10-12  3p2\n")
    assert sure == {(1, 1), (10, 12)}
    assert possible == {(1, 1), (2, 3), (10, 12), (3, 2)}  # sure links are possible too
    assert A.parse_talp("") == (set(), set())
    for bad in ("1-", "a-b", "0-1", "1x2", "1-2-3", "-1-2", "1p"):
        with pytest.raises(ValueError, match="talp"):
            A.parse_talp(bad)


def test_aer_of_a_perfect_alignment_is_zero():
    S = {(1, 1), (2, 3), (3, 2)}
    assert A.aer(S, (S, S)) == 0.0
    assert A.aer([S, {(1, 2)}], [(S, S | {(4, 4)}), ({(1, 2)}, set())]) == 0.0  # P given without S: S is added


def test_aer_by_hand():
    # A = {(1,1),(2,2)}, S = {(1,1)}, P = {(1,1),(2,2)}: 1 - (1 + 2) / (2 + 1) = 0
    assert A.aer({(1, 1), (2, 2)}, ({(1, 1)}, {(1, 1), (2, 2)})) == pytest.approx(0.0)
    # one sure hit, one link only possible... here not possible: 1 - (1 + 1) / (2 + 1)
    assert A.aer({(1, 1), (1, 2)}, ({(1, 1)}, {(1, 1), (2, 2)})) == pytest.approx(100 / 3)
    # everything wrong
    assert A.aer({(1, 2), (2, 1)}, ({(1, 1), (2, 2)}, set())) == pytest.approx(100.0)
    # A hits only possible links: 1 - (0 + 2) / (2 + 1)
    assert A.aer({(1, 2), (2, 1)}, ({(1, 1)}, {(1, 2), (2, 1)})) == pytest.approx(100 / 3)
    # an empty alignment misses every sure link
    assert A.aer(set(), ({(1, 1)}, set())) == pytest.approx(100.0)
    assert A.aer(set(), (set(), set())) == 0.0


def test_aer_sums_counts_over_the_corpus_not_a_mean_of_sentences():
    alignments = [{(1, 1)}, {(1, 1), (2, 2), (3, 3)}]
    gold = [({(1, 1)}, {(1, 1)}), ({(1, 2)}, {(1, 2)})]  # sentence AERs 0 and 100: their mean would be 50
    assert A.aer(alignments, gold) == pytest.approx(100 * (1 - (1 + 1) / (4 + 2)))
    with pytest.raises(ValueError):
        A.aer(alignments, gold[:1])


# -- pieces and words -------------------------------------------------------------------------------------

def test_words_map_to_the_joined_sentences_pieces(tiny_translator):
    tok = tiny_translator.tokenizer
    words = ["Ein", "Hund", "rennt", "."]
    ids, spans, joined = A.word_pieces(tok, words)
    assert joined and ids == tok.encode("Ein Hund rennt .")
    pieces = tok.pieces(ids)
    assert len(spans) == len(words) and spans[0][0] == 0 and spans[-1][1] == len(ids)
    for (a, b), w in zip(spans, words):
        assert "".join(pieces[a:b]).replace("\u2581", "") == w
    src, tgt, _src_spans, tgt_spans = A.pair_ids(tiny_translator, words, ["A", "dog", "runs", "."])
    assert src == tiny_translator.source_ids("Ein Hund rennt .")
    assert tgt == tiny_translator.target_ids_of("A dog runs .") and tgt_spans[0][0] == 1  # BOS at 0


@pytest.mark.parametrize("words", [["Ein", "Hund\u2581rennt", "."],  # a '▁' inside a word splits it
                                   ["Ein", "\uff28und", "rennt"],  # full-width H: normalised to H
                                   ["Ein", "Hund", "\u200b"]])  # a word SentencePiece drops
def test_words_the_tokeniser_splits_differently_are_tokenised_one_by_one(tiny_translator, words):
    tok = tiny_translator.tokenizer
    ids, spans, joined = A.word_pieces(tok, words)
    assert not joined and len(spans) == len(words)
    assert all(b > a for a, b in spans) and spans[-1][1] == len(ids)
    for (a, b), w in zip(spans, words):
        assert ids[a:b] == (tok.encode(w) or [tok.unk_id])
    got = A.alignment(tiny_translator, words, ["A", "dog", "runs"], "attention", "all", "predicts")
    assert {j for _, j in got} == {1, 2, 3} and all(1 <= i <= len(words) for i, _ in got)


def test_blank_words_are_refused(tiny_translator):
    for words in ([], ["Ein", ""], ["Ein", " "]):
        with pytest.raises(ValueError):
            A.word_pieces(tiny_translator.tokenizer, words)


def test_only_pairs_too_long_are_skipped_as_too_long(tiny_translator):
    """Issue 43 B6: evaluate skips (and counts in its note) the pairs too long for the model, and only those; any
    other ValueError (here a blank word, which word_pieces refuses) propagates instead of being called too long."""
    tr = tiny_translator
    ok = (["Ein", "Hund", "rennt", "."], ["A", "dog", "runs", "."], A.parse_talp("1-1 2-2 3-3 4-4"))
    long_words = ["Hund"] * tr.config.max_len  # every word at least one piece: more pieces than the model reads
    too_long = (long_words, ["A", "dog", "runs", "."], A.parse_talp("1-1"))
    notes = []
    results = A.evaluate(tr, [ok, too_long], ["attention"], notes)
    assert notes == ["1 pairs too long for the model were skipped"] and {r["pairs"] for r in results} == {1}
    blank = (["Ein", "", "rennt"], ["A", "dog", "runs"], A.parse_talp("1-1"))
    notes = []
    with pytest.raises(ValueError, match="non-blank strings"):
        A.evaluate(tr, [ok, blank], ["attention"], notes)
    assert notes == []


# -- rows and conventions ---------------------------------------------------------------------------------

def test_the_two_conventions_read_different_rows_and_ignore_eos():
    # source: 3 words over pieces [0], [1, 2], [3], then </s> at 4; target: <s> w1 w2(2 pieces) </s>, T = 5
    src_spans, tgt_spans = [(0, 1), (1, 3), (3, 4)], [(1, 2), (2, 4)]
    rows = np.zeros((5, 5))
    rows[:, 4] = 10.0  # </s> has the most mass everywhere: never linked
    rows[0, 0] = 1  # row 0 (input <s>) predicts w1: source word 1
    rows[1, 3] = 1  # row 1 (input w1) predicts w2's first piece: word 3
    rows[2, 1], rows[2, 2] = 0.3, 0.3  # row 2 predicts w2's second piece: word 2 (0.6 summed over its pieces)
    rows[3, 3] = 0.5  # row 3 (input w2's second piece) predicts </s>
    # predicts: w1 <- row 0 -> word 1; w2 <- mean of rows 1, 2: word 3 (1 / 2) beats word 2 (0.6 / 2)
    assert A.links(rows, src_spans, tgt_spans, "predicts") == {(1, 1), (3, 2)}
    rows[2, 1] = rows[2, 2] = 0.6  # now word 2 has 1.2 / 2 against word 3's 1 / 2
    assert A.links(rows, src_spans, tgt_spans, "predicts") == {(1, 1), (2, 2)}
    # input: w1 <- row 1 -> word 3; w2 <- mean of rows 2, 3 -> word 2 (1.2 / 2) beats word 3 (0.5 / 2)
    assert A.links(rows, src_spans, tgt_spans, "input") == {(3, 1), (2, 2)}
    with pytest.raises(ValueError, match="convention"):
        A.links(rows, src_spans, tgt_spans, "output")


def test_alignment_from_the_model(tiny_translator):
    tr = tiny_translator
    src, tgt = ["Ein", "Hund", "rennt", "."], ["A", "dog", "runs", "."]
    for method in A.METHODS:
        for convention in A.CONVENTIONS:
            got = A.alignment(tr, src, tgt, method, "all", convention)
            assert sorted(j for _, j in got) == [1, 2, 3, 4] and all(1 <= i <= 4 for i, _ in got)
    assert A.alignment(tr, src, tgt, "attention", 1) != set()
    with pytest.raises(ValueError):
        A.alignment(tr, src, tgt, "alti", 0)  # whole-model rows only
    with pytest.raises(ValueError):
        A.alignment(tr, src, tgt, "gradients")


# -- the command line -------------------------------------------------------------------------------------

@pytest.fixture()
def corpus(tmp_path, tiny_pairs):
    """A synthetic pairs/gold set from the tiny corpus: 'Ein X Y .' ||| 'A x y .', gold the diagonal, plus
    one longer pair."""
    pairs, gold = [], []
    for de, en in tiny_pairs[:6]:
        pairs.append(f"{de[:-1]} . ||| {en[:-1]} .")
        gold.append("1-1 2-2 3-3 4p4")
    pairs.append("Ein Hund rennt und ein Mann sitzt . ||| A dog runs and a man sits .")
    gold.append("1-1 2-2 3-3 4-4 5-5 6-6 7-7 8-8")
    (tmp_path / "pairs.txt").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    (tmp_path / "gold.talp").write_text("\n".join(gold) + "\n", encoding="utf-8")
    return tmp_path / "pairs.txt", tmp_path / "gold.talp"


def run_cli(capsys, *argv):
    assert A.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def test_the_cli_prints_one_json_line_per_method_layer_and_convention(corpus, tiny_trained, capsys):
    pairs, gold = corpus
    out = run_cli(capsys, "--pairs", pairs, "--gold", gold, "--checkpoint", tiny_trained, "--device", "cpu", "--json")
    rows = [json.loads(line) for line in out.strip().splitlines()]
    keys = [(r["method"], r["layer"], r["convention"]) for r in rows]
    want = [("attention", layer, c) for layer in (0, 1, "all") for c in A.CONVENTIONS]
    want += [(m, "all", c) for m in ("alti", "saliency") for c in A.CONVENTIONS]
    assert sorted(map(str, keys)) == sorted(map(str, want)) and len(set(map(str, keys))) == len(keys) == 10
    for r in rows:
        assert set(r) == {"method", "layer", "convention", "pairs", "aer"}
        assert r["pairs"] == 7 and 0.0 <= r["aer"] <= 100.0
    table = run_cli(capsys, "--pairs", pairs, "--gold", gold, "--checkpoint", tiny_trained, "--device", "cpu",
                    "--method", "alti")
    assert "AER" in table and "percent" in table and len(table.strip().splitlines()) == 2 + 2


def test_max_words_and_limit_filter_the_pairs(corpus, tiny_trained, capsys):
    pairs, gold = corpus
    common = ["--pairs", pairs, "--gold", gold, "--checkpoint", tiny_trained, "--device", "cpu", "--json",
              "--method", "attention"]
    assert {json.loads(x)["pairs"] for x in run_cli(capsys, *common, "--max-words", 4).splitlines()} == {6}
    assert {json.loads(x)["pairs"] for x in run_cli(capsys, *common, "--max-words", 8).splitlines()} == {7}
    assert {json.loads(x)["pairs"] for x in run_cli(capsys, *common, "--limit", 2).splitlines()} == {2}
    with pytest.raises(SystemExit):
        A.main([str(a) for a in common] + ["--max-words", "2"])  # nothing left


def test_the_cli_aer_is_the_libraries(corpus, tiny_trained, capsys):
    pairs, gold = corpus
    from transformer.decode.decoding import Translator
    tr = Translator.load(tiny_trained, device="cpu")
    data = A.read_pairs(pairs, gold)
    found = [A.alignment(tr, s, t, "attention", "all", "input") for s, t, _ in data]
    want = A.aer(found, [g for _, _, g in data])
    out = run_cli(capsys, "--pairs", pairs, "--gold", gold, "--checkpoint", tiny_trained, "--device", "cpu",
                  "--json", "--method", "attention")
    (row,) = [json.loads(x) for x in out.splitlines() if '"all"' in x and '"input"' in x]
    assert row["aer"] == pytest.approx(want, abs=1e-3)


def test_mismatched_or_malformed_files_are_refused(tmp_path, tiny_trained):
    (tmp_path / "p.txt").write_text("Ein Hund ||| A dog\nEin Mann ||| A man\n", encoding="utf-8")
    (tmp_path / "g.talp").write_text("1-1\n", encoding="utf-8")
    (tmp_path / "bad.talp").write_text("1-1\n1-x\n", encoding="utf-8")
    (tmp_path / "far.talp").write_text("1-1\n3-1\n", encoding="utf-8")
    for gold in ("g.talp", "bad.talp", "far.talp"):
        with pytest.raises(SystemExit):
            A.main(["--pairs", str(tmp_path / "p.txt"), "--gold", str(tmp_path / gold), "--checkpoint",
                    str(tiny_trained)])


def test_python_dash_m(corpus, tiny_trained):
    pairs, gold = corpus
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "transformer.align", "--pairs", str(pairs), "--gold", str(gold),
                        "--checkpoint", str(tiny_trained), "--device", "cpu", "--method", "attention", "--json",
                        "--limit", "3"], check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(r.stdout.strip().splitlines()) == 6 and all(json.loads(x)["pairs"] == 3 for x in r.stdout.splitlines())
