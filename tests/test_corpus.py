"""Tatoeba split without leakage, corpus mixing, and a paused + resumed training run equal to an uninterrupted one."""
import gzip
import json
import random

import pytest
import torch

from transformer.train import corpus as C
from transformer.train import data as D
from transformer.train import train
from transformer.train.synthetic import tiny_corpus


def hub_corpus(n=1000, seed=0):
    """Pairs that share sides as Tatoeba's do: two German sentences with one English translation, a German
    sentence with two translations, and a hub ("Hi.") with more translations than a held-out component may have."""
    rng = random.Random(seed)
    pairs = []
    for j in range(n):
        pairs += [(f"Satz {j}.", f"Sentence {j}."), (f"Ein Satz {j}.", f"Sentence {j}.")]
        if rng.random() < 0.3:
            pairs.append((f"Satz {j}.", f"A sentence {j}."))
    pairs += [(f"Hallo {i}!", "Hi.") for i in range(C.MAX_COMPONENT + 1)]
    return pairs


def sides(pairs):
    return {C.norm(s) for p in pairs for s in p}


def test_no_sentence_of_val_or_test_occurs_in_training():
    pairs = hub_corpus()
    sp = C.split_tatoeba(pairs, val_n=150, test_n=200, seed=3)
    assert sp.val and sp.test and sp.train
    train_sides = sides(sp.train)
    for held in (sp.val, sp.test):
        assert not {C.norm(d) for d, _ in held} & {C.norm(d) for d, _ in sp.train}
        assert not {C.norm(e) for _, e in held} & {C.norm(e) for _, e in sp.train}
        assert not sides(held) & train_sides
    assert not sides(sp.val) & sides(sp.test)
    assert all(e != "Hi." for _, e in sp.val + sp.test)  # the hub is too large to hold out
    # every pair lands in exactly one part
    assert sorted(sp.train + sp.val + sp.test) == sorted(pairs)
    # about the sizes asked for (whole components are moved, so a few more at most)
    assert 150 <= len(sp.val) < 150 + C.MAX_COMPONENT and 200 <= len(sp.test) < 200 + C.MAX_COMPONENT


def test_comparison_ignores_case_and_spacing():
    pairs = [("Ich bin müde.", "I am tired."), ("ich  bin müde.", "I'm tired.")] + \
            [(f"Wort {i}.", f"Word {i}.") for i in range(200)]
    sp = C.split_tatoeba(pairs, val_n=10, test_n=10, seed=1)
    both = [p for p in sp.train + sp.val + sp.test if C.norm(p[0]) == "ich bin müde."]
    parts = [p in sp.train for p in both]
    assert len(both) == 2 and len(set(parts)) == 1  # together, whichever part they went to


def test_split_is_deterministic_and_seeded():
    pairs = hub_corpus()
    a = C.split_tatoeba(pairs, 100, 100, seed=5)
    b = C.split_tatoeba(list(pairs), 100, 100, seed=5)
    c = C.split_tatoeba(pairs, 100, 100, seed=6)
    assert (a.train, a.val, a.test) == (b.train, b.val, b.test)
    assert a.val != c.val


def test_multi30k_sentences_never_leak_either_way():
    pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(400)] + [("Ein Hund rennt.", "A dog runs.")]
    avoid = {C.norm("A dog runs.")}
    for seed in range(5):
        sp = C.split_tatoeba(pairs, 30, 30, seed=seed, avoid=avoid, forbid_in_train=avoid)
        assert ("Ein Hund rennt.", "A dog runs.") not in sp.val + sp.test + sp.train
        assert sp.dropped == 1


def test_a_component_touching_multi30k_is_never_held_out():
    """`avoid` keeps every component with an avoided sentence (on either side, or connected to one through a
    shared sentence) in training: here only three small components are free, so val and test are exactly those."""
    free = [(f"Frei {i}.", f"Free {i}.") for i in range(3)]
    by_german = [(f"Bild {i}.", f"Other {i}.") for i in range(12)]  # the German side is a caption
    by_english = [(f"Anders {i}.", f"Picture {i}.") for i in range(12)]  # the English side is a caption
    linked = [(f"Bild {i}.", f"Linked {i}.") for i in range(3)]  # shares "Bild i." with an avoided pair
    pairs = free + by_german + by_english + linked
    avoid = {C.norm(f"bild {i}.") for i in range(12)} | {C.norm(f"PICTURE  {i}.") for i in range(12)}
    for seed in range(6):
        sp = C.split_tatoeba(pairs, val_n=2, test_n=2, seed=seed, avoid=avoid)  # len // 10 = 3 each at most
        held = sp.val + sp.test
        assert sorted(held) == sorted(free), (seed, held)  # the free ones, all of them, and nothing else
        assert sorted(sp.train) == sorted(by_german + by_english + linked) and sp.dropped == 0


def test_a_component_over_max_component_is_never_held_out():
    """Components of more than MAX_COMPONENT pairs (hubs) stay in training; one of exactly MAX_COMPONENT may go."""
    hubs = [[(f"Hallo {h}-{i}!", f"Hi {h}.") for i in range(C.MAX_COMPONENT + 1)] for h in range(3)]
    largest = [(f"Tschüss {i}!", "Bye.") for i in range(C.MAX_COMPONENT)]
    pairs = [p for hub in hubs for p in hub] + largest
    for seed in range(6):
        sp = C.split_tatoeba(pairs, val_n=5, test_n=5, seed=seed)
        assert sorted(sp.val) == sorted(largest) and sp.test == [], seed
        assert sorted(sp.train) == sorted(p for hub in hubs for p in hub)


