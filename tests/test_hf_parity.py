"""A Hugging Face MarianMT and a T5 through the model protocol (transformer/hf/), with `transformers` itself as the
oracle: the app's greedy pieces are generate(num_beams=1)'s, every captured attention map of every layer, head and kind
is the attention generate(output_attentions=True) (and a teacher-forced forward pass) returns within 1e-5, a forced
piece continues as generate from that prefix, beam search finds generate(num_beams=4)'s hypotheses, a switched-off head
decodes as the model with that head's output projection zeroed, and Inside this head recomputes the module's weights
from its own projections, scaling and (T5) relative position bias. Each test runs for both architectures, the two that
differ most: MarianMT (learned positions, q·kᵀ/√d, LayerNorm, a final logits bias) and T5 (relative position biases
added to unscaled q·kᵀ, RMS norms, a shared embedding read by the output layer at d_model^-0.5). The tiny models are
built here (tests/hf_models.py), no hub. Skipped where `transformers` is not installed, except in CI (CI=true), which
installs the hf extra: there a missing transformers fails."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.hf_models import marian_folder, need_transformers, t5_folder
from transformer.decode.beam import beam_search
from transformer.hf import load_hf  # imports no transformers: load_hf does

need_transformers(": the parity tests need it as their oracle")

TEXTS = ["Der Hund schläft im Garten.", "Kannst du mir bitte das Salz geben?",
         "Wir fahren mit dem Zug nach Berlin."]
TOL = 1e-5


@pytest.fixture(scope="module", params=["marian", "t5"])
def tr(request, tmp_path_factory):
    if request.param == "marian":
        return load_hf(marian_folder(tmp_path_factory.mktemp("marian")), "cpu")
    return load_hf(t5_folder(tmp_path_factory.mktemp("t5") / "t5-de-en"), "cpu")  # its languages: its name's


def generate(tr, src_ids, **kw):
    with torch.inference_mode():
        return tr.model.hf.generate(torch.tensor([src_ids]), return_dict_in_generate=True, **kw)


def test_the_adapter_is_a_model_of_the_protocol(tr):
    from transformer.model.protocol import EncoderDecoder
    assert isinstance(tr.model, EncoderDecoder)
    c = tr.config
    assert (c.n_encoder_layers, c.n_decoder_layers, c.n_heads, c.src_lang, c.tgt_lang) == (2, 2, 4, "de", "en")
    assert c.bos_id == tr.model.hf.generation_config.decoder_start_token_id == c.pad_id  # both start from <pad>
    assert len(list(tr.model.attention_modules())) == 2 + 2 * 2


@pytest.mark.parametrize("text", TEXTS)
def test_greedy_pieces_and_every_map_are_generates(tr, text):
    s = tr.decode(text)
    ids = s.target_ids  # <s>=<pad>, the pieces, </s> when reached
    n = len(ids) - 1 if ids[-1] == tr.config.eos_id else s.limit
    out = generate(tr, s.source_ids, num_beams=1, do_sample=False, max_new_tokens=n, output_attentions=True)
    assert out.sequences[0].tolist() == ids[:n + 1]
    L, H = tr.config.n_decoder_layers, tr.config.n_heads
    enc = np.stack([a[0].numpy() for a in out.encoder_attentions])  # (L, H, S, S)
    assert enc.shape == s.encoder_self.shape
    np.testing.assert_allclose(s.encoder_self, enc, atol=TOL, rtol=0)
    for t in range(n):  # generate's step t: the query at position t
        self_row = np.stack([a[0, :, 0].numpy() for a in out.decoder_attentions[t]])  # (L, H, t+1)
        cross_row = np.stack([a[0, :, 0].numpy() for a in out.cross_attentions[t]])  # (L, H, S)
        assert self_row.shape == (L, H, t + 1)
        np.testing.assert_allclose(s.positions[t].self_row, self_row, atol=TOL, rtol=0)
        np.testing.assert_allclose(s.positions[t].cross_row, cross_row, atol=TOL, rtol=0)


def test_teacher_forced_maps_are_a_forward_passes(tr):
    src, tgt = tr.source_ids(TEXTS[0]), tr.target_ids_of("The dog sleeps in the garden.")
    maps = tr.attend(TEXTS[0], "The dog sleeps in the garden.")
    with torch.inference_mode():
        out = tr.model.hf(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([tgt]),
                          output_attentions=True)
    for kind, theirs in (("encoder_self", out.encoder_attentions), ("decoder_self", out.decoder_attentions),
                         ("cross", out.cross_attentions)):
        np.testing.assert_allclose(maps[kind], np.stack([a[0].numpy() for a in theirs]), atol=TOL, rtol=0)
    probs = tr.token_probs(src, tgt)  # the scores generate would see, teacher-forced
    ref = torch.softmax(out.logits[0].masked_fill(torch.arange(out.logits.size(-1)) == tr.config.pad_id,
                                                  float("-inf")), -1)  # generate's bad_words_ids: <pad>
    np.testing.assert_allclose(probs, ref[torch.arange(len(tgt) - 1), torch.tensor(tgt[1:])].numpy(), atol=TOL)


def test_a_forced_piece_continues_as_generate_from_that_prefix(tr):
    s = tr.start(TEXTS[1])
    s.step()
    greedy = s.positions[s.cursor].greedy
    forced = next(i for i in range(3, len(tr.tokenizer)) if i not in (greedy, tr.config.eos_id, tr.config.pad_id))
    s.force(forced)
    s.run()
    ids = s.target_ids
    n = len(ids) - 1 if ids[-1] == tr.config.eos_id else s.limit
    prefix = ids[:3]
    assert prefix[2] == forced
    out = generate(tr, s.source_ids, num_beams=1, do_sample=False, max_new_tokens=n - 2,
                   decoder_input_ids=torch.tensor([prefix]), output_attentions=True)
    assert out.sequences[0].tolist() == ids[:n + 1]
    for t in range(3):  # generate's first pass: the prefix's three queries, the forced piece's last
        cross = np.stack([a[0, :, t].numpy() for a in out.cross_attentions[0]])  # (L, H, S)
        np.testing.assert_allclose(s.positions[t].cross_row, cross, atol=TOL, rtol=0)


@pytest.mark.parametrize("text", TEXTS[:2])
def test_beam_is_generates_beam(tr, text):
    src = tr.source_ids(text)
    n = 12
    ours = beam_search(tr.model, src, 4, max_new=n)
    out = generate(tr, src, num_beams=4, num_return_sequences=4, do_sample=False, max_new_tokens=n,
                   early_stopping=False, length_penalty=1.0, renormalize_logits=True,
                   output_scores=True)
    theirs = []
    for seq in out.sequences.tolist():  # best first, padded after </s>
        theirs.append(seq[:seq.index(tr.config.eos_id) + 1] if tr.config.eos_id in seq[1:] else seq)
    assert [[tr.config.bos_id] + h.ids for h in ours.hypotheses] == theirs
    np.testing.assert_allclose([h.normalized for h in ours.hypotheses], out.sequences_scores.numpy(), atol=1e-4)


def test_ablation_is_the_head_zeroed_in_the_model_itself(tr):
    """Heads switched off by the pre-hooks on out_proj decode as a copy of the model whose out_proj ignores them
    (their columns of W_O zeroed): the same pieces and maps from generate."""
    import copy

    heads = [("cross", 1, 2), ("decoder_self", 0, 1), ("encoder_self", 1, 3)]
    s = tr.decode(TEXTS[1], ablate=heads)
    intact = tr.decode(TEXTS[1])
    cut = type(tr.model)(copy.deepcopy(tr.model.hf), tr.config)
    modules = {(k, l): m for k, l, m in cut.attention_modules()}
    with torch.no_grad():  # the output projection by its name in transformers (T5: o), not as the adapter says
        for kind, layer, head in heads:
            m = modules[(kind, layer)]
            w = (m.o if tr.architecture == "t5" else m.out_proj).weight  # (D, H * d)
            d = w.size(1) // tr.config.n_heads
            w[:, head * d:(head + 1) * d] = 0
    ids = s.target_ids
    n = len(ids) - 1 if ids[-1] == tr.config.eos_id else s.limit
    with torch.inference_mode():
        out = cut.hf.generate(torch.tensor([s.source_ids]), return_dict_in_generate=True, num_beams=1,
                              do_sample=False, max_new_tokens=n, output_attentions=True)
    assert out.sequences[0].tolist() == ids[:n + 1]
    for t in range(n):
        cross = np.stack([a[0, :, 0].numpy() for a in out.cross_attentions[t]])  # (L, H, S)
        np.testing.assert_allclose(s.positions[t].cross_row, cross, atol=TOL, rtol=0)
    assert not np.allclose(s.positions[1].cross_row, intact.positions[1].cross_row, atol=1e-3)  # it changed them


def position_bias(tr, kind: str, head: int, tq: int, tk: int) -> np.ndarray:
    """What the model adds to a head's scaled scores, (tq, tk): for T5 the relative position bias its stack's first
    layer computes (transformers' own compute_bias; none in cross-attention), for MarianMT nothing."""
    if tr.architecture != "t5" or kind == "cross":
        return np.zeros((tq, tk), np.float32)
    stack = tr.model.hf.encoder if kind == "encoder_self" else tr.model.hf.decoder
    with torch.inference_mode():
        return stack.block[0].layer[0].SelfAttention.compute_bias(tq, tk)[0, head].numpy()


def softmax_rows(scores, mask):
    scores = np.where(mask, -np.inf, scores)
    e = np.exp(scores - scores.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_inside_a_head_is_its_own_projections_and_scaling(tr):
    """Inside this head: q, k from the module's own projections, scaled by the module's own factor (MarianMT's
    head_dim ** -0.5, T5's 1) plus the module's own score bias (T5's relative position bias), give the weights the
    hooks read, and those are the session's maps."""
    s = tr.decode(TEXTS[0])
    s.goto(3)
    modules = {(k, l): m for k, l, m in tr.model.attention_modules()}
    for kind, layer, head in (("cross", 1, 2), ("decoder_self", 0, 3), ("encoder_self", 1, 0)):
        ins = s.inside(kind, layer, head)
        scaling = modules[(kind, layer)].scaling
        assert scaling == (1.0 if tr.architecture == "t5" else pytest.approx(8 ** -0.5))  # d 32 over 4 heads
        bias = position_bias(tr, kind, head, *ins.raw.shape)
        assert ins.biased == (tr.architecture == "t5")  # the panel's step ② says which: ÷√d_k, or + the bias
        np.testing.assert_allclose(ins.scores, ins.raw * scaling + bias, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(ins.weights, softmax_rows(ins.scores, ins.mask), atol=1e-5)
        if tr.architecture == "t5" and kind != "cross":  # the bias matters: without it the weights would be others
            assert not np.allclose(ins.weights, softmax_rows(ins.raw * scaling, ins.mask), atol=1e-2)
        maps = s.attention[kind][layer, head]  # the hooks' maps of the session
        np.testing.assert_allclose(ins.weights, maps[:ins.weights.shape[0], :ins.weights.shape[1]], atol=TOL)


def test_the_model_card_says_where_it_came_from_and_claims_no_training_data(tr):
    from attention_lens.model.handlers import model_card
    card = model_card(tr, {}, "detail", "en")
    assert tr.origin in card and f"{tr.architecture} encoder-decoder from transformers" in card
    assert "Multi30k" not in card and "pre-LN" not in card  # our model's words are not said of another's
