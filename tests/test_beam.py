import itertools

import pytest
import torch

from tests.conftest import small_model
from transformer.decode.beam import BeamResult, beam_search, beam_translate_batch
from transformer.decode.decoding import greedy_decode

ODD = ["Katze Hund Mann Frau Kind rennt schläft", "xyz qwv", "Ein Ein Ein", "a", "Hund. Hund. Hund. Hund."]


def device_of(model) -> torch.device:
    return model.embed.weight.device  # tensors for the model are made there (the suite can run on CUDA)


def greedy_ids(model, src_ids, max_new=None):
    return greedy_decode(model, torch.tensor([src_ids], device=device_of(model)), max_new)[0]


@torch.no_grad()
def teacher_forced_logprobs(model, src_ids, ids) -> list[float]:
    """Log-probability of each of `ids` given the prefix before it, in one uncached pass."""
    dev = device_of(model)
    tgt = torch.tensor([[model.config.bos_id] + ids[:-1]], device=dev)  # (1, T)
    logp = torch.log_softmax(model(torch.tensor([src_ids], device=dev), tgt).double(), -1)  # (1, T, V)
    return logp[0, torch.arange(len(ids), device=dev), torch.tensor(ids, device=dev)].tolist()


def check_tree(result: BeamResult, k: int, eos: int):
    tree = result.tree
    assert len(tree[0]) == 1 and tree[0][0].parent == -1 and tree[0][0].step == 0
    for step, nodes in enumerate(tree[1:], 1):
        assert sum(n.alive for n in nodes) <= k
        assert [n.rank for n in nodes] == list(range(len(nodes)))
        assert all(a.score >= b.score for a, b in itertools.pairwise(nodes))
        for n in nodes:
            assert n.step == step and 0 <= n.parent < len(tree[step - 1]) and tree[step - 1][n.parent].alive
            assert n.alive == (n.token != eos)
    for hyp in result.hypotheses:
        assert hyp.path[0] == (0, 0) and [s for s, _ in hyp.path] == list(range(len(hyp.ids) + 1))
        for (s0, i0), (s1, i1) in zip(hyp.path, hyp.path[1:]):
            assert tree[s1][i1].parent == i0
        assert [tree[s][i].token for s, i in hyp.path[1:]] == hyp.ids
        assert tree[hyp.path[-1][0]][hyp.path[-1][1]].score == pytest.approx(hyp.score, abs=1e-9)


def test_beam1_equals_greedy(tiny_translator, tiny_pairs):
    model = tiny_translator.model
    for text in [de for de, _ in tiny_pairs] + ODD:
        src = tiny_translator.source_ids(text)
        result = beam_search(model, src, 1)
        assert len(result.hypotheses) == 1
        assert result.best.ids == greedy_ids(model, src), text
    for text in ODD:
        src = tiny_translator.source_ids(text)
        for lp in (0.0, 2.0, -0.5):
            assert beam_search(model, src, 1, length_penalty=lp).best.ids == greedy_ids(model, src)
        assert beam_search(model, src, 1, max_new=3).best.ids == greedy_ids(model, src, 3)


def test_beam_k_sorted_traceable_and_scored(tiny_translator, tiny_pairs):
    model, eos = tiny_translator.model, tiny_translator.config.eos_id
    for text in [tiny_pairs[0][0], tiny_pairs[7][0], ODD[0], ODD[1]]:
        src = tiny_translator.source_ids(text)
        for k, lp in ((2, 1.0), (4, 0.0), (8, 0.6)):
            result = beam_search(model, src, k, length_penalty=lp)
            hyps = result.hypotheses
            assert len(hyps) == k and result.source_ids == src
            assert all(a.normalized >= b.normalized for a, b in itertools.pairwise(hyps))
            for h in hyps:
                assert h.finished == (h.ids[-1] == eos) and eos not in h.ids[:-1]
                assert h.score == pytest.approx(sum(h.token_logprobs), abs=1e-9)
                assert h.normalized == pytest.approx(h.score / len(h.ids) ** lp)
                # the cached, reordered beam computed the same log-probs as an uncached pass
                assert h.token_logprobs == pytest.approx(teacher_forced_logprobs(model, src, h.ids), abs=1e-4)
            check_tree(result, k, eos)


