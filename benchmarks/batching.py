"""Batched against alone (transformer/decode/batching.py): what a batch changes in the answers, and what keeping a
batch's cache from pass to pass saves.

    python -m benchmarks.batching [--model de-en] [--sentences 300] [--rows 32] [--rounds 3]
                                [--data-dir DIR]

--sentences sentences of Multi30k's test set (in the model's source language; a few fixed ones when it is not there)
decoded greedily alone, one session at a time, and in batches of --rows (`session.decode`, as a Batcher runs them), on
the CPU, one thread. Prints:
- how many sessions get other pieces in a batch than alone;
- the largest relative difference of a batched row from the same row alone (final states, keys, values, attention
  rows, next-piece probabilities; relative to the largest magnitude, at least 1): what step.TOLERANCE bounds;
- the largest difference of a logit batched against alone, and the closest two best logits of any row alone: a
  batch can choose another piece than alone only at a row whose two best logits lie closer than that difference;
- the thread's CPU seconds and the wall seconds per batch, with each batch's cache kept from one pass to the next
  (`step.Rows.keep`) and with it built again from the sessions' positions at every pass, in interleaved rounds.
Prints, never asserts.
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from transformer.decode import step
from transformer.decode.decoding import Translator
from transformer.decode.session import decode
from transformer.train import data as D

from .classroom import FALLBACK, machine


def sentences(tr, n: int, data_dir: Path) -> list[str]:
    """n test sentences in the model's source language, or the fixed ones numbered when the corpus is not here."""
    path = data_dir / f"test_2016_flickr.{tr.config.src_lang}.gz"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        lines = []
    pool = FALLBACK["de-en" if tr.config.src_lang == "de" else "en-de"]
    while len(lines) < n:
        lines.append(f"{pool[len(lines) % 2][:-1]} {len(lines)}.")
    return lines[:n]


def gap(a, b) -> float:
    """The largest difference of two tensors or arrays, relative to the largest magnitude in the first (at least 1)."""
    a, b = (np.asarray(x.float().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64) for x in (a, b))
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(a).max())))


def compare(tr, alone, batched) -> dict:
    """Pieces, rows and logits of the batched sessions against the same sessions alone."""
    out = {"differ": 0, "gap": 0.0, "logit_diff": 0.0, "margin": float("inf"), "rows": 0}
    for a, b in zip(alone, batched):
        if a.target_ids != b.target_ids:
            out["differ"] += 1
            continue
        for p, q in zip(a.positions, b.positions):
            out["gap"] = max(out["gap"], *(gap(getattr(p, f), getattr(q, f))
                                           for f in ("hidden", "k", "v", "self_row", "cross_row")))
        out["gap"] = max(out["gap"], gap(a.history_probs(), b.history_probs()))
        with torch.inference_mode():
            la = tr.model.project(torch.stack([p.hidden for p in a.positions]))  # (T, V)
            lb = tr.model.project(torch.stack([p.hidden for p in b.positions]))
        out["logit_diff"] = max(out["logit_diff"], float((la - lb).abs().max()))
        top = la.topk(2, dim=-1).values  # (T, 2)
        out["margin"] = min(out["margin"], float((top[:, 0] - top[:, 1]).min()))
        out["rows"] += len(a.positions)
    return out


def timed(tr, ids: list[list[int]], rows: int, kept: bool) -> list[tuple[float, float]]:
    """(thread CPU s, wall s) of each batch of `rows` sessions decoded to the end; `kept`: the batch's cache kept
    from pass to pass (else built again from the sessions' positions at every pass)."""
    holds = step.Rows.holds
    if not kept:
        step.Rows.holds = lambda self, sessions: False
    try:
        out = []
        for b in range(0, len(ids), rows):
            sessions = [tr.start_ids(x, first=False) for x in ids[b:b + rows]]
            c, w = time.thread_time(), time.perf_counter()
            decode(sessions)
            out.append((time.thread_time() - c, time.perf_counter() - w))
        return out
    finally:
        step.Rows.holds = holds


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="de-en")
    ap.add_argument("--sentences", type=int, default=300)
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=D.DEFAULT_DATA_DIR)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)  # as the app's batcher runs
    tr = Translator.load(a.model, device="cpu")
    ids = [tr.source_ids(t) for t in sentences(tr, a.sentences, a.data_dir)]
    print(f"{a.model}: {len(ids)} sentences, batches of {a.rows}; {machine()}")
    alone = [tr.start_ids(x).run() for x in ids]
    batched = [tr.start_ids(x, first=False) for x in ids]
    for b in range(0, len(ids), a.rows):
        decode(batched[b:b + a.rows])
    c = compare(tr, alone, batched)
    print(f"sessions with other pieces batched than alone: {c['differ']} of {len(ids)}")
    print(f"largest relative difference of a batched row ({c['rows']} rows): {c['gap']:.2e} "
          f"(step.TOLERANCE {step.TOLERANCE:g})")
    print(f"largest logit difference batched vs alone: {c['logit_diff']:.2e}; closest two best logits of a row: "
          f"{c['margin']:.2e}")
    ways = {True: [], False: []}
    for _ in range(a.rounds):
        for kept in (True, False):
            ways[kept] += timed(tr, ids[:2 * a.rows], a.rows, kept)
    for kept, xs in ways.items():
        cpu, wall = [x for x, _ in xs], [w for _, w in xs]
        print(f"cache {'kept from pass to pass' if kept else 'built again each pass'}: per batch of {a.rows}, "
              f"CPU median {statistics.median(cpu):.3f} s (min {min(cpu):.3f}), wall median "
              f"{statistics.median(wall):.3f} s (min {min(wall):.3f}), {len(xs)} batches")


if __name__ == "__main__":
    main()
