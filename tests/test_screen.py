"""The int8 screen behind Transformer.next_tokens: its error bound holds, and it returns the fp32 argmax."""
import pytest
import torch

from transformer import screen
from transformer.decoding import greedy_decode

from tests.conftest import small_model


def fp32_argmax(model, h):
    return model.project(h).argmax(-1)


def built(model):
    return model.__dict__["_screen"]


@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0])
def test_bound_holds_for_every_token(scale):
    """|fp32 logit - int8 approximation| <= the row's bound, for every token of every row (float64 reference)."""
    model = small_model(vocab=300, d_model=48)
    torch.manual_seed(1)
    h = torch.randn(40, 48) * scale
    h[0, 3] = 50 * scale  # one outlier dimension: a coarse int8 scale for that row
    model.next_tokens(h)
    approx, err = screen.approximate(built(model), h)  # (B, V), (B, 1)
    exact = h.double() @ model.embed.weight.detach().double().t()  # (B, V)
    gap = (approx.double() - exact).abs()
    assert bool((gap <= err.double()).all())
    assert bool((gap > 0).any())  # the approximation really is approximate: the bound is doing work
    assert float((gap / err.double()).max()) < 0.5  # and it is not vacuous either


def test_next_tokens_equals_fp32_argmax_on_random_states():
    model = small_model(vocab=500, d_model=64)
    torch.manual_seed(2)
    for B in (1, 3, 64):
        for scale in (0.01, 1.0, 10.0):
            h = torch.randn(B, 64) * scale
            assert torch.equal(model.next_tokens(h), fp32_argmax(model, h))


def test_near_ties_are_rescored_in_fp32():
    """Rows closer than int8 can tell apart: the screen keeps both and fp32 decides, both ways round."""
    model = small_model(vocab=200, d_model=32)
    w = model.embed.weight
    with torch.no_grad():
        w[7] = w[3] + 1e-4 * torch.randn(32)
    for target, other in ((3, 7), (7, 3)):
        d = (w[target] - w[other]).detach()  # (D,)
        base = 5 * w[3].detach()
        alpha = (1e-3 - base @ d) / (d @ d)  # h . w_target - h . w_other = 1e-3 exactly (in real arithmetic)
        h = (base + alpha * d)[None]  # (1, D)
        logits = model.project(h)[0]
        assert logits.argmax().item() == target and logits.topk(2).indices.tolist() == [target, other]
        assert model.next_tokens(h).item() == target
        rows, cols = screen.candidates(built(model), h)
        assert {3, 7} <= set(cols.tolist())  # int8 could not separate them: fp32 did


def test_exact_ties_go_to_the_lowest_index_as_argmax():
    model = small_model(vocab=150)
    w = model.embed.weight
    with torch.no_grad():
        w[90] = w[40]  # two identical rows: their logits are equal for every state
    h = torch.stack([w[40].detach() * 20, torch.randn(32), w[40].detach() * 20])  # (3, D): rows 0 and 2 tie
    assert model.project(h)[0, 40] == model.project(h)[0, 90]
    for batch in (h, h[:1]):
        got = model.next_tokens(batch)
        assert torch.equal(got, fp32_argmax(model, batch)) and got[0].item() == 40
    rows, cols = screen.candidates(built(model), h[:1])
    assert {40, 90} <= set(cols.tolist())


def test_screen_follows_weight_updates():
    model = small_model(vocab=100)
    h = torch.randn(5, 32)
    first = model.next_tokens(h)
    with torch.no_grad():
        model.embed.weight.mul_(-1)  # in place: same storage, new version
    assert torch.equal(model.next_tokens(h), fp32_argmax(model, h))
    assert not torch.equal(model.next_tokens(h), first)
    other = small_model(vocab=100)
    other.embed.weight.data = torch.randn(100, 32)  # new storage
    other.next_tokens(h)
    assert torch.equal(other.next_tokens(h), fp32_argmax(other, h))


def test_fallbacks_give_the_fp32_answer():
    model = small_model(vocab=100)
    h = torch.randn(4, 32)
    h[1] = 0.0  # all logits equal: argmax is the first token
    assert torch.equal(model.next_tokens(h), fp32_argmax(model, h))
    h[2, 0] = float("inf")
    assert model.next_tokens(h)[[0, 1, 3]].tolist() == fp32_argmax(model, h)[[0, 1, 3]].tolist()
    m64 = small_model(vocab=100).double()  # another dtype: the plain product
    assert torch.equal(m64.next_tokens(h.double()), m64.project(h.double()).argmax(-1))
    assert "_screen" not in m64.__dict__
    same = small_model(vocab=400)  # every row equal: all 400 tokens are candidates, too many to re-score
    with torch.no_grad():
        same.embed.weight[:] = same.embed.weight[5].clone()
    h = torch.randn(2, 32)
    assert same.next_tokens(h).tolist() == fp32_argmax(same, h).tolist() == [0, 0]
    with torch.inference_mode():  # weights without a version counter could change unseen: no screen
        frozen = small_model(vocab=100)
    h = torch.randn(4, 32)
    with torch.inference_mode():
        assert torch.equal(frozen.next_tokens(h), fp32_argmax(frozen, h))
    assert "_screen" not in frozen.__dict__


def test_without_int8_matmul_the_plain_product_runs(monkeypatch):
    monkeypatch.setattr(screen, "HAVE_INT_MM", False)
    model = small_model(vocab=100)
    h = torch.randn(3, 32)
    assert torch.equal(model.next_tokens(h), fp32_argmax(model, h)) and "_screen" not in model.__dict__


def test_greedy_decode_unchanged_by_the_screen(monkeypatch):
    """Whole decodes: the screened argmax and the plain fp32 argmax produce the same tokens."""
    model = small_model(vocab=120)
    torch.manual_seed(3)
    src = torch.randint(3, 120, (6, 9))
    screened = greedy_decode(model, src, max_new=12)
    monkeypatch.setattr(type(model), "next_tokens", lambda self, h: self.project(h).argmax(-1))
    assert greedy_decode(model, src, max_new=12) == screened
