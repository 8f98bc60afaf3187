"""python -m transformer.evaluate --checkpoint checkpoints/de-en --split test_2016_flickr

Greedy-decodes a split and prints sacreBLEU (cased and lowercased), chrF and decoding speed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from . import corpus as C
from . import data as D
from .checkpoint import DEFAULT_CHECKPOINT, CheckpointError
from .decoding import Translator
from .device import describe
from .metrics import bleu, chrf, update_metrics


def load_model_and_split(checkpoint, device, data_dir, split, threads: int = 0,
                         tatoeba=C.DEFAULT_TATOEBA) -> tuple[Translator, list]:
    """The command-line tools' common start: torch threads, the checkpoint's Translator and the pairs of any
    split of `corpus.ALL_SPLITS` (Multi30k's from data_dir; Tatoeba's and mixed_val also read `tatoeba`);
    exits with a one-line message when either cannot be read."""
    if threads:
        torch.set_num_threads(threads)
    try:
        return Translator.load(checkpoint, device), C.load_split(split, data_dir, tatoeba)
    except (CheckpointError, D.DataError, ValueError) as e:
        sys.exit(f"error: {e}")


def evaluate(translator: Translator, pairs, batch_size: int = 128, beam: int = 1) -> dict:
    srcs, refs = [s for s, _ in pairs], [t for _, t in pairs]
    t0 = time.perf_counter()
    if beam > 1:
        from .beam import beam_translate_batch
        hyps = beam_translate_batch(translator, srcs, beam, batch_size=max(1, batch_size // beam))
    else:
        hyps = translator.translate_batch(srcs, batch_size=batch_size)
    secs = time.perf_counter() - t0
    n_tokens = sum(len(translator.tokenizer.encode(h)) + 1 for h in hyps)
    return {**bleu(hyps, refs), "chrf": chrf(hyps, refs),
            "sentences": len(hyps), "seconds": round(secs, 2),
            "sentences_per_s": round(len(hyps) / secs, 1), "tokens_per_s": round(n_tokens / secs),
            "hypotheses": hyps}


def translate_bleu(model, tok, val_sets: dict, device) -> dict:
    """Greedy-translate each domain's validation sources with the current weights; BLEU against their targets.
    {"bleu", "bleu_lc"}: the mean over the domains (what averaging and the log compare), plus each domain's
    as "bleu_<domain>" / "bleu_lc_<domain>". How transformer.train scores an epoch and transformer.average a
    window of epochs."""
    tr = Translator(model.eval(), tok, device)
    out = {}
    for name, pairs in val_sets.items():
        b = bleu(tr.translate_batch([s for s, _ in pairs], batch_size=128), [t for _, t in pairs])
        out[f"bleu_{name}"], out[f"bleu_lc_{name}"] = b["bleu"], b["bleu_lc"]
    for key in ("bleu", "bleu_lc"):
        out[key] = round(sum(out[f"{key}_{n}"] for n in val_sets) / len(val_sets), 2)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--split", default="test_2016_flickr", choices=C.ALL_SPLITS,
                   help="a Multi30k split, tatoeba_val / tatoeba_test (transformer.corpus), or mixed_val")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA), help="the Tatoeba file (tatoeba_* and mixed_val)")
    p.add_argument("--device", default="auto")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--save", action="store_true", help="record the scores in the checkpoint's metrics.json")
    p.add_argument("--output", help="write the hypotheses to this file")
    a = p.parse_args(argv)
    tr, pairs = load_model_and_split(a.checkpoint, a.device, a.data_dir, a.split, a.threads, a.tatoeba)
    r = evaluate(tr, pairs, a.batch_size, a.beam)
    hyps = r.pop("hypotheses")
    mode = "greedy" if a.beam == 1 else f"beam {a.beam}"
    print(f"{a.split} ({r['sentences']} sentences, {mode}, {describe(tr.device)})")
    print(f"  sacreBLEU (cased)      {r['bleu']:.2f}")
    print(f"  sacreBLEU (lowercased) {r['bleu_lc']:.2f}")
    print(f"  chrF                   {r['chrf']:.2f}")
    print(f"  speed                  {r['sentences_per_s']} sentences/s, {r['tokens_per_s']} tokens/s "
          f"({r['seconds']} s, batch {a.batch_size})")
    if a.output:
        Path(a.output).write_text("\n".join(hyps) + "\n")
    if a.save:
        update_metrics(a.checkpoint, {"test": {f"{a.split}/{'greedy' if a.beam == 1 else f'beam{a.beam}'}": r}})
    return r


if __name__ == "__main__":
    main()
