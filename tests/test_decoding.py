import copy
import pickle
import threading

import numpy as np
import pytest
import torch

from transformer.decode import session as session_module
from transformer.interpret.capture import AttentionRecorder, attention_modules


def hooks_registered(model) -> int:
    return sum(len(m._forward_hooks) for _, _, m in attention_modules(model))


def test_session_to_end_equals_translate(tiny_translator, tiny_pairs):
    for de, en in tiny_pairs[:8]:
        s = tiny_translator.start(de).run()
        assert s.done and s.translation == tiny_translator.translate(de) == en
        assert s.target_tokens[0] == "<s>" and s.target_tokens[-1] == "</s>"


def test_session_on_untrained_model_equals_greedy(tiny_translator):
    # text the tiny model never saw: long, odd continuations exercise the length limit too
    for text in ["Katze Hund Mann Frau Kind rennt schläft", "xyz qwv", "Ein Ein Ein"]:
        assert tiny_translator.start(text).run().translation == tiny_translator.translate(text)


def test_stepwise_maps_equal_teacher_forced_pass(tiny_translator):
    s = tiny_translator.start("Eine Katze springt.").run()
    maps = s.attention
    ref = tiny_translator.attend("Eine Katze springt.", s.target_tokens)
    assert ref.target_tokens == s.target_tokens and ref.source_tokens == s.source_tokens
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert maps[kind].shape == ref[kind].shape
        np.testing.assert_allclose(maps[kind], ref[kind], atol=1e-5)


def test_map_invariants(tiny_translator):
    s = tiny_translator.start("Ein Mann sitzt.")
    for _ in range(3):
        s.step()
        m = s.attention
        S, T = len(s.source_tokens), len(s.target_tokens)
        L, H = len(tiny_translator.model.decoder), tiny_translator.config.n_heads
        assert m.encoder_self.shape == (len(tiny_translator.model.encoder), H, S, S)
        assert m.decoder_self.shape == (L, H, T, T) and m.cross.shape == (L, H, T, S)
        for a in (m.encoder_self, m.decoder_self, m.cross):
            np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
            assert a.dtype == np.float32
        assert np.all(np.triu(m.decoder_self, 1) == 0)


def test_back_goto_and_redo_do_not_recompute(tiny_translator, monkeypatch):
    s = tiny_translator.start("Ein Kind schläft.").run()
    full, n = s.target_ids, len(s.target_ids)
    calls = []
    orig = session_module.advance
    monkeypatch.setattr(session_module, "advance", lambda *a: calls.append(1) or orig(*a))
    assert s.back() and s.target_ids == full[:-1] and not s.done
    s.goto(1)
    assert s.target_ids == full[:2] and s.attention.cross.shape[2] == 2
    s.run()
    assert s.target_ids == full and calls == []
    s.goto(0)
    assert not s.back() and s.target_ids == full[:1]
    with pytest.raises(ValueError):
        s.goto(n)
    with pytest.raises(ValueError):
        s.goto(-1)


