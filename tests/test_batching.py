"""Batching across users (transformer/decode/batching.py): every session decoded in a batch is the session decoded
alone, within the bound measured (TOL) and with the same pieces, ablated heads and forced pieces included; a batch
batches (each position one pass of the decoder for all its rows, counted by a hook; callers meet in it and none stays
counted as arriving); the batch runs through the model's own modules (a global forward hook sees them); a long or
broken request in a batch harms no other. With ATTENTION_LENS_TEST_DEVICE=cuda these run on a GPU (the GPU lane,
.ci/gpu)."""
from __future__ import annotations

import contextlib
import pickle
import threading

import numpy as np
import pytest
import torch

from benchmarks.common import alike
from tests.conftest import DEVICE
from transformer.decode import step
from transformer.decode.batching import Batcher
from transformer.decode.session import Script, decode
from transformer.decode.step import feed_rows

# The largest relative difference of a batched row from the same row alone that these tests accept: the bound measured
# on the CPU (python -m benchmarks.batching: 1.85e-06 over 300 test sentences in batches of 32), and on CUDA the GPU
# lane's bound; pinned here, never read from the library's constants (step.TOLERANCE states it with a margin).
CPU_BOUND = 2e-6
TOL = 1e-4 if DEVICE == "cuda" else CPU_BOUND

TEXTS = ["Ein Boston Terrier läuft über saftig-grünes Gras vor einem weißen Zaun.",
         "Ein Mädchen in einem Karateanzug bricht ein Brett mit einem Tritt.",
         "Hallo.",
         "Zwei Kinder spielen am Strand mit einem großen Ball und lachen laut.",
         "Der alte Mann ging gestern Abend mit seinem kleinen Hund durch den Park.",
         "Ein Hund rennt durch den Schnee."]
ABLATED = [None, [("cross", 1, 2)], None, [("decoder_self", 0, 1), ("cross", 2, 0), ("encoder_self", 1, 3)], None,
           [("cross", 0, 0)]]


def gap(x, y) -> float:
    """The largest difference of two arrays or tensors, relative to the largest magnitude in them (at least 1)."""
    x, y = (t.detach().float().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t) for t in (x, y))
    if x.shape != y.shape:
        return float("inf")
    return float(np.abs(x - y).max() / max(1.0, float(np.abs(x).max()))) if x.size else 0.0


def differences(a, b, tol: float | None = None) -> list[str]:
    """Where two sessions differ: pieces, choices, flags exactly; attention rows, keys, values and states by more
    than `tol` (relative, default TOL). Empty: the same."""
    tol = TOL if tol is None else tol
    if [p.token for p in a.positions] != [p.token for p in b.positions]:
        return [f"tokens {[p.token for p in a.positions]} != {[p.token for p in b.positions]}"]
    out = []
    for t, (p, q) in enumerate(zip(a.positions, b.positions)):
        for f in ("self_row", "cross_row", "k", "v", "hidden"):
            if (d := gap(getattr(p, f), getattr(q, f))) > tol:
                out.append(f"position {t}: {f} differs by {d:.3g}")
        if (p.greedy, p.forced) != (q.greedy, q.forced):
            out.append(f"position {t}: greedy/forced")
    if a.positions and gap(a.history_probs(), b.history_probs()) > tol:
        out.append("next-piece probabilities")
    if gap(a.encoder_self, b.encoder_self) > tol:
        out.append("encoder self-attention")
    return out + ([] if a.cursor == b.cursor and a.ablated == b.ablated else ["cursor or heads"])


def same_payload(x, y) -> bool:
    """Two payloads alike within the device's tolerance and their rounding (benchmarks.common.alike)."""
    return alike(x, y, TOL)


def started(tr, i):
    """Session i of the mix: its own sentence and heads switched off; every third one with a forced piece after
    two steps (so the batch holds rows at different positions)."""
    s = tr.start(TEXTS[i % len(TEXTS)], ABLATED[i % len(ABLATED)])
    if i % 3 == 2:
        s.step()
        s.step()
        s.force("▁the" if tr.config.src_lang == "de" else "▁der")
    return s


@contextlib.contextmanager
def passes(model):
    """The rows of every pass of the decoder while in the block (a forward pre-hook on its first layer), in order."""
    rows: list[int] = []
    handle = model.decoder[0].register_forward_pre_hook(lambda module, args: rows.append(args[0].size(0)))
    try:
        yield rows
    finally:
        handle.remove()


