"""Training: CLI defaults, the step function, --amp, --dry-run and --resume (single process)."""
import json

import pytest
import torch

from transformer.model.config import ModelConfig
from transformer.model.metrics import read_metrics
from transformer.train import data as D
from transformer.train import train


def test_cli_model_defaults_are_model_config_defaults():
    a = train.parse_args([])
    assert train.model_config(a, ModelConfig().vocab_size) == ModelConfig()
    assert a.vocab_size == ModelConfig().vocab_size and ModelConfig().dropout == 0.15
    assert a.amp == "off" and train.AMP["off"] is None and train.AMP["bf16"] is torch.bfloat16
    with pytest.raises(SystemExit):
        train.parse_args(["--amp", "fp16"])


def test_step_groups_give_each_process_every_nth_batch():
    lengths = [(n % 17 + 1, n % 13 + 2) for n in range(200)]
    batches = D.make_batches(lengths, 64, seed=5)
    assert train.step_groups(lengths, 64, 5) == [[b] for b in batches]
    for world in (2, 3):
        groups = train.step_groups(lengths, 64, 5, world)
        assert len(groups) == len(batches) // world and all(len(g) == world for g in groups)
        for r in range(world):  # process r takes batches r, r + N, r + 2N, ...
            assert [g[r] for g in groups] == batches[r::world][:len(groups)]