def test_topk_and_force(tiny_translator):
    tr, text = tiny_translator, "Ein Hund rennt."
    s = tr.start(text)
    V = len(tr.tokenizer)
    probs = s.next_distribution()  # the whole next-token distribution
    assert probs.shape == (V,) and probs.dtype == np.float32 and np.all(probs >= 0)
    assert abs(float(probs.sum(dtype=np.float64)) - 1.0) < 1e-5
    top = s.topk(10)
    ids = [tr.tokenizer.piece_id(p) for p, _ in top]
    assert ids == sorted(range(V), key=lambda i: (-probs[i], i))[:10]  # the 10 most probable, best first
    assert [p for _, p in top] == [float(probs[i]) for i in ids]  # with their own probabilities
    s.step()
    assert s.target_tokens[1] == top[0][0]
    s.back()
    alt = next(p for p, _ in top[1:] if p != "</s>")  # a continuation has to follow it
    s.force(alt)
    assert s.target_tokens[1] == alt and s.positions[1].forced
    s.run()
    forced_ids = s.target_ids
    assert forced_ids[:2] != tr.start(text).run().target_ids[:2]
    assert len(forced_ids) > 2 and not any(p.forced for p in s.positions[2:])
    # the continuation is greedy from the forced prefix: one teacher-forced pass over the whole sequence
    # (no cache, no session) predicts each later token from the ones before it
    dev = tr.device
    with torch.inference_mode():
        memory = tr.model.encode(torch.tensor([tr.source_ids(text)], device=dev))
        logits = tr.model.project(tr.model.decode(torch.tensor([forced_ids], device=dev), memory))[0]  # (T, V)
    argmax = logits.argmax(-1).tolist()  # argmax[t]: the greedy token after position t
    assert forced_ids[2:] == argmax[1:-1]
    assert [p.greedy for p in s.positions] == argmax
    for bad in (0, 51, -1, 2.0, True):
        with pytest.raises(ValueError):
            s.topk(bad)
    with pytest.raises(ValueError, match="finished"):
        s.force("▁A")
    s.back()
    with pytest.raises(ValueError):
        s.force("no-such-piece-xyz")
    with pytest.raises(ValueError):
        s.force("<s>")


def test_topk_after_any_computed_position(tiny_translator):
    tr = tiny_translator
    s = tr.start("Ein Hund rennt.").run()
    n = len(s.positions)
    s.goto(1)
    assert s.topk(4) == s.topk(4, position=1)  # default: the cursor
    for i in range(n):  # before and after the cursor: the whole history
        top = s.topk(4, position=i)
        assert top[0][0] == tr.tokenizer.piece(s.positions[i].greedy)
        probs = s.next_distribution(i)
        assert [p for _, p in top] == pytest.approx(sorted(probs.tolist(), reverse=True)[:4])
    assert s.topk(3, position=0) != s.topk(3, position=n - 1)
    assert s.cursor == 1  # looking does not move the cursor
    for bad in (-1, n, 1.0, True, "0"):
        with pytest.raises(ValueError, match="position"):
            s.topk(3, position=bad)
        with pytest.raises(ValueError, match="position"):
            s.next_distribution(bad)


def test_session_is_small_and_copyable(tiny_translator):
    s = tiny_translator.start("Ein Mann rennt.")
    s.step()
    c = copy.deepcopy(s)
    assert c.translator is s.translator  # shared, never copied
    c.run()
    assert s.step_index == 1 and c.done
    blob = pickle.dumps(s)
    assert len(blob) < 200_000
    r = pickle.loads(blob).bind(tiny_translator)
    assert r.run().translation == tiny_translator.translate("Ein Mann rennt.")
    for v in s.__getstate__().values():
        assert not hasattr(v, "parameters")  # no module inside


def test_no_hooks_left_behind_even_on_errors(tiny_translator):
    model = tiny_translator.model
    tiny_translator.start("Ein Hund rennt.").run()
    tiny_translator.attend("Ein Hund rennt.", "A dog runs.")
    assert hooks_registered(model) == 0
    with pytest.raises(ValueError):
        tiny_translator.attend("Ein Hund.", ["not-a-piece-zz"])
    import torch
    with pytest.raises(RuntimeError), AttentionRecorder(model):
        assert hooks_registered(model) > 0
        dev = tiny_translator.device  # the error must be the mask's shape, not a device mix
        model.encode(torch.tensor([[1, 2, 3]], device=dev), torch.ones(2, 2, 2, 2, 2, dtype=torch.bool, device=dev))
    assert hooks_registered(model) == 0