@pytest.mark.parametrize("n", [1, 2, 6, 13])
def test_a_batch_gives_each_session_what_it_gets_alone(translator, n):
    alone = [started(translator, i).run() for i in range(n)]
    batched = [started(translator, i) for i in range(n)]
    decode(batched)
    for i, (a, b) in enumerate(zip(alone, batched)):
        assert differences(a, b) == [], (i, differences(a, b))
        assert a.translation == b.translation and a.done and b.done


def test_en_de_too(tiny_en_de):
    texts = ["A dog runs.", "Two children play on the beach with a big ball.", "Hello."]
    alone = [tiny_en_de.start(t).run() for t in texts]
    batched = [tiny_en_de.start(t) for t in texts]
    decode(batched)
    assert all(differences(a, b) == [] for a, b in zip(alone, batched))


def test_a_batch_computes_the_first_position_as_alone(translator):
    """Sessions begun without <s> (start_ids(first=False), as a batch's are) get it from the batch, each row the
    bits its own start computes; with rows already further on in the same batch; one such session run alone too."""
    ids = [translator.source_ids(t) for t in TEXTS[:4]]
    heads = [ABLATED[i % len(ABLATED)] for i in range(4)]
    alone = [translator.start_ids(x, h).run() for x, h in zip(ids, heads)]
    fresh = [translator.start_ids(x, h, first=False) for x, h in zip(ids, heads)]
    assert fresh[0].positions == [] and not fresh[0].done and fresh[0].target_ids == []
    ahead = translator.start(TEXTS[5])
    ahead.step()
    decode(fresh[:3] + [ahead])
    for a, b in zip(alone, fresh[:3]):
        assert differences(a, b) == [] and b.positions[0].token == translator.config.bos_id
    assert differences(translator.start(TEXTS[5]).run(), ahead) == []
    assert differences(alone[3], fresh[3].run()) == []


def test_a_batch_computes_each_position_in_one_pass_for_all_its_rows(translator, monkeypatch):
    """Rows at different positions: the furthest behind go first, alone, until they reach the others' position; from
    there every position is one pass of the decoder for every row still decoding, no position is computed twice, and
    the batch's cache (step.Rows) moves on with it from pass to pass: stacked from the sessions' positions only when
    rows join (the three fresh ones, then all four), never again as rows leave."""
    stacked = []
    init = step.Rows.__init__

    def counted(self, sessions, cache=None, memory_mask=None):
        stacked.append(cache is None)
        init(self, sessions, cache, memory_mask)
    monkeypatch.setattr(step.Rows, "__init__", counted)
    fresh = [translator.start_ids(translator.source_ids(t), h, first=False) for t, h in zip(TEXTS[:3], ABLATED)]
    ahead = translator.start(TEXTS[4])
    ahead.step()  # at position 1: the fresh ones catch up in two passes, then all four go on together
    stacked.clear()
    with passes(translator.model) as rows:
        decode(fresh + [ahead])
    held = [len(s.positions) for s in fresh + [ahead]]
    assert rows[:3] == [3, 3, 4], rows
    assert len(rows) == max(held) and sum(rows) == sum(held) - 2, (rows, held)  # ahead's first two were there
    assert rows[2:] == sorted(rows[2:], reverse=True)  # together, rows only ever leave as they end
    assert stacked.count(True) == 2 and len(stacked) > 2, stacked


def test_feed_rows_needs_one_position_and_one_translator(translator):
    a, b = translator.start(TEXTS[0]), translator.start(TEXTS[1])
    b.step()
    with pytest.raises(ValueError, match="same position"):
        feed_rows([a, b], [5, 5])