def _tiny(tiny_tok, tiny_pairs, sgd=False):
    config = ModelConfig(vocab_size=len(tiny_tok), d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
                         d_ff=64, dropout=0.0, attn_dropout=0.0, max_len=64)
    ex = train.encode_pairs(tiny_tok, tiny_pairs, config.max_len)
    model = train.new_model(config, 0, "cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.5) if sgd else \
        train.new_optimizer(model, train.parse_args(["--lr", "3e-3", "--weight-decay", "0.01"]))
    return config, ex, model, opt


def test_train_step_on_several_batches_is_one_step_on_their_union(tiny_tok, tiny_pairs):
    # SGD: the union is padded differently, which changes float rounding; Adam would blow the rounding noise
    # of gradients that are exactly 0 in theory (the key-projection biases) up to full-size updates.
    config, ex, m1, o1 = _tiny(tiny_tok, tiny_pairs, sgd=True)
    _, _, m2, o2 = _tiny(tiny_tok, tiny_pairs, sgd=True)
    ids = ([0, 1, 2, 3, 4], [10, 11, 17], [5, 19])
    pad, bos, eos = config.pad_id, config.bos_id, config.eos_id
    for _ in range(3):
        parts = [train.make_tensors(ex, i, pad, bos, eos, "cpu") for i in ids]
        union = train.make_tensors(ex, [j for i in ids for j in i], pad, bos, eos, "cpu")
        l1, n1, g1 = train.train_step(m1, o1, parts, pad, 0.1, 0.5)
        l2, n2, g2 = train.train_step(m2, o2, [union], pad, 0.1, 0.5)
        assert n1 == n2 == int((union[2] != pad).sum()) and l1 == pytest.approx(l2, rel=1e-5)
        assert g1 == pytest.approx(g2, rel=1e-5) and g1 > 0.5  # clipped
    for k, v in m1.state_dict().items():
        torch.testing.assert_close(v, m2.state_dict()[k], atol=1e-5, rtol=1e-5)


def test_amp_bf16_step_runs_under_autocast(tiny_tok, tiny_pairs):
    config, ex, m32, o32 = _tiny(tiny_tok, tiny_pairs)
    _, _, m16, o16 = _tiny(tiny_tok, tiny_pairs)
    batch = train.make_tensors(ex, list(range(8)), config.pad_id, config.bos_id, config.eos_id, "cpu")
    l32, _, _ = train.train_step(m32, o32, [batch], config.pad_id, 0.1, 1.0)
    l16, _, _ = train.train_step(m16, o16, [batch], config.pad_id, 0.1, 1.0, amp=torch.bfloat16)
    assert l16 != l32 and l16 == pytest.approx(l32, rel=2e-2)  # bf16 rounding, same step
    assert all(p.dtype == torch.float32 for p in m16.parameters())  # master weights stay float32
    assert any(not torch.equal(a, b) for a, b in zip(m16.parameters(), m32.parameters()))


def test_dry_run_with_amp_bf16_trains_and_saves(tmp_path):
    out = tmp_path / "ck"
    metrics = train.main(["--dry-run", "--out", str(out), "--no-progress", "--epochs", "2", "--amp", "bf16"])
    assert (out / "model.pt").exists() and (out / "train_state.pt").exists()
    log = json.loads((out / "training_log.json").read_text())
    assert metrics["amp"] == log["amp"] == read_metrics(out)["amp"] == "bf16"
    assert metrics["world_size"] == read_metrics(out)["world_size"] == 1 and metrics["steps"] > 0
    assert all(e["train_loss"] == e["train_loss"] for e in log["epochs"])  # no NaN


def test_train_dry_run_and_resume(tmp_path):
    from transformer.interpret.history import HISTORY, AttentionHistory
    metrics = train.main(["--dry-run", "--out", str(tmp_path / "ck"), "--no-progress", "--epochs", "2"])
    assert (tmp_path / "ck" / "model.pt").exists() and (tmp_path / "ck" / "training_log.json").exists()
    assert metrics["epochs"] == 2 and metrics["amp"] == "off" and metrics["world_size"] == 1
    first = AttentionHistory.load(tmp_path / "ck" / HISTORY)
    # resume continues from the saved state: one more epoch, the log and the history keep the first two
    metrics = train.main(["--dry-run", "--out", str(tmp_path / "ck"), "--no-progress", "--resume", "--epochs", "3"])
    log = json.loads((tmp_path / "ck" / "training_log.json").read_text())
    assert metrics["epochs"] == 3 and [e["epoch"] for e in log["epochs"]] == [1, 2, 3]
    assert log["epochs"][2]["step"] > log["epochs"][1]["step"]
    # each start is recorded with its flags (the log's "args" are the first start's)
    assert [(s["step"], s["args"]["epochs"], s["args"]["resume"]) for s in log["starts"]] == [
        (0, 2, False), (log["epochs"][1]["step"], 3, True)]
    # a start with nothing left to train only finishes the run (averaging, metrics.json): recorded too
    train.main(["--dry-run", "--out", str(tmp_path / "ck"), "--no-progress", "--resume", "--epochs", "3"])
    log = json.loads((tmp_path / "ck" / "training_log.json").read_text())
    assert len(log["starts"]) == 3 and len(log["epochs"]) == 3 and log["starts"][2]["epoch"] == 4
    h = AttentionHistory.load(tmp_path / "ck" / HISTORY)
    assert h.epochs[0] == 0 and h.epochs[-3:] == [1, 2, 3] and h.epochs[:-1] == first.epochs  # 0 < e < 1: inside 1
    assert h.sentences == first.sentences == D.read_examples()[:4]
    assert h.target(1, 2) == first.target(1, 2)
    torch.testing.assert_close(torch.from_numpy(h.cross(1, 2)), torch.from_numpy(first.cross(1, 2)))


def test_a_state_written_before_the_generators_were_saved_per_process_still_resumes(tmp_path):
    """A train_state.pt of the code before transformer.train.train_state saved every process's generators ("rngs")
    holds the CPU generator alone ("rng"): a run paused by that code resumes, and on the CPU it still ends where
    an uninterrupted run ends (dropout is on in --dry-run)."""
    from transformer.train.train_state import STATE
    common = ["--dry-run", "--no-progress", "--epochs", "2", "--device", "cpu"]
    train.main(common + ["--out", str(tmp_path / "whole")])
    train.main(common + ["--out", str(tmp_path / "parts"), "--stop-after-steps", "5"])
    st = torch.load(tmp_path / "parts" / STATE, weights_only=True)
    assert len(st["rngs"]) == st["world_size"] == 1 and torch.equal(st["rng"], st["rngs"][0]["cpu"])
    old = {k: v for k, v in st.items() if k not in ("rngs", "world_size")}
    assert set(old) == {"model", "optim", "step", "epoch", "next_group", "train_seconds", "rng"}  # as it was
    torch.save(old, tmp_path / "parts" / STATE)
    train.main(common + ["--out", str(tmp_path / "parts"), "--resume"])
    a, b = (torch.load(tmp_path / d / STATE, weights_only=True) for d in ("whole", "parts"))
    assert a["step"] == b["step"] > 5 and set(a) == set(b)
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name


def test_dry_run_with_atlas_writes_the_head_atlas(tmp_path):
    import json

    from transformer.train.train import main
    main(["--dry-run", "--out", str(tmp_path / "ck"), "--no-progress", "--epochs", "1", "--atlas"])
    atlas = json.loads((tmp_path / "ck" / "head_atlas.json").read_text())
    # the dry-run model: 1 encoder + 1 decoder layer, 2 heads -> 2 + 2 + 2 heads
    assert len(atlas["heads"]) == 6 and atlas["split"] == "mixed_val" and "pruning" in atlas  # both domains
    assert {h["kind"] for h in atlas["heads"]} == {"encoder_self", "decoder_self", "cross"}


def test_concatenations_join_whole_pairs_in_step(tmp_path):
    from transformer.train.corpus import concatenations
    pairs = [(f"quelle {i} .", f"source {i} .") for i in range(20)]
    made = concatenations(pairs, 50, seed=3)
    assert len(made) == 50 and made == concatenations(pairs, 50, seed=3) != concatenations(pairs, 50, seed=4)
    for src, tgt in made:
        ids = [int(w) for w in src.split() if w.isdigit()]
        assert 2 <= len(ids) <= 3 and len(set(ids)) == len(ids)  # 2-3 distinct pairs
        assert src == " ".join(pairs[i][0] for i in ids) and tgt == " ".join(pairs[i][1] for i in ids)
    assert {len([w for w in s.split() if w.isdigit()]) for s, _ in made} == {2, 3}
    assert concatenations(pairs, 0, seed=3) == [] and concatenations(pairs[:2], 5, seed=3) == []


def test_concat_adds_pairs_made_of_training_pairs_only(tmp_path):
    from transformer.train.synthetic import tiny_corpus, tiny_tatoeba
    a = train.parse_args(["--concat", "0.5"])
    plain, _, _ = train.corpora(train.parse_args([]), tiny_corpus(tmp_path), tiny_tatoeba(tmp_path))
    more, val_sets, _ = train.corpora(a, tiny_corpus(tmp_path), tiny_tatoeba(tmp_path))
    assert more[:len(plain)] == plain and len(more) == len(plain) + round(0.5 * len(plain))
    sources = {s for s, _ in plain}
    for src, _ in more[len(plain):]:  # every piece of a concatenation is a training source: no held-out sentence
        assert any(src.startswith(s) for s in sources)
    held_out = {s for pairs in val_sets.values() for s, _ in pairs}
    assert not any(h in src for h in held_out for src, _ in more[len(plain):] if h not in sources)


def test_init_starts_from_the_checkpoints_weights(tmp_path):
    """--init: with a learning rate of 0 the weights trained from the checkpoint are the checkpoint's."""
    import torch
    train.main(["--dry-run", "--out", str(tmp_path / "a"), "--no-progress", "--epochs", "1"])
    train.main(["--dry-run", "--out", str(tmp_path / "b"), "--no-progress", "--epochs", "1", "--init",
                str(tmp_path / "a"), "--lr", "0", "--seed", "5"])
    a = torch.load(tmp_path / "a" / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b" / "model.pt", weights_only=True)["state_dict"]
    assert (tmp_path / "a" / "tokenizer.model").read_bytes() == (tmp_path / "b" / "tokenizer.model").read_bytes()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_long_upsample_repeats_the_long_tatoeba_pairs_only(tmp_path):
    """--long-upsample K: Tatoeba training pairs of --long-words source words or more, K more times; no caption."""
    from transformer.train.corpus import long_pairs
    from transformer.train.synthetic import tiny_corpus, tiny_tatoeba
    pairs = [("a b c", "x"), ("a", "y"), ("a b c d", "z")]
    assert long_pairs(pairs, 3, 2) == [("a b c", "x"), ("a b c d", "z")] * 2 and long_pairs(pairs, 3, 0) == []
    data, tat = tiny_corpus(tmp_path), tiny_tatoeba(tmp_path)
    plain, _, _ = train.corpora(train.parse_args([]), data, tat)
    more, _, _ = train.corpora(train.parse_args(["--long-upsample", "2", "--long-words", "3"]), data, tat)
    extra = more[len(plain):]
    assert more[:len(plain)] == plain and extra and all(len(s.split()) >= 3 for s, _ in extra)
    captions = {s for s, _ in train.corpora(train.parse_args(["--tatoeba", "none"]), data, None)[0]}
    assert not any(s in captions for s, _ in extra)
    assert all(n % 2 == 0 for n in __import__("collections").Counter(extra).values())  # each one 2 more times


def test_sample_alpha_segments_the_same_text_in_other_pieces_reproducibly(tiny_tok, tiny_pairs):
    """--sample-alpha: each epoch's pieces are drawn from the tokenizer (subword regularisation); a seed gives the
    same draw (a resumed epoch meets the batches it left), another seed another, and every draw spells the text."""
    from transformer.train.steps import encode_pairs
    best = encode_pairs(tiny_tok, tiny_pairs, 64)
    one, again = (encode_pairs(tiny_tok, tiny_pairs, 64, 0.1, 7) for _ in range(2))
    other = encode_pairs(tiny_tok, tiny_pairs, 64, 0.1, 8)
    assert one == again != other and one != best
    assert sum(a != b for a, b in zip(one, best)) > len(best) // 4
    for (src, tgt), (s, t) in zip(tiny_pairs, one):
        assert tiny_tok.decode(s) == src and tiny_tok.decode(t) == tgt and s[-1] == tiny_tok.eos_id


def test_a_run_with_sample_alpha_draws_each_epoch_anew_and_resumes_into_the_same_draw(tmp_path, monkeypatch):
    from transformer.train import steps
    draws = []

    def spy(tok, pairs, max_len, alpha=0.0, seed=0):
        draws.append((alpha, seed))
        return steps.encode_pairs(tok, pairs, max_len, alpha, seed)
    monkeypatch.setattr(train, "encode_pairs", spy)
    out, seed = str(tmp_path / "ck"), 5
    args = ["--dry-run", "--out", out, "--no-progress", "--epochs", "2", "--sample-alpha", "0.1", "--seed", str(seed)]
    train.main(args + ["--stop-after-steps", "3"])
    paused = [d for d in draws if d[0] > 0]
    draws.clear()
    metrics = train.main(args + ["--resume"])
    log = json.loads((tmp_path / "ck" / "training_log.json").read_text())
    assert paused == [(0.1, seed * 1000 + 1)]  # epoch 1 drawn once; validation is never sampled
    assert [d for d in draws if d[0] > 0] == [(0.1, seed * 1000 + 1), (0.1, seed * 1000 + 2)]
    assert log["epochs"][0].get("paused_at_group") == 3 and metrics["epochs"] == 2
    assert "pieces sampled each epoch (alpha 0.1)" in metrics["data"]


def test_minutes_fits_the_cosine_to_a_time_budget_and_ends_the_run_when_it_is_spent(tmp_path, monkeypatch):
    """--minutes (a lent GPU's fixed time): the learning rate decays over the budget's training time, not over
    --epochs, and the run ends, validated and saved, when the budget is spent. A fake clock: every reading of
    time.time() in transformer.train.train is 1 s later than the one before, so the budget of 0.5 min is 30 readings."""
    clock = iter(range(10**6))
    monkeypatch.setattr(train.time, "time", lambda: float(next(clock)))
    lrs = []
    real_set_lr = train.set_lr
    monkeypatch.setattr(train, "set_lr", lambda opt, lr: (lrs.append(lr), real_set_lr(opt, lr)))
    out = tmp_path / "ck"
    metrics = train.main(["--dry-run", "--out", str(out), "--no-progress", "--epochs", "50", "--minutes", "0.5",
                          "--average-last", "1", "--lr", "1e-3"])
    log = json.loads((out / "training_log.json").read_text())
    epochs = [e["epoch"] for e in log["epochs"]]
    assert 1 < len(epochs) < 3 and epochs == list(range(1, len(epochs) + 1))  # ended by the budget, before the
    # dry run's 3 epochs (--dry-run caps --epochs at 3)
    assert sum(e["epoch_seconds"] for e in log["epochs"]) <= 30 + len(epochs)  # training time within the budget
    assert metrics["steps"] == log["epochs"][-1]["step"] == len(lrs) and (out / "model.pt").exists()
    after_warmup = lrs[5:]  # the dry run warms up over 5 steps
    assert after_warmup == sorted(after_warmup, reverse=True)  # a cosine over time: never rising
    assert lrs[4] == pytest.approx(1e-3) and after_warmup[-1] < 0.15e-3  # from the peak to near the floor
