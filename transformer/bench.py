"""Benchmarks that print figures (never assertions):

  python -m transformer.bench train   [--steps 20]   tokens/s of our model vs torch.nn.Transformer, same batches
  python -m transformer.bench decode                 step latency (captured / uncaptured / no cache) + test-set throughput
  python -m transformer.bench ui                     click-to-drawn latency in headless Chromium (see bench_ui.py)
  python -m transformer.bench load                   concurrent gradio_client sessions (see bench_load.py)
"""
from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import time

import torch
from torch import nn

from . import data as D


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q / 100 * len(xs))) - 1)]


class TorchReference(nn.Module):
    """nn.Transformer with the same embedding, positions, tied projection and size as ours."""

    def __init__(self, cfg):
        super().__init__()
        from .layers import SinusoidalPositions
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.positions = SinusoidalPositions(cfg.d_model, cfg.max_len)
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff,
                                   cfg.dropout, batch_first=True, norm_first=True)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, src, tgt):
        e = lambda x: self.drop(self.embed(x) * math.sqrt(self.cfg.d_model) + self.positions(x.size(1)))
        T = tgt.size(1)
        h = self.core(e(src), e(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
                      src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0,
                      tgt_is_causal=True)
        return h @ self.embed.weight.t()


def bench_train(a):
    from .config import ModelConfig
    from .model import Transformer
    from .tokenizer import Tokenizer
    from .train import encode_pairs, loss_fn, make_tensors
    torch.manual_seed(0)
    pairs = D.load_pairs(a.data_dir, "train")[:6000]
    tok = Tokenizer.train([s for p in pairs for s in p], 8000)
    cfg = ModelConfig(vocab_size=len(tok))
    ex = encode_pairs(tok, pairs, cfg.max_len)
    batches = D.make_batches([(len(s), len(t) + 1) for s, t in ex], a.max_tokens, seed=0)[:a.steps + 2]
    tensors = [make_tensors(ex, b, 0, 2, 3, "cpu") for b in batches]
    models = {"ours": Transformer(cfg), "nn.Transformer": TorchReference(cfg)}
    results = {name: [] for name in models}
    print(f"{sum(p.numel() for p in models['ours'].parameters()):,} vs "
          f"{sum(p.numel() for p in models['nn.Transformer'].parameters()):,} parameters; "
          f"{a.steps} steps of <= {a.max_tokens} tokens; {torch.get_num_threads()} threads", flush=True)
    opts = {n: torch.optim.AdamW(m.parameters(), lr=1e-4) for n, m in models.items()}
    for round_ in range(a.rounds):  # interleave the two models so load changes hit both alike
        for name, model in models.items():
            model.train()
            ntok, t0 = 0, None
            for i, (s, ti, to) in enumerate(tensors):
                if i == 2:
                    t0, ntok = time.perf_counter(), 0
                loss = loss_fn(model(s, ti), to, 0, 0.1) / (to != 0).sum()
                opts[name].zero_grad()
                loss.backward()
                opts[name].step()
                ntok += int((s != 0).sum() + (to != 0).sum())
            results[name].append(ntok / (time.perf_counter() - t0))
    for name, xs in results.items():
        print(f"  {name:15s} {statistics.median(xs):8.0f} tokens/s (median of {len(xs)} rounds: "
              f"{', '.join(f'{x:.0f}' for x in xs)})")


def bench_decode(a):
    from .capture import AttentionRecorder
    from .decoding import Translator
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
    ms = lambda xs: f"median {statistics.median(xs) * 1e3:6.2f} ms, p95 {pct(xs, 95) * 1e3:6.2f} ms"
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
        at = lambda name: [times[i] for times in runs[name] for i in range(max(0, n - 3), min(n_max, n))]
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
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    t.add_argument("--steps", type=int, default=15)
    t.add_argument("--rounds", type=int, default=3)
    t.add_argument("--max-tokens", type=int, default=3500)
    d = sub.add_parser("decode")
    d.add_argument("--checkpoint", default=None)
    d.add_argument("--device", default="auto")
    d.add_argument("--sentence", default="Ein kleines Mädchen in einem rosa Kleid klettert die Treppe zu einem "
                                         "hölzernen Spielhaus hinauf.")
    d.add_argument("--repeats", type=int, default=10)
    d.add_argument("--threads", type=int, default=1, help="torch threads for the single-step timings")
    d.add_argument("--lengths", type=int, nargs="+", default=[30, 60], help="prefix lengths for cache vs no cache")
    d.add_argument("--split", default="test_2016_flickr", help="'' to skip the throughput run")
    d.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    d.add_argument("--batch-size", type=int, default=128)
    for name in ("ui", "load"):
        sub.add_parser(name, add_help=False)
    a, rest = p.parse_known_args(argv)
    if a.what == "train":
        bench_train(a)
    elif a.what == "decode":
        bench_decode(a)
    elif a.what == "ui":
        from . import bench_ui
        return bench_ui.main(rest)
    elif a.what == "load":
        from . import bench_load
        return bench_load.main(rest)


if __name__ == "__main__":
    sys.exit(main())
