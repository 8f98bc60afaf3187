import warnings

import pytest
import torch

from tests.conftest import small_model
from transformer.decode.decoding import clean_text, greedy_decode, pad_batch
from transformer.model.checkpoint import TOKENIZER, WEIGHTS, CheckpointError, load_checkpoint, save_checkpoint
from transformer.model.config import ModelConfig
from transformer.model.model import causal_mask, padding_mask


def test_masks():
    m = causal_mask(3)
    assert m.shape == (1, 1, 3, 3)
    assert m[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert causal_mask(1, offset=2)[0, 0].tolist() == [[True, True, True]]
    p = padding_mask(torch.tensor([[5, 6, 0], [7, 0, 0]]), 0)
    assert p.shape == (2, 1, 1, 3) and p[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]


def test_shapes_and_tied_projection():
    model = small_model()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))
    mem = model.encode(src)
    assert mem.shape == (2, 7, 32)
    h = model.decode(tgt, mem)
    assert h.shape == (2, 5, 32)
    assert model.project(h).shape == (2, 5, 50)
    assert model(src, tgt).shape == (2, 5, 50)
    assert not any(n.startswith("out") or "generator" in n for n, _ in model.named_parameters())


def test_models_of_one_shape_share_one_position_table():
    """The sin/cos table is a function of (d_model, max_len): a second model of the same shape holds the same
    tensor, not a copy (a model served beside another costs its weights: benchmarks.models), with Vaswani et al.'s
    values; another shape gets its own."""
    a, b, c = small_model(), small_model(vocab=60), small_model(max_len=32)
    assert a.positions.pe.data_ptr() == b.positions.pe.data_ptr()
    assert c.positions.pe.data_ptr() != a.positions.pe.data_ptr() and c.positions.pe.shape == (32, 32)
    pe, d = a.positions.pe, 32
    for p, i in ((0, 0), (5, 3), (63, 15)):
        angle = torch.tensor(p / 10000 ** (2 * i / d))
        assert torch.allclose(pe[p, 2 * i], torch.sin(angle), atol=1e-6)
        assert torch.allclose(pe[p, 2 * i + 1], torch.cos(angle), atol=1e-6)
    with torch.inference_mode():  # a model built in inference mode (as the app loads them) still trains
        e = small_model(max_len=48)
    e.train()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))
    small_model(max_len=48).train()(src, tgt).sum().backward()
    assert not e.positions.pe.is_inference()


def test_projection_is_tied_to_the_embedding():
    """The logit of token j is the dot product of the state with j's embedding, the very vector the embedding
    layer looks up: one parameter, so editing it moves the logits and the logits' gradient reaches it."""
    model = small_model()
    h = torch.randn(2, 5, 32)
    table = model.embed(torch.arange(50))  # (V, D): every token's embedding, looked up as the encoder does
    torch.testing.assert_close(model.project(h), torch.einsum("btd,vd->btv", h, table))
    before = model.project(h).detach()
    with torch.no_grad():
        model.embed.weight[7] += 1.0  # move token 7's embedding
    moved = model.project(h).detach() - before
    torch.testing.assert_close(moved[..., 7], h.sum(-1))  # token 7's logit moved by h . (1, ..., 1)
    assert torch.all(torch.cat([moved[..., :7], moved[..., 8:]], -1) == 0)  # and no other logit moved
    model.zero_grad()
    model.project(h)[..., 9].sum().backward()
    grad = model.embed.weight.grad  # (V, D): d logit_9 / d embedding = h, for row 9 only
    torch.testing.assert_close(grad[9], h.sum((0, 1)))
    assert torch.all(torch.cat([grad[:9], grad[10:]]) == 0)


def test_padding_does_not_change_outputs():
    model = small_model()
    src = torch.randint(4, 50, (1, 6))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1)
    a = model.encode(src)
    b = model.encode(padded, padding_mask(padded, 0))[:, :6]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_fused_training_path_equals_explicit_path():
    model = small_model()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))
    src[1, 5:] = 0
    explicit = model(src, tgt)
    model.train()  # dropout is 0, so only the attention path differs
    fused = model(src, tgt)
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=1e-5)


def test_cached_decoding_equals_full_prefix():
    model = small_model()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 6))
    mem = model.encode(src)
    full = model.decode(tgt, mem)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t:t + 1], mem, None, None, cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def test_parameter_budget_of_default_config():
    from transformer.model.model import Transformer
    n = Transformer(ModelConfig()).num_parameters()
    assert n <= 10_000_000, n


def test_tiny_model_overfits_to_exact_translations(tiny_translator, tiny_pairs):
    for de, en in tiny_pairs:
        assert tiny_translator.translate(de) == en


