"""A small version of `python -m benchmarks.load`: concurrent users never see each other's sessions.

The tiny checkpoint is launched in-process and 6 gradio_client sessions, each with a different
sentence, are stepped to the end at the same time with /start and /step (what the UI sends), through
the same code as the benchmark (benchmarks.load.run_sessions).
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

from benchmarks import load as bench_load
from tests.conftest import DEVICE
from transformer.decode.decoding import Translator


@pytest.fixture(scope="module")
def tiny_served(tiny_trained):
    tr = Translator.load(tiny_trained, device=DEVICE)
    with bench_load.serving(tr) as url:
        yield tr, url


def test_six_concurrent_sessions_each_see_only_their_own(tiny_served, tiny_pairs):
    tr, url = tiny_served
    sentences = [de for de, _ in tiny_pairs[::3]][:6]
    assert len(set(sentences)) == 6
    translations = [tr.translate(s) for s in sentences]
    assert len(set(translations)) == 6, "pick sentences whose translations differ, or a mix-up could go unseen"
    rep = bench_load.run_sessions(url, sentences, tr, k=5)
    assert rep["errors"] == []
    assert rep["problems"] == []  # own source pieces on every step, targets grow by one, maps = Translator.attend
    assert rep["sessions"] == 6
    for sentence, want, r in zip(sentences, translations, rep["results"]):
        assert r["sentence"] == sentence
        assert r["translation"] == want
        payload = r["payload"]
        assert payload["done"] and payload["target"][-1] == "</s>"
        assert payload["source"] == tr.tokenizer.pieces(tr.source_ids(sentence))
        assert payload["target"] == tr.start(sentence).run().target_tokens
        assert r["steps"] == len(payload["target"]) - 1 == len(r["latencies"])
    assert rep["steps"] == sum(r["steps"] for r in rep["results"]) > 0
    assert 0 < rep["p50_s"] <= rep["p95_s"] <= rep["max_s"]
    assert rep["steps_per_s"] > 0


def test_verify_notices_a_session_that_is_not_its_own(tiny_served, tiny_pairs):
    """The check used by the benchmark must fail when a payload belongs to another sentence."""
    tr, _ = tiny_served
    from attention_lens.translate import handlers as decoding_views
    (a, _), (b, _) = tiny_pairs[0], tiny_pairs[7]
    _state, text, payload, _ = decoding_views.run(tr, decoding_views.start(tr, b)[0])
    problems = bench_load.verify({"sentence": a, "translation": text, "payload": payload}, tr)
    assert any("translation" in p for p in problems)
    assert any("source pieces" in p for p in problems)


def test_pick_sentences_are_all_different(tmp_path):
    # no Multi30k in tmp_path: falls back to the app's examples with variations
    got = bench_load.pick_sentences(32, data_dir=tmp_path)
    assert len(got) == 32 == len(set(got)) and all(isinstance(s, str) and s for s in got)


def test_memory_run_leaves_no_hooks(tiny_trained, tiny_pairs):
    tr = Translator.load(tiny_trained, device=DEVICE)
    lines = []
    rep = bench_load.memory_run(tr, [de for de, _ in tiny_pairs], steps=60, warmup_steps=20, log=lines.append)
    assert rep["steps"] >= 60 and rep["sessions"] >= 2
    assert rep["hooks_left"] == 0
    assert any("growth" in l for l in lines)


def test_mixed_requests_run_without_errors_or_hooks_left(tiny_served, tiny_pairs):
    tr, url = tiny_served
    lines = []
    rep = bench_load.mixed_run(url, tr.model, [de for de, _ in tiny_pairs], requests=20, warmup=10, log=lines.append)
    assert rep["errors"] == [] and rep["hooks_left"] == 0
    assert rep["requests"] >= 20 and rep["visits"] >= 3
    assert any("growth" in l for l in lines)
