"""python -m benchmarks.compare --base DIR [--checkpoint checkpoints/de-en] [--rounds 5]

Two checkpoints side by side, in one process, rounds interleaved so that load changes on a shared machine hit
both alike: what a user waits for with each model.
- "captured step": one greedy decoding step with attention captured (DecodingSession.step, as the app runs it);
- "Start": the Translate tab's Start handler (decode the whole sentence with every map captured, top-k of every
  step, the view's payload encoded), the server's part of a click on Start.
Sentences: the app's examples (both domains). Prints medians per round and the ratio checkpoint / base; asserts
nothing.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from transformer.decode.decoding import Translator
from transformer.model.checkpoint import DEFAULT_CHECKPOINT
from transformer.model.device import describe
from transformer.train.data import read_examples


def ms(x: float) -> str:
    return f"{x * 1e3:.2f} ms"


def time_steps(tr: Translator, sentences: list[str]) -> list[float]:
    out = []
    for text in sentences:
        s = tr.start(text)
        while not s.done:
            t0 = time.perf_counter()
            s.step()
            out.append(time.perf_counter() - t0)
    return out


def time_starts(tr: Translator, sentences: list[str]) -> list[float]:
    from attention_lens.translate import handlers as decoding_views
    out = []
    for text in sentences:
        t0 = time.perf_counter()
        decoding_views.start(tr, text)
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--base", required=True, help="the checkpoint to compare against (e.g. a copy of the old one)")
    p.add_argument("--device", default="auto")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the app steps on 1)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    models = {"checkpoint": Translator.load(a.checkpoint, a.device), "base": Translator.load(a.base, a.device)}
    sentences = read_examples()
    for name, tr in models.items():
        print(f"{name}: {a.checkpoint if name == 'checkpoint' else a.base}, {tr.model.num_parameters():,} "
              f"parameters, {describe(tr.device)}")
    for tr in models.values():  # warm-up
        time_steps(tr, sentences[:1]), time_starts(tr, sentences[:1])
    res = {(n, w): [] for n in models for w in ("step", "start")}
    for r in range(a.rounds):
        for name, tr in models.items():
            res[name, "step"].append(statistics.median(time_steps(tr, sentences)))
            res[name, "start"].append(statistics.median(time_starts(tr, sentences)))
        print(f"round {r + 1}: " + ", ".join(f"{n} {w} {ms(res[n, w][-1])}" for n, w in res), flush=True)
    for what in ("step", "start"):
        c, b = statistics.median(res["checkpoint", what]), statistics.median(res["base", what])
        label = "captured step" if what == "step" else "Start (handler)"
        print(f"{label:16s} checkpoint {ms(c)} vs base {ms(b)}: {c / b:.2f}x (median of {a.rounds} rounds, "
              f"each the median over {len(sentences)} sentences)")


if __name__ == "__main__":
    main()