def test_beam_not_worse_than_greedy_in_logprob(tiny_translator, tiny_pairs):
    model = tiny_translator.model
    for text in [de for de, _ in tiny_pairs[::3]] + ODD:
        src = tiny_translator.source_ids(text)
        best = beam_search(model, src, 4, length_penalty=0.0).best
        greedy = greedy_ids(model, src)
        assert sum(teacher_forced_logprobs(model, src, best.ids)) >= \
            sum(teacher_forced_logprobs(model, src, greedy)) - 1e-4, text


def test_beam_beats_greedy_on_an_untrained_model():
    """An untrained model is far from peaked, so the beam often finds a better sequence than greedy."""
    model, better = small_model(vocab=12), 0
    for seed in range(8):
        g = torch.Generator().manual_seed(seed)
        src = torch.randint(4, 12, (2 + seed % 5,), generator=g).tolist() + [3]
        result = beam_search(model, src, 4, length_penalty=0.0)
        beam_lp = teacher_forced_logprobs(model, src, result.best.ids)
        assert result.best.token_logprobs == pytest.approx(beam_lp, abs=1e-4)
        greedy = sum(teacher_forced_logprobs(model, src, greedy_ids(model, src)))
        assert sum(beam_lp) >= greedy - 1e-4
        better += sum(beam_lp) > greedy + 1e-4
        check_tree(result, 4, model.config.eos_id)
    assert better > 0


def test_max_new_gives_unfinished_hypotheses():
    model = small_model(vocab=30)
    result = beam_search(model, [5, 6, 7, 8, 3], 3, max_new=4)
    assert len(result.hypotheses) == 3 and len(result.tree) <= 5
    for h in result.hypotheses:
        assert h.finished or len(h.ids) == 4
    check_tree(result, 3, model.config.eos_id)


def test_needs_eval_mode_and_never_changes_the_mode(monkeypatch):
    """The model is shared by every user: beam search neither flips its mode nor runs it in training mode."""
    model = small_model(vocab=30)
    flips = []
    monkeypatch.setattr(model, "train", lambda mode=True: flips.append(mode))  # eval() calls train(False)
    assert beam_search(model, [5, 6, 7, 3], 2).hypotheses and not model.training
    monkeypatch.undo()
    model.train()
    with pytest.raises(ValueError, match=r"eval mode \(model.eval\(\)\)"):
        beam_search(model, [5, 6, 7, 3], 2)
    assert model.training and all(m.training for m in model.modules())
    assert flips == []


def test_invalid_arguments(tiny_translator):
    model, src = tiny_translator.model, tiny_translator.source_ids("Ein Hund rennt.")
    for bad in (0, 9, -1, 2.5, "4", True, None):
        with pytest.raises(ValueError, match="beam size"):
            beam_search(model, src, bad)
        with pytest.raises(ValueError, match="beam size"):
            beam_translate_batch(tiny_translator, ["Ein Hund rennt."], bad)
    with pytest.raises(ValueError):
        beam_search(model, src, 2, max_new=0)
    with pytest.raises(ValueError):
        beam_search(model, [], 2)


def test_beam_translate_batch(tiny_translator, tiny_pairs):
    texts = [de for de, _ in tiny_pairs[:6]] + ODD[:2]
    assert beam_translate_batch(tiny_translator, texts, 1) == tiny_translator.translate_batch(texts)
    out = beam_translate_batch(tiny_translator, texts, 4, batch_size=2)
    tok = tiny_translator.tokenizer
    assert out == [tok.decode(beam_search(tiny_translator.model, tiny_translator.source_ids(t), 4).best.ids)
                   for t in texts]
    assert beam_translate_batch(tiny_translator, [], 3) == []
