"""python -m benchmarks.decode [--device auto|cpu|cuda] [--threads 1] [--split test_2016_flickr]
python -m benchmarks.decode --checkpoint DIR|hf:owner/name     (a Hugging Face encoder-decoder: needs '.[hf]')
python -m benchmarks.decode --opus-shape DIR                   (builds a random OPUS-MT-shaped MarianMT into DIR)
python -m benchmarks.decode --opus-shape DIR --first-load      (the first load of it and of ours, fresh processes)

Step latency of decoding as the app runs it (a captured session step), each kind of step timed inside its
own token-by-token loop (KV cache captured / uncaptured, recomputing the prefix), and greedy test-set
throughput. For a Hugging Face model (transformer/hf): a Start of the 15-word sentence (the app's whole greedy
trajectory, every map captured) on it against the same on our shipped model, in the same run, as a ratio; the
Hugging Face model decodes as many positions as ours did. With --first-load: opening the model as the launcher
opens `--checkpoint` (load_hf of the folder, `transformers` imported then, against Translator.load of our shipped
checkpoint), each in a fresh Python process, alternating, and its first Start (17 positions). Prints figures;
asserts nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
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


def bench_start(a):
    """A Start (Translator.trajectory's decoding, every map captured) of the sentence on a Hugging Face model and on
    our shipped model, alternating, repeats times; the medians and their ratio."""
    from transformer.hf import load_hf
    torch.set_num_threads(a.threads)  # as the app runs a CPU's steps
    hf, ours = load_hf(a.checkpoint, a.device), Translator.load(None, a.device)
    n = len(ours.decode(a.sentence).positions)  # the positions our model decodes: the other decodes as many

    def start(tr):
        t0 = time.perf_counter()
        s = tr.start_ids(tr.source_ids(a.sentence))
        s.base_limit = n - 1  # greedy decoding stops there
        s.run().trajectory(20)
        return time.perf_counter() - t0, len(s.positions)

    times = {"ours": [], "hf": []}
    for r in range(a.repeats + 1):
        for name, tr in (("ours", ours), ("hf", hf)):
            secs, positions = start(tr)
            if r:  # the first round warms up
                times[name].append(secs)
    c = hf.config
    print(f"sentence: {a.sentence!r} ({len(a.sentence.split())} words); {a.threads} thread(s), device {hf.device}")
    print(f"  ours ({ours.key}, {ours.model.num_parameters() / 1e6:.1f}M parameters): Start {ms(times['ours'])}, "
          f"{n} positions")
    print(f"  {hf.key} ({c.n_encoder_layers}+{c.n_decoder_layers} layers, d {c.d_model}, {c.n_heads} heads, "
          f"{c.vocab_size} pieces, {hf.model.num_parameters() / 1e6:.1f}M parameters): Start {ms(times['hf'])}, "
          f"{positions} positions")
    print(f"  ratio (median): {statistics.median(times['hf']) / statistics.median(times['ours']):.2f}x ours")


# one first load in a fresh process, as attention_lens/launch.py loads a --checkpoint: imports, the model, a first
# Start of the sentence capped at FIRST_POSITIONS positions (what ours decodes for it: a model with random weights
# would otherwise decode to its length limit); seconds since the process started its Python code
FIRST_LOAD = """
import json, sys, time
t0 = time.perf_counter()
from transformer.decode.decoding import Translator
from transformer.hf import is_hf_checkpoint, load_hf
from transformer.model.checkpoint import find_checkpoints
t1 = time.perf_counter()
path, device = sys.argv[1] or None, sys.argv[2]
if path is not None and is_hf_checkpoint(path):
    tr = load_hf(path, device)
else:
    tr = Translator.load(find_checkpoints([path] if path else None)[0], device)
t2 = time.perf_counter()
s = tr.start_ids(tr.source_ids(sys.argv[3]))
s.base_limit = int(sys.argv[4]) - 1  # greedy decoding stops there
s.run().trajectory(20)
t3 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "load": t2 - t1, "first": t3 - t2}))
"""


FIRST_POSITIONS = 17


def first_load(path, a) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FIRST_LOAD, path or "", a.device, a.sentence, str(FIRST_POSITIONS)],
                         check=True, capture_output=True, text=True)
    times = json.loads(out.stdout.strip().splitlines()[-1])
    times["process"] = time.perf_counter() - t0  # the interpreter's start and torch's import included
    return times


def bench_first_load(a):
    """Fresh processes opening the Hugging Face model and ours, alternating, repeats times each; medians and ratios."""
    runs = {"ours": [], "hf": []}
    for _ in range(a.repeats):
        for name, path in (("ours", None), ("hf", a.checkpoint)):
            runs[name].append(first_load(path, a))
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in runs.items()}
    print(f"first load in a fresh process, {a.repeats} each, alternating; device {a.device}; medians:")
    for name, label in (("ours", "ours (checkpoints/de-en)"), ("hf", a.checkpoint)):
        m = med[name]
        print(f"  {label}: imports {m['imports']:.2f} s, model loaded {m['load']:.2f} s, first Start "
              f"({FIRST_POSITIONS} positions) {m['first']:.2f} s; whole process {m['process']:.2f} s")
    print(f"  ratio (hf / ours): model loaded {med['hf']['load'] / med['ours']['load']:.1f}x, "
          f"whole process {med['hf']['process'] / med['ours']['process']:.2f}x")


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
    p.add_argument("--opus-shape", metavar="DIR", default=None,
                   help="build a MarianMT of OPUS-MT's shape (6+6 layers, d 512, 8 heads, FFN 2048, 58101 pieces, "
                        "random weights) into DIR and time a Start on it against ours")
    p.add_argument("--first-load", action="store_true",
                   help="time opening --checkpoint (or --opus-shape) in fresh processes against ours")
    a = p.parse_args(argv)
    if a.opus_shape:
        from tests.hf_models import marian_folder
        a.checkpoint = str(marian_folder(a.opus_shape, d_model=512, heads=8, layers=(6, 6), ffn=2048, entries=58101,
                                         max_len=512))
    from transformer.hf import is_hf_checkpoint
    if a.first_load:
        bench_first_load(a)
    elif a.checkpoint is not None and is_hf_checkpoint(a.checkpoint):
        bench_start(a)
    else:
        bench_decode(a)


if __name__ == "__main__":
    sys.exit(main())
