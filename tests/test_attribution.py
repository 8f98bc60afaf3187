"""Attribution (transformer/interpret/attribution.py): ALTI+, gradient × input, cross-attention.

The manual forward is checked against model.encode / model.decode; the per-token decomposition against the
sublayer outputs the real model computed (read with the test's own hooks); the gradients against finite
differences of the real model; ALTI+ against a brute-force version written here with plain loops over
tokens and heads (numpy, float64, nothing of the library). Then the API: rows sum to 1, causal, Translator
and DecodingSession agree, threads, no state left on the model, one upload and one host copy on a device."""
import math
import threading

import numpy as np
import pytest
import torch

from tests.conftest import DEVICE, small_model
from transformer.interpret.attribution import (
    EXTRA_METHODS,
    METHODS,
    Attribution,
    attention_contributions,
    attribute_ids,
    forward,
    input_gradients,
    sublayer_contributions,
    token_embeddings,
    transformed_vectors,
)
from transformer.interpret.capture import HeadAblation

TEXT = "Ein Hund rennt."
SRC, TGT = [5, 6, 7, 8, 9, 3], [2, 10, 11, 12, 13, 3]  # source with EOS, target [BOS .. EOS]


def pair(seed, vocab=50, S=None, T=None):
    g = np.random.default_rng(seed)
    S, T = S or int(g.integers(2, 9)), T or int(g.integers(2, 9))
    return [int(i) for i in g.integers(4, vocab, S - 1)] + [3], [2] + [int(i) for i in g.integers(4, vocab, T - 1)]


def no_hooks(model) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def passes(model, src, tgt, ablate=frozenset()):
    with torch.inference_mode():
        s, t = torch.tensor(src), torch.tensor(tgt)
        return forward(model, token_embeddings(model, s), token_embeddings(model, t), ablate)


# -- the manual forward and the decomposition ----------------------------------------------------------------

