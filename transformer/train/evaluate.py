"""python -m transformer.evaluate --checkpoint checkpoints/de-en --split test_2016_flickr

Greedy-decodes a split and prints sacreBLEU (cased and lowercased), chrF and decoding speed.
"""
from __future__ import annotations

import argparse
import sys
import time
import unicodedata
from pathlib import Path

import torch

from ..decode.decoding import Translator
from ..model.checkpoint import DEFAULT_CHECKPOINT, CheckpointError
from ..model.device import describe
from ..model.metrics import bleu, chrf, update_metrics
from . import corpus as C
from . import data as D


def load_model_and_split(checkpoint, device, data_dir, split, threads: int = 0,
                         tatoeba=C.DEFAULT_TATOEBA) -> tuple[Translator, list]:
    """The command-line tools' common start: torch threads, the checkpoint's Translator and the pairs of any
    split of `corpus.ALL_SPLITS` (Multi30k's from data_dir; Tatoeba's and mixed_val also read `tatoeba`);
    exits with a one-line message when either cannot be read."""
    if threads:
        torch.set_num_threads(threads)
    try:
        tr = Translator.load(checkpoint, device)
        c = tr.config
        return tr, C.load_split(split, data_dir, tatoeba, c.src_lang, c.tgt_lang)  # in the model's direction
    except (CheckpointError, D.DataError, ValueError) as e:
        sys.exit(f"error: {e}")


LONG_WORDS = 8  # "what people type": the held-out sentences of at least this many source words
LENGTH_BUCKETS = ((1, 5), (6, 8), (9, 12), (13, None))  # source words; the last is open-ended ("13+ words")
JOINED = 500  # --subsets also scores this many joins of 2 of the split's pairs (seed 0): longer held-out inputs


def bucket_name(lo: int, hi: int | None) -> str:
    return f"{lo}+ words" if hi is None else f"{lo}-{hi} words"


def match_key(text: str) -> str:
    """A sentence compared as the `unseen` subset compares it: lowercased, punctuation removed, spaces collapsed."""
    return " ".join("".join(ch for ch in text.casefold() if not unicodedata.category(ch).startswith("P")).split())


def subsets(pairs, train_pairs) -> dict[str, list[int]]:
    """Indices of `pairs` in the subsets the honest figures report: every pair; those whose source has at least
    LONG_WORDS words; those whose source (match_key) occurs as no training pair's source; and those of each
    LENGTH_BUCKETS range of source words (1-5, 6-8, 9-12, 13+)."""
    seen = {match_key(s) for s, _ in train_pairs}
    words = [len(s.split()) for s, _ in pairs]
    return {"all": list(range(len(pairs))),
            f"{LONG_WORDS}+ words": [i for i, n in enumerate(words) if n >= LONG_WORDS],
            "unseen": [i for i, (s, _) in enumerate(pairs) if match_key(s) not in seen],
            **{bucket_name(lo, hi): [i for i, n in enumerate(words) if n >= lo and (hi is None or n <= hi)]
               for lo, hi in LENGTH_BUCKETS}}


def subset_scores(pairs, hyps, train_pairs) -> dict[str, dict]:
    """BLEU (cased, lowercased) and chrF on each subset of `subsets`, from one decoding's hypotheses."""
    out = {}
    for name, idx in subsets(pairs, train_pairs).items():
        h, r = [hyps[i] for i in idx], [pairs[i][1] for i in idx]
        out[name] = {"sentences": len(idx), **(bleu(h, r) if idx else {}), **({"chrf": chrf(h, r)} if idx else {})}
    return out


def evaluate(translator: Translator, pairs, batch_size: int = 128, beam: int = 1) -> dict:
    srcs, refs = [s for s, _ in pairs], [t for _, t in pairs]
    t0 = time.perf_counter()
    if beam > 1:
        from ..decode.beam import beam_translate_batch
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
    as "bleu_<domain>" / "bleu_lc_<domain>". How transformer.train.train scores an epoch and transformer.train.average a
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
                   help="a Multi30k split, tatoeba_val / tatoeba_test (transformer.train.corpus), or mixed_val")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA),
                   help="the Tatoeba file (tatoeba_* and mixed_val; 'none': --subsets counts Multi30k train alone as "
                        "seen)")
    p.add_argument("--device", default="auto")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--save", action="store_true", help="record the scores in the checkpoint's metrics.json")
    p.add_argument("--output", help="write the hypotheses to this file")
    p.add_argument("--subsets", action="store_true",
                   help=f"also score the sentences of {LONG_WORDS}+ words, those whose source (lowercased, "
                        "punctuation removed) occurs in no training pair (Tatoeba's training part + Multi30k train), "
                        "those of 1-5, 6-8, 9-12 and 13+ source words, and "
                        f"{JOINED} joins of 2 of the split's pairs ('joined': never trained on)")
    p.add_argument("--concat", type=int, default=0, metavar="N",
                   help="score N concatenations of 2-3 of the split's pairs instead (seed 0: the same every time): "
                        "inputs longer than the split has, every part of them held out as the split is")
    a = p.parse_args(argv)
    tr, pairs = load_model_and_split(a.checkpoint, a.device, a.data_dir, a.split, a.threads, a.tatoeba)
    if a.concat:
        pairs = C.concatenations(pairs, a.concat, seed=0)
    r = evaluate(tr, pairs, a.batch_size, a.beam)
    hyps = r.pop("hypotheses")
    mode = "greedy" if a.beam == 1 else f"beam {a.beam}"
    split = f"{a.split}, {a.concat} concatenations of 2-3 pairs" if a.concat else a.split
    print(f"{split} ({r['sentences']} sentences, {mode}, {describe(tr.device)})")
    print(f"  sacreBLEU (cased)      {r['bleu']:.2f}")
    print(f"  sacreBLEU (lowercased) {r['bleu_lc']:.2f}")
    print(f"  chrF                   {r['chrf']:.2f}")
    print(f"  speed                  {r['sentences_per_s']} sentences/s, {r['tokens_per_s']} tokens/s "
          f"({r['seconds']} s, batch {a.batch_size})")
    if a.subsets:
        c = tr.config
        train = (([] if a.tatoeba == "none" else C.load_split("tatoeba_train", a.data_dir, a.tatoeba, c.src_lang,
                                                               c.tgt_lang))
                 + D.load_pairs(a.data_dir, "train", c.src_lang, c.tgt_lang))
        r["subsets"] = subset_scores(pairs, hyps, train)
        if not a.concat:  # and joins of 2 held-out pairs: inputs longer than the split has, none trained on
            joined = C.concatenations(pairs, JOINED, seed=0, sizes=(2,))
            jr = evaluate(tr, joined, a.batch_size, a.beam) if joined else {}
            r["subsets"]["joined"] = ({"sentences": len(joined), "bleu": jr["bleu"], "bleu_lc": jr["bleu_lc"],
                                       "chrf": jr["chrf"]} if joined else {"sentences": 0})
        for name, s in r["subsets"].items():
            if s["sentences"]:
                print(f"  {name:<12} {s['sentences']:>5} sentences: BLEU {s['bleu']:.2f} cased, "
                      f"{s['bleu_lc']:.2f} lowercased, chrF {s['chrf']:.2f}")
    if a.output:
        Path(a.output).write_text("\n".join(hyps) + "\n")
    if a.save:
        name = f"{a.split}+concat{a.concat}" if a.concat else a.split
        update_metrics(a.checkpoint, {"test": {f"{name}/{'greedy' if a.beam == 1 else f'beam{a.beam}'}": r}})
    return r


if __name__ == "__main__":
    main()
