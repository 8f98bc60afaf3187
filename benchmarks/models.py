"""What a second model costs in memory: the app's resident set with one model and with two.

    python -m benchmarks.models [--checkpoint DIR ...]

Each count runs in a fresh process (so one does not inherit the other's freed memory): set the allocator up as app.py
does, import the app, load the
models, build the page (attention_lens.build_demo, as app.py does), then read the resident set (psutil). The difference
is set beside the second model's own weights (its parameters in float32, as they sit in memory once loaded) and its
tokenizer file. Prints, never asserts.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys

from transformer.model.checkpoint import find_checkpoints

CHILD = r"""
from attention_lens.shell import memory
memory.tune_allocator()  # first, as app.py does
import gc, json, sys, psutil, torch
torch.set_num_threads(1)
from transformer.decode.decoding import Translator
from attention_lens.app import build_demo
paths = json.loads(sys.argv[1])
trs = [Translator.load(p, "cpu") for p in paths]
build_demo(trs)
gc.collect()
weights = sum(p.numel() * p.element_size() for p in trs[-1].model.parameters())
print(json.dumps({"rss": psutil.Process().memory_info().rss, "last_weights": weights}))
"""


def measure(paths) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([str(p) for p in paths])], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", action="append", default=None, help="the models (default: every shipped one)")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    paths = find_checkpoints(a.checkpoint)
    if len(paths) < 2:
        sys.exit("needs two models (e.g. --checkpoint checkpoints/de-en --checkpoint checkpoints/en-de)")
    print(f"machine: {platform.machine()}, {platform.processor() or '?'}; python {platform.python_version()}")
    one, two = [], []
    for _ in range(a.repeat):  # alternate, so that drift of the machine touches both
        one.append(measure(paths[:1]))
        two.append(measure(paths[:2]))
    mb = lambda x: x / 2 ** 20
    r1, r2 = sorted(m["rss"] for m in one), sorted(m["rss"] for m in two)
    weights = two[0]["last_weights"]
    tok = (paths[1] / "tokenizer.model").stat().st_size
    print(f"one model  ({paths[0].name}): RSS {', '.join(f'{mb(x):.1f}' for x in r1)} MB")
    print(f"two models (+{paths[1].name}): RSS {', '.join(f'{mb(x):.1f}' for x in r2)} MB")
    delta = mb(r2[len(r2) // 2] - r1[len(r1) // 2])
    print(f"the second model costs {delta:.1f} MB (medians); its weights are {mb(weights):.1f} MB in float32, "
          f"its tokenizer file {tok / 1e3:.0f} kB: {delta / mb(weights):.2f}x its weights")


if __name__ == "__main__":
    main()