def test_batched_translation_equals_single(tiny_translator, tiny_pairs):
    srcs = [de for de, _ in tiny_pairs]
    assert tiny_translator.translate_batch(srcs, batch_size=7) == [tiny_translator.translate(s) for s in srcs]


def test_checkpoint_round_trip(tiny_trained, tmp_path):
    model, tok = load_checkpoint(tiny_trained)
    save_checkpoint(tmp_path, model, tok, half=True)
    model2, tok2 = load_checkpoint(tmp_path)
    assert model2.config == model.config and tok2.proto == tok.proto
    src = torch.tensor([[5, 6, 7, 3]])
    assert greedy_decode(model, src) == greedy_decode(model2, src)
    for (k, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        torch.testing.assert_close(a, b, atol=2e-3, rtol=2e-3)


def test_corrupt_checkpoint_gives_clear_error(tiny_trained, tmp_path):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(tiny_trained, bad)
    data = (bad / WEIGHTS).read_bytes()
    (bad / WEIGHTS).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(bad)


def test_foreign_checkpoint_rejected(tiny_trained, tmp_path):
    import shutil
    bad = tmp_path / "foreign"
    shutil.copytree(tiny_trained, bad)
    torch.save({"model": torch.nn.Linear(2, 2).state_dict()}, bad / WEIGHTS)
    with pytest.raises(CheckpointError, match="not an attention-lens checkpoint"):
        load_checkpoint(bad)


class Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned > /tmp/attention_lens_pwned",))


def test_pickle_that_runs_code_is_refused(tiny_trained, tmp_path):
    import os
    import shutil
    bad = tmp_path / "evil"
    shutil.copytree(tiny_trained, bad)
    torch.save({"format": "attention-lens/1", "config": {}, "state_dict": {}, "x": Evil()}, bad / WEIGHTS)
    if os.path.exists("/tmp/attention_lens_pwned"):
        os.remove("/tmp/attention_lens_pwned")
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(bad)
    assert not os.path.exists("/tmp/attention_lens_pwned")


def test_config_weight_mismatch_and_missing_tokenizer(tiny_trained, tmp_path):
    import shutil
    bad = tmp_path / "mismatch"
    shutil.copytree(tiny_trained, bad)
    blob = torch.load(bad / WEIGHTS, weights_only=True)
    blob["config"]["d_ff"] = 256
    torch.save(blob, bad / WEIGHTS)
    with pytest.raises(CheckpointError, match="config does not match the weights"):
        load_checkpoint(bad)
    notok = tmp_path / "notok"
    shutil.copytree(tiny_trained, notok)
    (notok / TOKENIZER).unlink()
    with pytest.raises(CheckpointError, match="tokenizer missing"):
        load_checkpoint(notok)
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "nowhere")


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\u200b\u200b"])
def test_empty_input_raises_value_error(tiny_translator, text):
    with pytest.raises(ValueError, match="empty"):
        tiny_translator.translate(text)


def test_long_input_is_truncated_with_notes_not_warnings(tiny_translator):
    tr, limit = tiny_translator, tiny_translator.config.max_len - 1
    # 3200 characters; 320, but more pieces than fit
    very_long, long = "Ein Hund rennt. " * 200, "Ein Hund rennt. " * 20
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes = []
        ids = tr.source_ids(very_long, notes)
        cut, fine, short = tr.start(very_long), tr.start(long), tr.start("Ein Hund rennt.")
        assert isinstance(tr.translate(very_long), str)
        assert clean_text(very_long) == clean_text(very_long, [])  # no notes list: nothing reported, nothing warned
    assert caught == []  # the messages travel with the request, never through the warnings module
    assert len(ids) == limit + 1 and ids[-1] == tr.config.eos_id
    assert len(notes) == 2 and "3200" in notes[0] and "2000" in notes[0] and f"first {limit}" in notes[1]
    assert cut.notes == notes
    assert len(fine.notes) == 1 and f"first {limit}" in fine.notes[0]  # pieces cut, characters not
    assert short.notes == [] and tr.start_ids(tr.source_ids("Ein Hund rennt.")).notes == []
    fork = cut.fork()
    assert fork.notes == notes and fork.notes is not cut.notes
    fork.notes.append("x")
    assert cut.notes == notes  # forks copy the list
    c = clean_text("  " + "a" * 2500, notes := [])
    assert len(c) == 2000 and notes == ["The input was cut from 2500 to 2000 characters."]


def test_pad_batch():
    t = pad_batch([[1, 2, 3], [4]], 0)
    assert t.tolist() == [[1, 2, 3], [4, 0, 0]]
