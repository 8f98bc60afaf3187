import pytest
import torch
from torch import nn

from transformer.model.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.model.layers import DecoderBlock, EncoderBlock
from transformer.model.model import causal_mask

D, H = 32, 4


def copy_mha(ours: MultiHeadAttention, ref: nn.MultiheadAttention):
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)


@pytest.fixture()
def pair():
    torch.manual_seed(0)
    ours = MultiHeadAttention(D, H).eval()
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    copy_mha(ours, ref)
    return ours, ref


def test_mha_matches_torch_with_padding(pair):
    ours, ref = pair
    q, kv = torch.randn(3, 5, D), torch.randn(3, 7, D)
    lengths = torch.tensor([7, 4, 1])
    pad = torch.arange(7)[None] >= lengths[:, None]  # (B, S) True = padding, torch's convention
    out = ours(q, kv, mask=~pad[:, None, None, :])
    r_out, r_w = ref(q, kv, kv, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out.output, r_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, r_w, atol=1e-6, rtol=1e-5)
    assert out.weights.shape == (3, H, 5, 7)
    assert torch.all(out.weights[1, :, :, 4:] == 0) and torch.all(out.weights[2, :, :, 1:] == 0)


def test_mha_matches_torch_with_causal_mask(pair):
    ours, ref = pair
    x = torch.randn(2, 6, D)
    out = ours(x, mask=causal_mask(6))
    r_out, r_w = ref(x, x, x, attn_mask=~causal_mask(6)[0, 0], need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out.output, r_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, r_w, atol=1e-6, rtol=1e-5)
    assert torch.all(out.weights.triu(1) == 0)


def test_fused_and_explicit_paths_agree(pair):
    ours, _ = pair
    x, m = torch.randn(2, 6, D), torch.randn(2, 9, D)
    mask = torch.ones(2, 1, 1, 9, dtype=torch.bool)
    mask[1, ..., 5:] = False
    a = ours(x, m, mask=mask, need_weights=True)
    b = ours(x, m, mask=mask, need_weights=False)
    assert b.weights is None and a.weights is not None
    torch.testing.assert_close(a.output, b.output, atol=1e-5, rtol=1e-5)
    a = ours(x, mask=causal_mask(6), need_weights=True)
    b = ours(x, mask=causal_mask(6), need_weights=False)
    torch.testing.assert_close(a.output, b.output, atol=1e-5, rtol=1e-5)


def test_eval_computes_weights_training_uses_fused(pair):
    ours, _ = pair
    x = torch.randn(1, 3, D)
    assert ours.eval()(x).weights is not None
    assert ours.train()(x).weights is None


def test_sdpa_rows_sum_to_one_and_respect_mask():
    q, k, v = torch.randn(2, H, 4, 8), torch.randn(2, H, 6, 8), torch.randn(2, H, 6, 8)
    mask = torch.zeros(2, 1, 4, 6, dtype=torch.bool)
    mask[..., :3] = True
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (2, H, 4, 8) and w.shape == (2, H, 4, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, H, 4))
    assert torch.all(w[..., 3:] == 0)


def copy_encoder(ours: EncoderBlock, ref: nn.TransformerEncoderLayer):
    copy_mha(ours.self_attn, ref.self_attn)
    ref.load_state_dict({**ref.state_dict(), 
        "linear1.weight": ours.ffn.linear1.weight, "linear1.bias": ours.ffn.linear1.bias,
        "linear2.weight": ours.ffn.linear2.weight, "linear2.bias": ours.ffn.linear2.bias,
        "norm1.weight": ours.norm1.weight, "norm1.bias": ours.norm1.bias,
        "norm2.weight": ours.norm2.weight, "norm2.bias": ours.norm2.bias})


def randomise_norms(module):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)


def test_encoder_block_matches_torch_layer():
    torch.manual_seed(1)
    ours = EncoderBlock(D, H, 64, 0.0, 0.0).eval()
    randomise_norms(ours)
    ref = nn.TransformerEncoderLayer(D, H, 64, dropout=0.0, activation="relu", batch_first=True,
                                     norm_first=True).eval()
    copy_encoder(ours, ref)
    x = torch.randn(3, 7, D)
    pad = torch.arange(7)[None] >= torch.tensor([7, 5, 2])[:, None]
    y = ours(x, ~pad[:, None, None, :])
    with torch.no_grad():
        r = ref(x, src_key_padding_mask=pad)
    keep = ~pad  # torch's fast path may zero padded positions; compare real ones
    torch.testing.assert_close(y[keep], r[keep], atol=1e-5, rtol=1e-5)


def test_decoder_block_matches_torch_layer():
    torch.manual_seed(2)
    ours = DecoderBlock(D, H, 64, 0.0, 0.0).eval()
    randomise_norms(ours)
    ref = nn.TransformerDecoderLayer(D, H, 64, dropout=0.0, activation="relu", batch_first=True,
                                     norm_first=True).eval()
    copy_mha(ours.self_attn, ref.self_attn)
    copy_mha(ours.cross_attn, ref.multihead_attn)
    ref.load_state_dict({**ref.state_dict(), 
        "linear1.weight": ours.ffn.linear1.weight, "linear1.bias": ours.ffn.linear1.bias,
        "linear2.weight": ours.ffn.linear2.weight, "linear2.bias": ours.ffn.linear2.bias,
        **{f"norm{i}.{p}": getattr(getattr(ours, f"norm{i}"), p) for i in (1, 2, 3) for p in ("weight", "bias")}})
    x, mem = torch.randn(2, 5, D), torch.randn(2, 8, D)
    mpad = torch.arange(8)[None] >= torch.tensor([8, 3])[:, None]
    y = ours(x, mem, causal_mask(5), ~mpad[:, None, None, :])
    with torch.no_grad():
        r = ref(x, mem, tgt_mask=~causal_mask(5)[0, 0], memory_key_padding_mask=mpad)
    torch.testing.assert_close(y, r, atol=1e-5, rtol=1e-5)
