import copy
import threading

import numpy as np
import pytest
import torch

from transformer.decode.decoding import Translator
from transformer.interpret.capture import HeadAblation, attention_modules


def zeroed_copy(model, heads):
    """Reference: a deep copy whose out_proj input columns of the given heads are zero."""
    m = copy.deepcopy(model)
    d = m.config.d_head
    mods = {(k, l): mod for k, l, mod in attention_modules(m)}
    with torch.no_grad():
        for kind, layer, head in heads:
            mods[(kind, layer)].out_proj.weight[:, head * d:(head + 1) * d] = 0
    return m


HEADS = [("encoder_self", 0, 1), ("decoder_self", 1, 0), ("cross", 0, 2), ("cross", 1, 3)]


def test_ablation_equals_zeroed_weights_in_a_copy(tiny_translator):
    tr = tiny_translator
    ref = Translator(zeroed_copy(tr.model, HEADS), tr.tokenizer, tr.device)
    for text in ["Ein Hund rennt.", "Eine Frau schläft.", "Ein Kind springt."]:
        s = tr.start(text, ablate=HEADS).run()
        r = ref.start(text).run()
        assert s.target_ids == r.target_ids
        for kind in ("encoder_self", "decoder_self", "cross"):
            np.testing.assert_allclose(s.attention[kind], r.attention[kind], atol=1e-5)
        src, tgt = tr.source_ids(text), s.target_ids
        np.testing.assert_allclose(tr.token_probs(src, tgt, HEADS), ref.token_probs(src, tgt), atol=1e-5)


def test_ablation_never_touches_weights_or_other_users(tiny_translator):
    tr = tiny_translator
    before = {k: v.clone() for k, v in tr.model.state_dict().items()}
    intact = {t: tr.start(t).run().target_ids for t in ("Ein Hund rennt.", "Ein Mann sitzt.")}
    every = [(k, l, h) for k, l, _ in attention_modules(tr.model) for h in range(tr.config.n_heads)]
    errors, barrier, ablated_ids = [], threading.Barrier(4), []

    def ablated():
        try:
            barrier.wait()
            for _ in range(5):
                ablated_ids.append(tr.start("Ein Hund rennt.", ablate=every).run().target_ids)
        except BaseException as e:  # noqa: BLE001 (an exception in a thread is otherwise lost)
            errors.append(e)

    def plain(text):
        try:
            barrier.wait()
            for _ in range(5):
                assert tr.start(text).run().target_ids == intact[text]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=ablated), threading.Thread(target=ablated),
          threading.Thread(target=plain, args=("Ein Hund rennt.",)),
          threading.Thread(target=plain, args=("Ein Mann sitzt.",))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    assert len(ablated_ids) == 10  # every ablated run finished, and each was unaffected by the others
    assert all(ids == tr.start("Ein Hund rennt.", ablate=every).run().target_ids for ids in ablated_ids)
    for k, v in tr.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert sum(len(m.out_proj._forward_pre_hooks) for _, _, m in attention_modules(tr.model)) == 0


def test_ablating_changes_things_and_empty_set_changes_nothing(tiny_translator):
    tr = tiny_translator
    text = "Ein Hund rennt."
    s0, s1 = tr.start(text).run(), tr.start(text, ablate=[]).run()
    assert s0.target_ids == s1.target_ids
    every = [(k, l, h) for k, l, _ in attention_modules(tr.model) for h in range(tr.config.n_heads)]
    src, tgt = tr.source_ids(text), s0.target_ids
    assert not np.allclose(tr.token_probs(src, tgt), tr.token_probs(src, tgt, every))
    assert tr.start(text, ablate=every).ablated == frozenset(every)


@pytest.mark.parametrize("bad", [[("encoder", 0, 0)], [("cross", 9, 0)], [("cross", 0, 99)], [("cross", -1, 0)],
                                 [("cross", 0.0, 1)], ["cross"], [("cross", True, 0)]])
def test_invalid_heads_rejected(tiny_translator, bad):
    with pytest.raises(ValueError):
        tiny_translator.start("Ein Hund.", ablate=bad)


def test_hooks_removed_after_errors(tiny_translator):
    model = tiny_translator.model
    with pytest.raises(RuntimeError), HeadAblation(model, HEADS):
        assert sum(len(m.out_proj._forward_pre_hooks) for _, _, m in attention_modules(model)) == 4
        raise RuntimeError("boom")
    assert sum(len(m.out_proj._forward_pre_hooks) for _, _, m in attention_modules(model)) == 0


def test_the_ablation_handler_compares_the_sequence_with_the_forced_pieces(tiny_translator):
    """Head ablation compares the sequence the view shows, forced pieces included, on both sides (issue 43 A1).
    Catches the mutation `plan = {}` in attention_lens/<tab>/handlers.py ablate (the forced pieces ignored: both sides
    decoded greedily), which only a browser test caught before."""
    from attention_lens.ablation import handlers as ablation_handlers
    from attention_lens.translate import handlers as decoding_views
    tr, text, heads = tiny_translator, "Ein Hund rennt.", [("cross", 0, 0)]
    greedy = tr.start(text).run()
    alt = tr.start(text).topk(2)[1][0]  # the second choice for the first piece
    shown, off = tr.start(text), tr.start(text, ablate=heads)  # the what-if, decoded here by the library alone
    for s in (shown, off):
        s.force(alt)
        s.run()
    assert shown.translation != greedy.translation
    # the view's what-if at step 1
    session = decoding_views.force_at(tr, decoding_views.start(tr, text)[0], None, alt)[0]
    intact, ablated, probs, _, _, note = ablation_handlers.ablate(tr, session, [], [], ["L1 H1"])
    assert intact == shown.translation  # not the greedy decoding
    assert ablated == off.translation
    assert [row[1] for row in probs] == shown.target_tokens[1:]
    assert f"{alt} at step 1" in note and "forced" in note