@pytest.mark.parametrize("layers", [(1, 1), (2, 2), (3, 1)])
def test_the_manual_forward_reproduces_the_model(layers):
    model = small_model(n_encoder_layers=layers[0], n_decoder_layers=layers[1])
    for seed in range(3):
        src, tgt = pair(seed)
        p = passes(model, src, tgt)
        with torch.inference_mode():
            memory = model.encode(torch.tensor([src]))  # (1, S, D)
            hidden = model.decode(torch.tensor([tgt]), memory)  # (1, T, D)
        torch.testing.assert_close(p.memory, memory[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(p.hidden, hidden[0], atol=1e-5, rtol=0)


def test_the_manual_forward_switches_heads_off_as_head_ablation_does():
    model = small_model()
    heads = frozenset({("encoder_self", 1, 0), ("decoder_self", 0, 3), ("cross", 1, 2)})
    p = passes(model, SRC, TGT, heads)
    with torch.inference_mode(), HeadAblation(model, heads):
        hidden = model.decode(torch.tensor([TGT]), model.encode(torch.tensor([SRC])))  # (1, T, D)
    torch.testing.assert_close(p.hidden, hidden[0], atol=1e-5, rtol=0)
    assert not torch.allclose(p.hidden, passes(model, SRC, TGT).hidden)


def real_sublayers(model, src, tgt):
    """What the real model computed in each attention sublayer, read with forward hooks on its norms and
    attention modules: {(kind, layer): (input x, output y = x + attention)}."""
    seen, handles = {}, []

    def keep(key):
        def hook(module, args, output):
            seen[key] = output.output[0] if hasattr(output, "output") else args[0][0]
        return hook

    for l, b in enumerate(model.encoder):
        handles += [b.norm1.register_forward_hook(keep(("encoder_self", l, "x"))),
                    b.self_attn.register_forward_hook(keep(("encoder_self", l, "a")))]
    for l, b in enumerate(model.decoder):
        handles += [b.norm1.register_forward_hook(keep(("decoder_self", l, "x"))),
                    b.self_attn.register_forward_hook(keep(("decoder_self", l, "a"))),
                    b.norm2.register_forward_hook(keep(("cross", l, "x"))),
                    b.cross_attn.register_forward_hook(keep(("cross", l, "a")))]
    try:
        with torch.inference_mode():
            model.decode(torch.tensor([tgt]), model.encode(torch.tensor([src])))
    finally:
        for h in handles:
            h.remove()
    return {k[:2]: (seen[k], seen[k] + seen[k[:2] + ("a",)]) for k in seen if k[2] == "x"}


def test_the_decomposition_reconstructs_every_attention_sublayer_of_the_real_model():
    """y_i = Σ_j T_i(x_j) + b_O, in encoder self-attention, decoder self-attention and cross-attention."""
    model = small_model()
    for seed in range(3):
        src, tgt = pair(seed)
        real = real_sublayers(model, src, tgt)
        p = passes(model, src, tgt)
        subs = {("encoder_self", l): s for l, s in enumerate(p.encoder)}
        subs.update({("decoder_self", l): s for l, s in enumerate(p.decoder_self)})
        subs.update({("cross", l): s for l, s in enumerate(p.cross)})
        assert set(subs) == set(real) and len(real) == 6
        for (kind, l), sub in subs.items():
            x, y = real[(kind, l)]
            with torch.inference_mode():
                t = transformed_vectors(sub, cross=kind == "cross")  # (Tq, K, D)
            assert t.shape[1] == (len(src) + 1 if kind == "cross" else t.shape[0])
            torch.testing.assert_close(sub.x, x, atol=1e-5, rtol=0)
            torch.testing.assert_close(t.sum(1) + sub.module.out_proj.bias, y, atol=1e-4, rtol=0)
            if kind == "cross":  # the residual column is the query's own input
                torch.testing.assert_close(t[:, -1], x, atol=0, rtol=0)
            else:  # a masked (future) key adds nothing
                off = torch.ones(t.shape[:2], dtype=torch.bool).triu(1)
                assert kind == "encoder_self" or not bool(t[off].any())


# -- the rows -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS + EXTRA_METHODS)
def test_every_row_sums_to_one_non_negative_and_causal(method):
    for seed, model in enumerate([small_model(), small_model(n_encoder_layers=1, n_decoder_layers=3, n_heads=2)]):
        for k in range(3):
            src, tgt = pair(10 * seed + k)
            s, t = attribute_ids(model, src, tgt, method)
            assert s.dtype == t.dtype == np.float32 and s.shape == (len(tgt), len(src)) and t.shape == (len(tgt),) * 2
            np.testing.assert_allclose(s.sum(1) + t.sum(1), 1.0, atol=1e-5)
            assert s.min() >= 0 and t.min() >= 0
            assert np.all(np.triu(t, 1) == 0), "a row may only draw on target positions 0..t"
            if method in ("alti", "saliency"):
                assert np.all(t.sum(1) > 0) and np.all(s.sum(1) > 0)


def fd_log_prob(model, src, tgt, row, nxt, side, pos, delta):
    """log p(nxt | row) of the REAL model with the token embedding √d·E[id] at (side, pos) moved by delta."""
    def hook(module, args, out):
        out = out.clone()
        out[0, pos] += delta / math.sqrt(model.config.d_model)  # embed_tokens scales the embedding by √d
        return out

    with torch.inference_mode():
        s, t = torch.tensor([src]), torch.tensor([tgt])
        h = model.embed.register_forward_hook(hook) if side == "source" else None
        memory = model.encode(s)
        if h is not None:
            h.remove()
        h = model.embed.register_forward_hook(hook) if side == "target" else None
        try:
            hidden = model.decode(t, memory)  # (1, T, D)
        finally:
            if h is not None:
                h.remove()
        return float(torch.log_softmax(model.project(hidden[0, row]), -1)[nxt])


def test_the_gradient_matches_finite_differences_of_the_real_model():
    model = small_model(d_model=16, n_heads=2, d_ff=32).double()
    src, tgt = SRC, TGT[:-1]  # the last row predicts the model's own argmax
    g_src, g_tgt, _, _ = input_gradients(model, torch.tensor(src), torch.tensor(tgt))
    with torch.inference_mode():
        last = int(model.project(model.decode(torch.tensor([tgt]), model.encode(torch.tensor([src])))[0, -1]).argmax())
    rng = np.random.default_rng(0)
    eps = 1e-5
    for row in range(len(tgt)):
        nxt = tgt[row + 1] if row + 1 < len(tgt) else last
        for side, g, n in (("source", g_src, len(src)), ("target", g_tgt, row + 1)):
            pos = int(rng.integers(n))
            u = torch.tensor(rng.standard_normal(16), dtype=torch.float64)
            fd = (fd_log_prob(model, src, tgt, row, nxt, side, pos, eps * u)
                  - fd_log_prob(model, src, tgt, row, nxt, side, pos, -eps * u)) / (2 * eps)
            assert float(g[row, pos] @ u) == pytest.approx(fd, rel=1e-5, abs=1e-8), (row, side, pos)
    assert float(g_tgt.norm(dim=-1).triu(1).max()) == 0  # not after the row: causal, exactly (the gradient has no path)


def test_saliency_is_gradient_times_token_embedding_of_the_real_model():
    """Independently: the real model, its embedding output replaced by a leaf of the test, one backward per row."""
    model = small_model()
    src, tgt = SRC, TGT
    leaves = {}

    def hook(module, args, out):
        leaves[len(leaves)] = leaf = out.detach().clone().requires_grad_()
        return leaf

    h = model.embed.register_forward_hook(hook)
    try:
        logits = model(torch.tensor([src]), torch.tensor([tgt]))[0]  # (T, V)
    finally:
        h.remove()
    e_src, e_tgt = leaves[0], leaves[1]  # (1, S, D), (1, T, D): E[id]
    # ‖∂/∂(√d E) ⊙ √d E‖ = ‖∂/∂E ⊙ E‖: the same saliency
    nxt = tgt[1:] + [int(logits[-1].argmax())]
    s_ref, t_ref = np.zeros((len(tgt), len(src))), np.zeros((len(tgt), len(tgt)))
    for row in range(len(tgt)):
        gs, gt = torch.autograd.grad(torch.log_softmax(logits[row], -1)[nxt[row]], (e_src, e_tgt), retain_graph=True)
        s_ref[row] = (gs * e_src)[0].norm(dim=-1).detach().numpy()
        t_ref[row] = (gt * e_tgt)[0].norm(dim=-1).detach().numpy()
    total = s_ref.sum(1, keepdims=True) + t_ref.sum(1, keepdims=True)
    s, t = attribute_ids(model, src, tgt, "saliency")
    np.testing.assert_allclose(s, s_ref / total, atol=1e-5)
    np.testing.assert_allclose(t, t_ref / total, atol=1e-5)
    assert all(p.grad is None for p in model.parameters())


# -- ALTI+ by brute force, nothing of the library -----------------------------------------------------------

def np_params(model):
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()}


def np_ln(v, g, b, eps=1e-5):
    mu = v.mean()
    return (v - mu) / math.sqrt(((v - mu) ** 2).mean() + eps) * g + b


def brute_sublayer(P, pre, x, queries, keys, H, causal):
    """One attention sublayer, token by token and head by head. x (Tq, D) the residual, queries (Tq, D) what the
    queries read (LN(x)), keys (Tk, D) what keys and values read -> y (Tq, D), T (Tq, Tk, D) without b_O and
    without the residual."""
    D = x.shape[1]
    d = D // H
    Wq, Wk, Wv, Wo = (P[f"{pre}.{n}.weight"] for n in ("q_proj", "k_proj", "v_proj", "out_proj"))
    bq, bk, bv, bo = (P[f"{pre}.{n}.bias"] for n in ("q_proj", "k_proj", "v_proj", "out_proj"))
    Tq, Tk = len(queries), len(keys)
    terms = np.zeros((Tq, Tk, D))
    for i in range(Tq):
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            q = Wq[cols] @ queries[i] + bq[cols]
            scores = np.array([q @ (Wk[cols] @ keys[j] + bk[cols]) / math.sqrt(d) for j in range(Tk)])
            allowed = np.array([not causal or j <= i for j in range(Tk)])
            e = np.where(allowed, np.exp(scores - scores[allowed].max()), 0.0)
            alpha = e / e.sum()
            for j in range(Tk):
                v = Wv[cols] @ keys[j] + bv[cols]
                terms[i, j] += alpha[j] * (Wo[:, cols] @ v)
    y = np.array([x[i] + terms[i].sum(0) + bo for i in range(Tq)])
    return y, terms


def rows_ln(x, P, norm):
    return np.array([np_ln(v, P[f"{norm}.weight"], P[f"{norm}.bias"]) for v in x])


def brute_contrib(y, terms):
    c = np.zeros(terms.shape[:2])
    for i in range(terms.shape[0]):
        for j in range(terms.shape[1]):
            c[i, j] = max(0.0, np.abs(y[i]).sum() - np.abs(y[i] - terms[i, j]).sum())
        c[i] /= c[i].sum()
    return c


def brute_ffn(P, pre, norm, x):
    out = []
    for v in x:
        h = np_ln(v, P[f"{norm}.weight"], P[f"{norm}.bias"])
        out.append(v + P[f"{pre}.linear2.weight"] @ np.maximum(0, P[f"{pre}.linear1.weight"] @ h
                                                               + P[f"{pre}.linear1.bias"]) + P[f"{pre}.linear2.bias"])
    return np.array(out)


def brute_alti(model, src, tgt):
    """ALTI+ written out: per-layer contributions with loops, then the rollout as a product of mixing matrices
    over all S + T inputs (source tokens map to themselves in the decoder)."""
    P, c = np_params(model), model.config
    D, H = c.d_model, c.n_heads
    pe = np.array([[math.sin(p / 10000 ** (k / D)) if k % 2 == 0 else math.cos(p / 10000 ** ((k - 1) / D))
                    for k in range(D)] for p in range(64)])
    E = P["embed.weight"]
    x = np.array([E[i] * math.sqrt(D) + pe[p] for p, i in enumerate(src)])
    R = np.eye(len(src))
    for l in range(c.n_encoder_layers):
        pre = f"encoder.{l}"
        h = rows_ln(x, P, f"{pre}.norm1")
        y, terms = brute_sublayer(P, f"{pre}.self_attn", x, h, h, H, False)
        for i in range(len(src)):
            terms[i, i] += x[i]
        R = brute_contrib(y, terms) @ R
        x = brute_ffn(P, f"{pre}.ffn", f"{pre}.norm2", y)
    memory = rows_ln(x, P, "encoder_norm")
    S, T = len(src), len(tgt)
    total = np.eye(S + T)  # rows: inputs [source tokens, target tokens] -> the current decoder states
    x = np.array([E[i] * math.sqrt(D) + pe[p] for p, i in enumerate(tgt)])
    for l in range(c.n_decoder_layers):
        pre = f"decoder.{l}"
        h = rows_ln(x, P, f"{pre}.norm1")
        y, terms = brute_sublayer(P, f"{pre}.self_attn", x, h, h, H, True)
        for i in range(T):
            terms[i, i] += x[i]
        A = brute_contrib(y, terms)  # (T, T)
        z, terms = brute_sublayer(P, f"{pre}.cross_attn", y, rows_ln(y, P, f"{pre}.norm2"), memory, H, False)
        X = brute_contrib(z, np.concatenate([terms, y[:, None, :]], 1))  # (T, S + 1), the residual last
        M = np.eye(S + T)
        for i in range(T):
            M[S + i, :S] = X[i, :S] @ R
            M[S + i, S:] = X[i, S] * A[i]
        total = M @ total
        x = brute_ffn(P, f"{pre}.ffn", f"{pre}.norm3", z)
    return total[S:, :S], total[S:, S:]


@pytest.mark.parametrize("layers", [(1, 1), (2, 2)])
def test_alti_plus_against_a_brute_force_version(layers):
    model = small_model(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=layers[0],
                        n_decoder_layers=layers[1]).double()
    for seed in range(2):
        src, tgt = pair(seed, S=5, T=4)
        want_s, want_t = brute_alti(model, src, tgt)
        s, t = attribute_ids(model, src, tgt, "alti")
        np.testing.assert_allclose(s, want_s, atol=1e-6)
        np.testing.assert_allclose(t, want_t, atol=1e-6)


def test_the_one_layer_contributions_against_brute_force():
    model = small_model(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1).double()
    P, src = np_params(model), SRC
    x = np.array([P["embed.weight"][i] * 4 for i in src])  # √16
    x += np.array([[math.sin(p / 10000 ** (k / 16)) if k % 2 == 0 else math.cos(p / 10000 ** ((k - 1) / 16))
                    for k in range(16)] for p in range(len(src))])
    h = rows_ln(x, P, "encoder.0.norm1")
    y, terms = brute_sublayer(P, "encoder.0.self_attn", x, h, h, 2, False)
    for i in range(len(src)):
        terms[i, i] += x[i]
    sub = passes(model, src, TGT).encoder[0]
    np.testing.assert_allclose(sub.y.numpy(), y, atol=1e-6)  # the buffer pe: float32 sin/cos
    np.testing.assert_allclose(sublayer_contributions(sub).numpy(), brute_contrib(y, terms), atol=1e-6)


# -- the API --------------------------------------------------------------------------------------------------

def test_unknown_methods_and_bad_ids_are_refused(tiny_translator):
    model = small_model()
    for bad in ("ALTI", "rollout", "", None):
        with pytest.raises(ValueError, match="unknown attribution method"):
            attribute_ids(model, SRC, TGT, bad)
        with pytest.raises(ValueError, match="unknown attribution method"):
            tiny_translator.attribute(TEXT, "A dog runs.", bad)
    for src, tgt in (([], TGT), (SRC, []), ([5, 99], TGT), (SRC, [2, -1]), ([5, True], TGT), ([1] * 65, TGT)):
        with pytest.raises(ValueError):
            attribute_ids(model, src, tgt, "alti")


def test_translator_and_session_agree_and_a_cursor_gives_the_first_rows(tiny_translator):
    tr = tiny_translator
    s = tr.start(TEXT).run()
    assert s.target_ids[-1] == tr.config.eos_id
    for method in METHODS + EXTRA_METHODS:
        a, b = s.attribution(method), tr.attribute(TEXT, s.target_tokens, method)
        assert isinstance(a, Attribution) and a.method == b.method == method
        assert a.source_tokens == b.source_tokens == s.source_tokens and a.target_tokens == b.target_tokens
        np.testing.assert_array_equal(a.source, b.source)
        np.testing.assert_array_equal(a.target, b.target)
        text = tr.attribute(TEXT, s.translation, method)  # the target as text: the same pieces here
        np.testing.assert_allclose(text.source, a.source, atol=1e-6)
        s.goto(2)  # rows 0..2: causal, and the last row predicts the greedy choice, which is the next piece
        part = s.attribution(method)
        assert part.source.shape == (3, len(s.source_ids)) and part.target.shape == (3, 3)
        np.testing.assert_allclose(part.source, a.source[:3], atol=1e-5)
        np.testing.assert_allclose(part.target, a.target[:3, :3], atol=1e-5)
        s.goto(len(s.positions) - 1)


def test_a_sessions_switched_off_heads_are_off(tiny_translator):
    tr = tiny_translator
    heads = [("cross", 0, 1), ("decoder_self", 1, 0)]
    s = tr.start(TEXT, ablate=heads).run()
    for method in ("alti", "saliency"):
        got = s.attribution(method)
        src, _tgt = attribute_ids(tr.model, s.source_ids, s.target_ids, method, heads)
        np.testing.assert_array_equal(got.source, src)
        intact = attribute_ids(tr.model, s.source_ids, s.target_ids, method)[0]
        assert not np.allclose(got.source, intact, atol=1e-4)


def test_the_alti_rollout_leaves_a_row_with_no_contribution_at_zero():
    """Issue 43 B5: a row to which no input contributes (every c_ij clamped to 0: here the cross-attention outputs
    of one query made zero, so ‖y_i‖₁ = 0) is a row of zeros after the rollout, as alti_contributions and saliency
    leave it, not 0/0 = NaN (which the next decoder layer would spread to the rows after it)."""
    from transformer.interpret.attribution import alti_rollout
    model = small_model()
    p = passes(model, SRC, TGT)
    row = 2
    for sub in p.cross:  # y_i = 0: max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁) = 0 for every j
        sub.y = sub.y.clone()
        sub.y[row] = 0
    with torch.inference_mode():
        src, tgt = (t.numpy() for t in alti_rollout(p))
    assert np.isfinite(src).all() and np.isfinite(tgt).all()
    assert (src[row] == 0).all() and (tgt[row] == 0).all()
    others = [t for t in range(len(TGT)) if t != row]
    np.testing.assert_allclose(src[others].sum(1) + tgt[others].sum(1), 1.0, atol=1e-5)


def test_the_attention_method_leaves_switched_off_heads_out(tiny_translator):
    """Issue 43 B2: "attention" averages the cross-attention of the heads that are on. With every cross head off no
    source reaches the decoder, so no row has a source share; with some off, the mean of the others' weights (the
    weights each head computed, captured by the model's own forward in the session's maps)."""
    tr = tiny_translator
    L, H = tr.model.config.n_decoder_layers, tr.model.config.n_heads
    every = [("cross", l, h) for l in range(L) for h in range(H)]
    s = tr.start(TEXT, ablate=every).run()
    att = s.attribution("attention")
    assert att.source.shape[0] == len(s.target_ids)
    np.testing.assert_array_equal(att.totals(), np.zeros(len(s.target_ids)))  # was 1.0 in every row
    some = [("cross", 0, 1), ("cross", 1, 0), ("cross", 1, 3)]
    s = tr.start(TEXT, ablate=some).run()
    on = [(l, h) for l in range(L) for h in range(H) if ("cross", l, h) not in some]
    want = np.mean([s.attention.cross[l, h] for l, h in on], axis=0)  # (T, S)
    np.testing.assert_allclose(s.attribution("attention").source, want, atol=1e-5)


def test_contributions_match_inside_one_head(tiny_translator):
    tr = tiny_translator
    s = tr.start(TEXT).run()
    per_kind = attention_contributions(tr.model, s.source_ids, s.target_ids)
    for kind, layer, head in (("cross", 1, 2), ("encoder_self", 0, 3), ("decoder_self", 1, 1)):
        np.testing.assert_allclose(per_kind[kind][layer, head], s.inside(kind, layer, head).contribution, atol=1e-5)
    last = per_kind["cross"][-1].mean(0)  # (T, S)
    np.testing.assert_allclose(s.attribution("contribution").source, last / last.sum(1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(s.attribution("attention").source, s.attention.cross.mean((0, 1)), atol=1e-5)


def test_no_state_is_left_on_the_model_and_inference_mode_callers_work(tiny_translator):
    tr = tiny_translator
    before = {k: v.clone() for k, v in tr.model.state_dict().items()}
    with torch.inference_mode():
        a = tr.attribute(TEXT, "A dog runs.", "saliency")
    with torch.no_grad():
        b = tr.attribute(TEXT, "A dog runs.", "saliency")
    np.testing.assert_array_equal(a.source, b.source)
    for method in METHODS:
        tr.attribute(TEXT, "A dog runs.", method)
    assert all(p.grad is None for p in tr.model.parameters()) and no_hooks(tr.model) and not tr.model.training
    assert all(torch.equal(v, before[k]) for k, v in tr.model.state_dict().items())
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_two_threads_at_once_give_what_one_gives(tiny_translator):
    tr = tiny_translator
    jobs = [(TEXT, "A dog runs.", m) for m in METHODS] + [("Eine Katze schläft.", "A cat sleeps.", m) for m in METHODS]
    want = [tr.attribute(*j) for j in jobs]
    got, errors = {}, []
    barrier = threading.Barrier(2)

    def work(k):
        try:
            barrier.wait()
            for _ in range(3):
                for i in range(k, len(jobs), 2):
                    got.setdefault(i, []).append(tr.attribute(*jobs[i]))
        except Exception as e:  # noqa: BLE001 (reported below)  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(got) == list(range(len(jobs)))
    for i, results in got.items():
        for r in results:
            np.testing.assert_array_equal(r.source, want[i].source)
            np.testing.assert_array_equal(r.target, want[i].target)


def test_the_figure(tiny_translator):
    pytest.importorskip("plotly")
    a = tiny_translator.attribute(TEXT, "A dog runs.")
    fig = a.figure()
    (trace,) = fig.data
    assert np.asarray(trace.z).shape == (len(a.target_tokens), len(a.source_tokens) + len(a.target_tokens))
    assert "ALTI+" in fig.layout.title.text
    assert a.totals().shape == (len(a.target_tokens),)


# -- on an accelerator emulated on the CPU (tests/emulated_device.py) ---------------------------------------

@pytest.mark.skipif(DEVICE != "cpu", reason="emulates the device from the CPU model")
def test_on_the_emulated_device_one_upload_and_one_host_copy(tiny_translator):
    from tests.emulated_device import EmulatedDevice, Transfers, emulate
    cpu = tiny_translator
    tr = emulate(cpu)
    with EmulatedDevice(), Transfers() as t:
        s = tr.start(TEXT).run()
        for method in METHODS + EXTRA_METHODS:
            for call, ref in ((lambda: tr.attribute(TEXT, "A dog runs.", method),  # noqa: B023 (called in the loop)
                               lambda: cpu.attribute(TEXT, "A dog runs.", method)),  # noqa: B023 (called in the loop)
                              (lambda: s.attribution(method), lambda: cpu.start(TEXT).run().attribution(method))):  # noqa: B023 (called in the loop)
                t.clear()
                got = call()
                assert t.to_host == ["cpu"] and t.uploads == ["tensor"], (method, t.to_host, t.uploads)
                assert type(got.source) is np.ndarray and type(got.target) is np.ndarray
                want = ref()
                np.testing.assert_allclose(got.source, want.source, atol=1e-6)
                np.testing.assert_allclose(got.target, want.target, atol=1e-6)


def test_every_tensor_is_made_on_the_models_device(tiny_translator):
    """The factory-call audit of tests/test_device.py: nothing made without device=, one read of the device."""
    from tests.device_audit import DeviceAudit
    tr = tiny_translator
    s = tr.start(TEXT).run()
    for method in METHODS + EXTRA_METHODS:
        audit = DeviceAudit()
        with audit:
            tr.attribute(TEXT, "A dog runs.", method)
            s.attribution(method)
        assert audit.reads == ["cpu", "cpu"] and audit.uploads == ["tensor", "tensor"], (method, audit.reads)
