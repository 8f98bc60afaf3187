"""What Python's GIL costs a batch, with its step compiled (TorchScript, as served) and run op by op from Python.

    python -m benchmarks.batch_gil [--sentences 15] [--rounds 3] [--modes compiled,Python]

In this process, on one torch thread: the de-en model's batch of N classroom sentences (benchmarks.classroom's),
each begun by `batching.begin_row` and decoded to its end by `run_rows`, timed alone and beside a thread running
pure Python (as the app's event loop and handlers run beside a batch). "Python" runs the very same functions
(`transformer.batch_step`) uncompiled, each of their ~400 torch calls a hand-over of the GIL, as every step was
before they were compiled. Prints the median wall of each, and each beside-a-thread figure as a ratio to alone;
never asserts.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from contextlib import contextmanager


@contextmanager
def busy_python():
    """A thread running pure Python for as long as the block runs."""
    stop = []

    def spin():
        x = 0
        while not stop:
            for i in range(1000):
                x += i
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.append(True)
        thread.join()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.batch_gil", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default="compiled,Python", help="which of compiled, Python to time, in this order")
    a = p.parse_args(argv)
    if a.sentences < 1 or a.rounds < 1 or not set(a.modes.split(",")) <= {"compiled", "Python"}:
        p.error("--sentences and --rounds must be at least 1, --modes of compiled, Python")
    import torch

    from transformer import batch_step
    from transformer.batching import begin_row, run_rows
    from transformer.checkpoint import DEFAULT_CHECKPOINT
    from transformer.decoding import Translator

    from .classroom import machine, sentences
    torch.set_num_threads(1)
    tr = Translator.load(DEFAULT_CHECKPOINT, device="cpu")
    texts = [t for k, t in sentences(2 * a.sentences) if k == "de-en"][:a.sentences]
    ids = [tr.source_ids(t) for t in texts]
    compiled = batch_step.compiled

    def batch() -> float:
        t0 = time.perf_counter()
        run_rows([begin_row(tr, x) for x in ids])
        return time.perf_counter() - t0

    print(f"{a.sentences} sentences decoded in one batch, {a.rounds} rounds each; {machine()}", flush=True)
    try:
        for mode in a.modes.split(","):
            if mode == "Python":  # the same functions, uncompiled: run by Python op by op
                batch_step.compiled = lambda name, weight: getattr(batch_step, name)
            batch()  # warm: compiles, and nothing first-time in the measure
            alone = statistics.median(batch() for _ in range(a.rounds))
            with busy_python():
                beside = statistics.median(batch() for _ in range(a.rounds))
            print(f"{mode:8s}: alone {alone * 1000:7.0f} ms, beside a busy Python thread {beside * 1000:7.0f} ms "
                  f"({beside / alone:.1f}x)", flush=True)
    finally:
        batch_step.compiled = compiled
    return 0


if __name__ == "__main__":
    sys.exit(main())
