"""The honest test figures (issue 30 item 7): a split scored on all of it, on its long sentences and on the
sentences no training pair shares, from one decoding; and every split read in the model's direction."""
from __future__ import annotations

from transformer.train import corpus as C
from transformer.train.evaluate import LONG_WORDS, match_key, subset_scores, subsets


def test_match_key_ignores_case_punctuation_and_spaces():
    assert match_key("Tom's  tall!") == match_key("toms tall") == "toms tall"
    assert match_key("Tom is tall.") != match_key("Tom's tall.")  # near-duplicates that remain: said, not hidden


def test_subsets():
    train = [("Ich bin müde.", "I'm tired."), ("Wo ist der Bahnhof?", "Where's the station?")]
    pairs = [("ich bin MÜDE", "I am tired."), ("Das ist ein sehr langer Satz mit acht Wörtern hier.", "x"),
             ("Wo ist der Bahnhof", "Where is the station?"), ("Neu.", "New.")]
    s = subsets(pairs, train)
    assert s["all"] == [0, 1, 2, 3] and s[f"{LONG_WORDS}+ words"] == [1] and s["unseen"] == [1, 3]
    scores = subset_scores(pairs, ["I am tired.", "y", "Where is the station?", "New."], train)
    assert scores["unseen"]["sentences"] == 2 and scores["all"]["sentences"] == 4
    assert scores[f"{LONG_WORDS}+ words"]["bleu"] == 0.0 and scores["all"]["bleu"] > scores["unseen"]["bleu"]


def test_splits_are_read_in_the_models_direction(tmp_path):
    from transformer.train.synthetic import tiny_corpus
    d = tiny_corpus(tmp_path)
    de_en = C.load_split("val", d)
    en_de = C.load_split("val", d, src="en", tgt="de")
    assert en_de == [(b, a) for a, b in de_en] and de_en[0][0].startswith("Ein ")


def test_the_english_german_split_holds_out_the_same_pairs():
    """No en->de test sentence is trained on by either model: the split is made once, then turned round."""
    pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(300)]
    sp = C.split_tatoeba(pairs, val_n=20, test_n=30)
    turned = C.oriented(sp, "en")
    assert turned.test == [(e, d) for d, e in sp.test] and turned.train == [(e, d) for d, e in sp.train]
    assert C.oriented(sp, "de") is sp
    assert not {e for e, _ in turned.test} & {e for e, _ in turned.train}


def test_concat_scores_longer_inputs_made_of_the_splits_pairs(tiny_trained, tiny_dir, tmp_path, capsys, monkeypatch):
    """evaluate --concat N: N concatenations of 2-3 of the split's pairs (the same every time), recorded apart."""
    import shutil

    from transformer.model.metrics import read_metrics
    from transformer.train import evaluate
    ck = tmp_path / "ck"
    shutil.copytree(tiny_trained, ck)
    scored, score = [], evaluate.evaluate
    monkeypatch.setattr(evaluate, "evaluate", lambda tr, pairs, *a: scored.append(pairs) or score(tr, pairs, *a))
    common = ["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--split", "val", "--device", "cpu"]
    long = evaluate.main(common + ["--concat", "7", "--save"])
    assert long["sentences"] == 7 and "7 concatenations" in capsys.readouterr().out
    split = C.load_split("val", tiny_dir)
    for src, tgt in scored[0]:  # each one 2-3 of the split's pairs, sources and references in the same order
        parts = [p for p in split if p[0] in src]
        assert 2 <= len(parts) <= 3 and len(src) >= sum(len(p[0]) for p in parts) and tgt.count(".") >= 2
    again = evaluate.main(common + ["--concat", "7"])
    assert scored[1] == scored[0] and again["bleu"] == long["bleu"]
    assert set(read_metrics(ck)["test"]) == {"val+concat7/greedy"}


def test_length_buckets_split_the_sources_by_their_words():
    """1-5, 6-8, 9-12 and 13+ source words (issue 40 item 2): each sentence in exactly one bucket."""
    from transformer.train.evaluate import LENGTH_BUCKETS, bucket_name
    pairs = [(" ".join(["w"] * n) + ".", "x") for n in (1, 5, 6, 8, 9, 12, 13, 41)]
    s = subsets(pairs, [])
    assert [bucket_name(lo, hi) for lo, hi in LENGTH_BUCKETS] == ["1-5 words", "6-8 words", "9-12 words", "13+ words"]
    assert s["1-5 words"] == [0, 1] and s["6-8 words"] == [2, 3] and s["9-12 words"] == [4, 5]
    assert s["13+ words"] == [6, 7]


def test_subsets_also_scores_joined_pairs_of_the_split(tiny_trained, tiny_dir, tmp_path, capsys, monkeypatch):
    """--subsets: the buckets, and 'joined': joins of 2 of the split's own pairs (never trained on), saved."""
    import shutil

    from transformer.model.metrics import read_metrics
    from transformer.train import evaluate
    ck = tmp_path / "ck"
    shutil.copytree(tiny_trained, ck)
    scored, score = [], evaluate.evaluate
    monkeypatch.setattr(evaluate, "evaluate", lambda tr, pairs, *a: scored.append(pairs) or score(tr, pairs, *a))
    monkeypatch.setattr(evaluate, "JOINED", 9)
    r = evaluate.main(["--checkpoint", str(ck), "--data-dir", str(tiny_dir), "--split", "val", "--device", "cpu",
                       "--tatoeba", "none", "--subsets", "--save"])
    out = capsys.readouterr().out
    split = C.load_split("val", tiny_dir)
    assert scored[0] == split and len(scored) == 2 and len(scored[1]) == 9
    for src, tgt in scored[1]:  # two of the split's pairs, sources and targets joined in the same order
        a = next(p for p in split if src.startswith(p[0] + " "))
        b = next(p for p in split if src.endswith(" " + p[0]))
        assert src == f"{a[0]} {b[0]}" and tgt == f"{a[1]} {b[1]}"
    assert r["subsets"]["joined"]["sentences"] == 9 and "joined" in out and "1-5 words" in out
    saved = read_metrics(ck)["test"]["val/greedy"]["subsets"]
    assert saved["joined"]["bleu"] == r["subsets"]["joined"]["bleu"]
    assert sum(saved[k]["sentences"] for k in ("1-5 words", "6-8 words", "9-12 words", "13+ words")) == len(split)