def test_recorder_synthetic_axes():
    """A model whose attention we control: queries must be rows, keys columns."""
    import torch

    from tests.conftest import small_model
    model = small_model(vocab=20, n_encoder_layers=1, n_decoder_layers=1)
    S, T = 5, 3
    src = torch.randint(4, 20, (1, S))
    tgt = torch.randint(4, 20, (1, T))
    with torch.no_grad(), AttentionRecorder(model) as rec:
        model.decode(tgt, model.encode(src))
    assert not np.allclose(rec.maps(S, T).cross, 1.0 / S, atol=1e-3)  # intact, the model's weights are not uniform
    # Zero the cross-attention query and key projections (weights and biases): every score q.k is 0, so each of
    # the T target queries spreads its weight uniformly, 1/S, over the S source keys. T != S, so the shape tells
    # the rows (queries) from the columns (keys).
    with torch.no_grad():
        ca = model.decoder[0].cross_attn
        ca.q_proj.weight.zero_(); ca.k_proj.weight.zero_(); ca.q_proj.bias.zero_(); ca.k_proj.bias.zero_()
    with torch.no_grad(), AttentionRecorder(model) as rec:
        mem = model.encode(src)
        model.decode(tgt, mem)
    maps = rec.maps(S, T)
    assert maps.cross.shape == (1, 4, T, S)  # rows = T target queries, columns = S source keys
    np.testing.assert_allclose(maps.cross, 1.0 / S, atol=1e-6)  # zero scores: uniform over the keys
    # decoder self-attention is left intact: not uniform, but causal (query t sees keys 0..t only, rows sum to 1)
    assert maps.decoder_self.shape == (1, 4, T, T)
    assert np.all(np.triu(maps.decoder_self, 1) == 0)
    np.testing.assert_allclose(maps.decoder_self.sum(-1), 1.0, atol=1e-6)
    # a padded key gets no weight and is cut off
    padded = torch.cat([src, torch.zeros(1, 2, dtype=torch.long)], 1)
    from transformer.model.model import padding_mask
    with torch.no_grad(), AttentionRecorder(model) as rec:
        mem = model.encode(padded, padding_mask(padded, 0))
        model.decode(tgt, mem, None, padding_mask(padded, 0))
    assert rec.stacked("cross").shape[-1] == S + 2
    assert np.all(rec.stacked("cross")[..., S:] == 0)
    np.testing.assert_allclose(rec.maps(S, T).cross, 1.0 / S, atol=1e-6)


def test_recorder_axes_with_known_answer():
    """Hand-built attention: query i scores key j by -(i-j)^2 through one-hot-like q/k, so each
    row's argmax is its own index: any transposition or off-by-one breaks it."""
    import torch

    from transformer.model.attention import MultiHeadAttention
    mha = MultiHeadAttention(8, 1).eval()
    with torch.no_grad():
        for p in (mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj):
            p.weight.copy_(torch.eye(8) * 4); p.bias.zero_()
    x = torch.eye(8)[None, :4]  # 4 queries, one-hot
    mem = torch.eye(8)[None, :6]  # 6 keys, one-hot; query i matches key i
    w = mha(x, mem).weights[0, 0]  # (4, 6)
    assert w.shape == (4, 6)
    assert w.argmax(-1).tolist() == [0, 1, 2, 3]


def test_concurrent_sessions_get_only_their_own_weights(tiny_translator, tiny_pairs):
    sentences = [de for de, _ in tiny_pairs[:6]] + ["Katze Katze Kind Hund rennt sitzt springt schläft"]
    expected = {s: tiny_translator.attend(s, tiny_translator.translate(s)) for s in sentences}
    errors, barrier = [], threading.Barrier(len(sentences))

    def work(text):
        try:
            barrier.wait()
            for _ in range(3):
                sess = tiny_translator.start(text).run()
                got, ref = sess.attention, expected[text]
                for kind in ("encoder_self", "decoder_self", "cross"):
                    assert got[kind].shape == ref[kind].shape, (text, kind)
                    np.testing.assert_allclose(got[kind], ref[kind], atol=1e-5)
                assert sess.translation == tiny_translator.translate(text)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in sentences]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert hooks_registered(tiny_translator.model) == 0
