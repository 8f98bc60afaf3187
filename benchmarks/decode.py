"""python -m benchmarks.decode [--device auto|cpu|cuda] [--threads 1] [--split test_2016_flickr]

Step latency of decoding as the app runs it (a captured session step), each kind of step timed inside its
own token-by-token loop (KV cache captured / uncaptured, recomputing the prefix), and greedy test-set
throughput. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time

import torch

from transformer.decode.decoding import Translator
from transformer.interpret.capture import AttentionRecorder
from transformer.train import data as D

from .common import ms

SENTENCE = "Ein kleines Mädchen in einem rosa Kleid klettert die Treppe zu einem hölzernen Spielhaus hinauf."


def bench_decode(a):
    tr = Translator.load(a.checkpoint, a.device)
    model, dev = tr.model, tr.device
    cores = torch.get_num_threads()
    torch.set_num_threads(a.threads)  # one-position steps are overhead-bound: the app runs them on 1 thread
    text = a.sentence
    src_ids = tr.source_ids(text)
    print(f"sentence: {text!r} ({len(text.split())} words, {len(src_ids)} source pieces); device {dev}, "
          f"{a.threads} thread(s) for the steps")
    # captured steps through the session (what the app does)
    captured = []
    for _ in range(a.repeats):
        s = tr.start(text)
        while not s.done:
            t0 = time.perf_counter()
            s.step()
            captured.append(time.perf_counter() - t0)
    target = s.target_ids
    print(f"translation: {s.translation!r} ({len(target) - 1} tokens)")
    # Each kind of step timed inside its own token-by-token loop, as decoding really runs: a prefix of the
    # greedy output (extended with English pieces when shorter) is fed one token at a time, with the KV cache
    # (captured or not) or recomputing the whole prefix at every step. The loops alternate, repeats times.
    n_max = max(a.lengths)
    filler = tr.tokenizer.encode(" and a dog runs in the park with a red ball ." * 8)
    prefix = (target[:-1] + filler)[:n_max]
    src = torch.tensor([src_ids], device=dev)
    print(f"  captured session step (KV cache, this sentence) {ms(captured)}  n={len(captured)}")

    def cached_loop(capture: bool) -> list[float]:
        cache, times = model.new_cache(), []
        for t in range(n_max):
            t0 = time.perf_counter()
            with AttentionRecorder(model) if capture else contextlib.nullcontext():
                h = model.decode(torch.tensor([[prefix[t]]], device=dev), memory, None, None, cache)
            model.project(h[:, -1]).argmax(-1).item()
            times.append(time.perf_counter() - t0)
        return times

    def recompute_loop() -> list[float]:
        times = []
        for t in range(n_max):
            t0 = time.perf_counter()
            h = model.decode(torch.tensor([prefix[:t + 1]], device=dev), memory)
            model.project(h[:, -1]).argmax(-1).item()
            times.append(time.perf_counter() - t0)
        return times

    loops = {"uncaptured": lambda: cached_loop(False), "captured": lambda: cached_loop(True),
             "recompute": recompute_loop}
    runs = {name: [] for name in loops}
    with torch.inference_mode():
        memory = model.encode(src)
        for r in range(a.repeats + 1):
            for name, loop in loops.items():
                times = loop()
                if r:  # the first round warms up
                    runs[name].append(times)
    for n in a.lengths:
        # the step that feeds token n (the prefix then holds n tokens), pooled with its two neighbours
        at = lambda name, n=n: [times[i] for times in runs[name] for i in range(max(0, n - 3), min(n_max, n))]
        uncaptured, captured_n, recompute = at("uncaptured"), at("captured"), at("recompute")
        print(f"  at {n} target tokens: captured step (KV cache) {ms(captured_n)}")
        print(f"  at {n} target tokens: uncaptured step (KV cache) {ms(uncaptured)}")
        print(f"  at {n} target tokens: step recomputing the prefix (no cache) {ms(recompute)}")
        print(f"  at {n} target tokens: cache speed-up "
              f"{statistics.median(recompute) / statistics.median(uncaptured):.2f}x")
    if a.split:
        torch.set_num_threads(cores)
        pairs = D.load_pairs(a.data_dir, a.split)
        t0 = time.perf_counter()
        tr.translate_batch([s for s, _ in pairs], batch_size=a.batch_size)
        secs = time.perf_counter() - t0
        print(f"  greedy {a.split}: {len(pairs)} sentences in {secs:.1f} s = {len(pairs) / secs:.1f} sentences/s "
              f"(batch {a.batch_size}, {cores} threads)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--sentence", default=SENTENCE)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--threads", type=int, default=1, help="torch threads for the single-step timings")
    p.add_argument("--lengths", type=int, nargs="+", default=[30, 60], help="prefix lengths for cache vs no cache")
    p.add_argument("--split", default="test_2016_flickr", help="'' to skip the throughput run")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--batch-size", type=int, default=128)
    bench_decode(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