def write_multi30k(folder, parts: dict) -> None:
    """A Multi30k folder ({split}.de.gz, {split}.en.gz) of the given {split: [(de, en)]}."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, pairs in parts.items():
        for k, lang in enumerate(("de", "en")):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(p[k] for p in pairs) + "\n")


def test_training_never_sees_a_multi30k_evaluation_sentence_through_tatoeba(tmp_path):
    """train.load_data splits Tatoeba away from Multi30k: no Tatoeba validation pair shares a sentence with any
    Multi30k split, and no training pair holds a Multi30k val or test sentence."""
    m30k = {split: [(f"Ein Bild {split} {i}.", f"A picture {split} {i}.") for i in range(20)] for split in D.SPLITS}
    write_multi30k(tmp_path / "m30k", m30k)
    lines = [f"Ich sehe {i} Katzen.\tI see {i} cats." for i in range(200)]
    for split, pairs in m30k.items():  # Tatoeba pairs sharing one side with a caption of each split
        lines += [f"Noch ein Satz {split} {i}.\t{en}" for i, (_, en) in enumerate(pairs)]
        lines += [f"{de}\tAnother sentence {split} {i}." for i, (de, _) in enumerate(pairs)]
    path = tmp_path / "tatoeba.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = train.parse_args(["--data-dir", str(tmp_path / "m30k"), "--tatoeba", str(path)])
    pairs, vals, _ = train.load_data(a)
    captions = {C.norm(x) for split in D.SPLITS for p in m30k[split] for x in p}
    evaluation = {C.norm(x) for split in ("val", "test_2016_flickr") for p in m30k[split] for x in p}
    assert len(vals["tatoeba"]) >= 20 and not sides(vals["tatoeba"]) & captions
    assert not sides(pairs) & evaluation
    assert sides(m30k["train"]) <= sides(pairs)  # Multi30k's own training pairs are trained on


def test_read_tatoeba_and_load_split(tmp_path, tiny_dir):
    path = tmp_path / "t.tsv.gz"
    lines = [f"Ich sehe {i} Katzen.\tI see {i} cats." for i in range(300)] + ["kaputt", "", "\tleer"]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    assert len(C.read_tatoeba(path)) == 300
    val, test = C.load_split("tatoeba_val", tiny_dir, path), C.load_split("tatoeba_test", tiny_dir, path)
    trn = C.load_split("tatoeba_train", tiny_dir, path)
    assert len(val) == len(test) == 30 and len(trn) == 240
    assert C.load_split("mixed_val", tiny_dir, path) == D.load_pairs(tiny_dir, "val") + val
    with pytest.raises(D.DataError, match="unknown split"):
        C.load_split("tatoeba", tiny_dir, path)
    with pytest.raises(D.DataError, match="--tatoeba"):
        C.read_tatoeba(tmp_path / "missing.tsv")


def test_mix_upsamples_captions():
    m, t = [("a", "b")] * 3, [("c", "d")] * 5
    assert len(C.mix(m, t, 2)) == 11 and len(C.mix(m, t, 0)) == 5


def test_paused_and_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """--stop-after-steps pauses mid-epoch; --resume continues at the next batch with the same optimiser,
    schedule, RNG and data order, so the weights after 3 epochs are identical."""
    common = ["--dry-run", "--no-progress", "--epochs", "3", "--device", "cpu"]  # CPU whatever the machine has
    train.main(common + ["--out", str(tmp_path / "whole")])
    train.main(common + ["--out", str(tmp_path / "parts"), "--stop-after-steps", "5"])  # inside epoch 1
    train.main(common + ["--out", str(tmp_path / "parts"), "--resume", "--stop-after-steps", "6"])  # inside epoch 2
    train.main(common + ["--out", str(tmp_path / "parts"), "--resume"])
    a = torch.load(tmp_path / "whole" / train.STATE, weights_only=True)
    b = torch.load(tmp_path / "parts" / train.STATE, weights_only=True)
    assert a["step"] == b["step"] > 0
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    log = json.loads((tmp_path / "parts" / "training_log.json").read_text())
    assert [(e["epoch"], e.get("paused_at_group")) for e in log["epochs"]] == [(1, 5), (1, None), (2, 3), (2, None),
                                                                                (3, None)]
    # the attention history: before training, inside epoch 1, after each epoch; once each
    from transformer.interpret.history import AttentionHistory
    h = AttentionHistory.load(tmp_path / "parts" / "attention_history.npz")
    assert h.epochs[0] == 0 and h.epochs[-3:] == [1, 2, 3] and all(0 < e < 1 for e in h.epochs[1:-3])
    assert h.epochs == sorted(set(h.epochs))
    assert h.epochs == AttentionHistory.load(tmp_path / "whole" / "attention_history.npz").epochs


def test_training_data_mixes_both_corpora(tmp_path):
    a = train.parse_args(["--dry-run"])
    train.apply_dry_run(a)
    pairs, vals, tok_sentences = train.load_data(a)
    assert set(vals) == {"multi30k", "tatoeba"}
    n_m30k = len(D.load_pairs(tiny_corpus(tmp_path), "train"))
    assert len(pairs) == len(tok_sentences) + n_m30k * (a.multi30k_upsample - 1)
    assert any("Ich" in s for s, _ in pairs) and any(s.startswith("Ein") for s, _ in pairs)
    a.tatoeba = "none"
    pairs, vals, _ = train.load_data(a)
    assert set(vals) == {"multi30k"} and len(pairs) == n_m30k