def concurrently(translator, texts, batcher, go=None):
    """Each text decoded by translator.decode on its own thread at once; -> (sessions or errors, in order)."""
    translator.batcher = batcher
    out = [None] * len(texts)
    barrier = threading.Barrier(len(texts))

    def one(i):
        barrier.wait()
        try:
            out[i] = (go or translator.decode)(texts[i])
        except Exception as e:  # noqa: BLE001 - what this request got
            out[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert batcher.arriving == 0, f"{batcher.arriving} callers still counted as arriving"  # or every batch waits
    return out


def test_concurrent_callers_are_batched_and_get_their_own_sessions(translator):
    batcher = Batcher(window_s=0.2, max_rows=8, enabled=True)  # a wide window: the threads surely meet in it
    texts = TEXTS * 2
    with passes(translator.model) as rows:
        got = concurrently(translator, texts, batcher)
    translator.batcher = Batcher()
    assert max(batcher.batches) > 1 and sum(batcher.batches) == len(texts) and max(batcher.batches) <= 8
    # the rows went through the decoder together (alone, the passes would be one a position): each position once
    assert sum(rows) == sum(len(s.positions) for s in got) and sum(rows) >= 3 * len(rows), rows
    for text, s in zip(texts, got):
        assert differences(translator.start(text).run(), s) == []


@pytest.mark.parametrize("join_steps", [8, 0])
def test_a_caller_arriving_while_a_batch_runs_joins_it(translator, join_steps):
    """A caller that arrives once a batch has begun joins it (while its rows are fewer than join_steps positions
    on), catches up and gets its own session, within the tolerance; join_steps 0: it waits for a batch of its own."""
    batcher = Batcher(window_s=0, max_rows=8, enabled=True, join_steps=join_steps)
    late, got = [], {}
    first = translator.start_ids(translator.source_ids(TEXTS[0]), first=False)
    second = translator.start_ids(translator.source_ids(TEXTS[1]), ABLATED[1], first=False)

    class Arriving(Script):
        def next(self, session):  # the batch has begun (it asks its row what to feed): the second caller arrives now
            if not late:
                thread = threading.Thread(target=lambda: got.update(late=batcher.run(second, 9)))
                thread.start()
                late.append(thread)
                while not batcher._pending:
                    thread.join(0.001)
            return super().next(session)
    got["first"] = batcher.run(first, 9, Arriving())
    late[0].join(60)
    assert batcher.batches == ([2] if join_steps else [1, 1])
    assert differences(translator.start(TEXTS[0]).run(), got["first"]) == []
    assert differences(translator.start(TEXTS[1], ABLATED[1]).run(), got["late"]) == []


def test_a_huge_input_is_decoded_apart_and_a_broken_one_fails_alone(translator):
    batcher = Batcher(window_s=0.2, max_rows=16, enabled=True)
    huge = "Ein Hund rennt durch den Schnee und " * 60  # 2,000 characters cut to the model's limit: apart

    def go(text):
        if text == "unreadable":  # fails while it is encoded, on its caller's thread: it never reaches a batch
            return translator.decode("")
        s = translator.start(text)
        if text == "broken":
            s.cross_k = s.cross_k[..., :7]  # a row that cannot be computed: the batch fails, then each alone
        return translator.batcher.run(s, len(s.source_ids))

    texts = [TEXTS[0], huge, "broken", TEXTS[3], "unreadable", TEXTS[5]]
    got = concurrently(translator, texts, batcher, go)
    translator.batcher = Batcher()
    assert isinstance(got[2], RuntimeError) and isinstance(got[4], ValueError)
    assert sum(batcher.batches) == len(texts) - 2  # the huge one decoded apart, the unreadable one never encoded
    for i in (0, 1, 3, 5):
        assert differences(translator.start(texts[i]).run(), got[i]) == [], i


def test_start_and_attribution_handlers_answer_as_alone(translator):
    """The app's Start and /attribution with batching on (as attention_lens/app.py sets it) give what they give
    alone."""
    from attention_lens.shell import api
    from attention_lens.translate import (
        handlers as decoding_views,  # here, not above: the library's tests of this file need no gradio (GPU lane)
    )
    texts = TEXTS[:4]
    alone = [(decoding_views.start(translator, t, 8), api.api_attribution(translator, t, "alti")) for t in texts]

    def both(t):
        return decoding_views.start(translator, t, 8), api.api_attribution(translator, t, "alti")
    got = concurrently(translator, texts, Batcher(window_s=0.1, enabled=True), both)
    batches = translator.batcher.batches
    translator.batcher = Batcher()
    assert max(batches) > 1
    for (s0, a0), (s1, a1) in zip(alone, got):
        p0, p1 = dict(s0[2]), dict(s1[2])
        [p.pop(key, None) for p in (p0, p1) for key in ("ms", "seq")]  # time taken, a counter
        assert same_payload(p0, p1) and s0[1] == s1[1] and same_payload(s0[3], s1[3]) and same_payload(a0, a1)
        assert differences(s0[0], s1[0]) == []


def test_batching_is_off_unless_turned_on(translator):
    assert not Batcher().enabled and translator.batcher.run(translator.start("Hallo."), 3).done
    assert translator.batcher.batches == [] and np.isfinite(translator.start("Hallo.").run().history_probs()).all()


def test_the_stated_tolerance_is_the_measured_bound_with_a_margin():
    """step.TOLERANCE, what the library tells its users (and benchmarks.common.alike compares by), covers the bound
    measured on the CPU and is no looser than ten times it."""
    assert CPU_BOUND <= step.TOLERANCE <= 10 * CPU_BOUND and step.tolerance("cpu") == step.TOLERANCE


def test_a_global_forward_hook_sees_a_batch_run_the_attention_modules(translator):
    """A forward hook registered for every module, from outside the project's code, sees every attention module run
    for batched Starts on batches of more than one row; every one of them equals /translate alone."""
    from transformer.model.attention import MultiHeadAttention
    seen = []

    def hook(module, args, output):
        if isinstance(module, MultiHeadAttention):
            seen.append(output.weights.size(0) if output.weights is not None else 0)
    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        texts = TEXTS * 2
        got = concurrently(translator, texts, Batcher(window_s=0.2, max_rows=8, enabled=True))
        batches = translator.batcher.batches
    finally:
        handle.remove()
        translator.batcher = Batcher()
    assert max(batches) > 1
    L = translator.config.n_decoder_layers
    assert max(seen) > 1 and sum(1 for b in seen if b > 1) >= 2 * L  # decoder self and cross, of rows > 1
    for text, s in zip(texts, got):
        assert s.translation == translator.translate(text)


def test_a_batched_session_owns_its_tensors(translator):
    """A session decoded in a batch of several holds no view of the batch's storage: it pickles within 1.2x of the
    same session decoded alone."""
    alone = [started(translator, i).run() for i in range(8)]
    batched = [started(translator, i) for i in range(8)]
    decode(batched)
    for a, b in zip(alone, batched):
        assert len(pickle.dumps(b)) <= 1.2 * len(pickle.dumps(a)), (len(pickle.dumps(b)), len(pickle.dumps(a)))


def replayed_alone(tr, text, heads, script, stop):
    """What a scripted session is, stepped alone by the session's own methods: <s>, then at each position the
    script's piece (forced with force(), a given one with advance) or the greedy step, to `stop` or the end."""
    s = tr.start(text, heads)
    while not s.done and (stop is None or s.cursor < stop):
        token, forced = script.get(s.cursor + 1, (None, False))
        if token is None:
            s.step()
        elif forced:
            s.force(token)
        else:
            s.advance(token)
    return s


def test_scripted_sessions_in_a_batch_are_what_they_are_stepped_alone(translator):
    """Replays (Compare's: forced pieces at positions, a given prefix up to a stop) beside greedy rows in one batch:
    each within the tolerance what stepping it alone gives."""
    piece = translator.tokenizer.piece_id("▁the")
    given = [p.token for p in translator.start(TEXTS[3]).run().positions]
    jobs = [(TEXTS[0], None, {2: (piece, True), 5: (piece, True)}, None),
            (TEXTS[0], ABLATED[1], {2: (piece, True), 5: (piece, True)}, None),
            (TEXTS[3], ABLATED[3], {i: (t, i == 4) for i, t in enumerate(given) if i}, 6),
            (TEXTS[1], None, {}, None), (TEXTS[2], ABLATED[5], {1: (piece, True)}, 0)]
    batched = [translator.start_ids(translator.source_ids(text), heads, first=False) for text, heads, _, _ in jobs]
    decode(batched, [Script(script, stop) for _, _, script, stop in jobs])
    for (text, heads, script, stop), b in zip(jobs, batched):
        a = replayed_alone(translator, text, heads, script, stop)
        assert differences(a, b) == [], (text, differences(a, b))
    assert batched[2].cursor == 6 and [p.token for p in batched[2].positions] == given[:7]
    assert [p.forced for p in batched[2].positions].count(True) == 1 and len(batched[4].positions) == 1


def test_compare_and_force_handlers_answer_as_alone(translator):
    """The app's Compare (intact and ablated replays of a trajectory with a forced piece, viewed mid-way) and
    forcing a piece, with batching on, give what they give alone; each Compare's three decodings meet in a batch."""
    from attention_lens.ablation import handlers as ablation_handlers
    from attention_lens.translate import handlers as decoding_views
    def shown(i):
        s = translator.start(TEXTS[i])
        s.step()
        s.step()
        s.force("▁the")
        s.run()
        s.goto(3)
        return s

    def both(i):
        return (ablation_handlers.ablate(translator, shown(i), ["L1 H1"], ["L2 H3"], ["L3 H2"], 5),
                decoding_views.force_at(translator, shown(i), None, "▁a", 5))
    alone = [both(i) for i in range(4)]
    got = concurrently(translator, list(range(4)), Batcher(window_s=0.1, enabled=True), both)
    batches = translator.batcher.batches
    translator.batcher = Batcher()
    assert max(batches) >= 3 and sum(batches) == 4 * 4
    for (c0, f0), (c1, f1) in zip(alone, got):
        assert same_payload(list(c0[:4]), list(c1[:4])) and c0[5] == c1[5]
        p0, p1, f0p, f1p = dict(c0[4]), dict(c1[4]), dict(f0[2]), dict(f1[2])
        [p.pop(key, None) for p in (p0, p1, f0p, f1p) for key in ("ms", "seq")]  # time taken, a counter
        assert same_payload(p0, p1) and same_payload(f0p, f1p) and f0[1] == f1[1] and same_payload(f0[3], f1[3])
        assert differences(f0[0], f1[0]) == []


def test_references_followed_in_a_batch_are_what_follow_gives_alone(translator):
    """Translator.follow (the page's reference, teacher-forced step by step) in one batch with other callers' gives
    what start_ids(...).follow gives alone, within the tolerance: with heads off, with </s> inside the reference (it
    stops
    there), and with a reference longer than the decoding limit of its source (the limit grows as follow grows it)."""
    tr, eos = translator, translator.config.eos_id
    long_ref = tr.target_ids_of(" ".join(["a dog runs in the snow"] * 4))[1:-1]
    jobs = [(TEXTS[0], "A dog runs through the snow.", None), (TEXTS[1], "A girl breaks a board.", ABLATED[1]),
            (TEXTS[2], None, ABLATED[3]), (TEXTS[3], "Two children play.", None)]

    def target(i):
        text, ref, heads = jobs[i]
        ids = tr.target_ids_of(ref)[1:] if ref else long_ref
        return tr.source_ids(text), (ids[:3] + [eos] + ids[3:] if i == 3 else ids), heads
    assert len(long_ref) > tr.start(TEXTS[2]).limit
    alone = [tr.start_ids(src, heads).follow(ids) for src, ids, heads in map(target, range(4))]
    got = concurrently(tr, list(range(4)), Batcher(window_s=0.1, enabled=True), lambda i: tr.follow(*target(i)))
    batches = tr.batcher.batches
    tr.batcher = Batcher()
    assert max(batches) >= 2 and sum(batches) == 4
    for a, b in zip(alone, got):
        assert differences(a, b) == [] and a.limit == b.limit
    assert got[3].positions[-1].token == eos and len(got[3].positions) == 5
    with pytest.raises(ValueError, match="other than <pad> and <s>"):
        tr.follow(tr.source_ids(TEXTS[0]), [tr.config.bos_id])


def test_a_batch_on_the_emulated_accelerator_is_each_row_alone(tiny_trained):
    """On the emulated accelerator: a batch's state stays on the device, each batched step copies to the host once for
    all its rows, and every row equals the same session decoded alone on the CPU within the stated tolerance."""
    from tests.emulated_device import EmulatedDevice, OnDevice, Transfers, emulate
    from transformer.decode.decoding import Translator
    cpu = Translator.load(tiny_trained, device="cpu")
    tr = emulate(cpu)
    texts = ["Ein Hund rennt.", "Zwei Kinder spielen am Strand mit einem Ball.", "Hallo.", "Ein Mann sitzt."]
    heads = [None, [("cross", 0, 1)], [("decoder_self", 1, 0), ("encoder_self", 0, 2)], None]
    alone = [cpu.start(x, hd).run() for x, hd in zip(texts, heads)]
    with EmulatedDevice(), Transfers() as t:
        batched = [tr.start(x, hd) for x, hd in zip(texts, heads)]
        t.clear()
        decode(batched)
        assert len(t.to_host) == max(len(s.positions) for s in batched) - 1  # one copy per step of the batch
        for a, b in zip(alone, batched):
            assert all(isinstance(x, OnDevice) for p in b.positions for x in (p.k, p.v, p.hidden))
            assert differences(a, b, CPU_BOUND) == []
