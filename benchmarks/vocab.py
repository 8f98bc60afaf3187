"""python -m benchmarks.vocab [--sizes 8000 12000 16000]

The tokenizer's vocabulary size by measurement: a joint SentencePiece model trained on what the recipe trains
it on (Tatoeba's training part + Multi30k train) for each size, and the mean pieces per sentence on both
validation sets (shorter sequences cost less per sentence; a larger vocabulary costs a larger output layer).
Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import time

from transformer.model.tokenizer import Tokenizer
from transformer.train import corpus as C
from transformer.train import data as D


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[8000, 12000, 16000])
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA))
    a = p.parse_args(argv)
    sp = C.tatoeba_split(a.tatoeba, a.data_dir)
    sentences = [s for pair in D.load_pairs(a.data_dir, "train") + sp.train for s in pair]
    val = {"tatoeba_val": sp.val, "multi30k val": D.load_pairs(a.data_dir, "val")}
    for size in a.sizes:
        t0 = time.time()
        tok = Tokenizer.train(sentences, size)
        row = [f"vocab {size} (trained in {time.time() - t0:.0f} s)"]
        for name, pairs in val.items():
            de = statistics.mean(len(tok.encode(d)) for d, _ in pairs)
            en = statistics.mean(len(tok.encode(e)) for _, e in pairs)
            row.append(f"{name}: German {de:.2f}, English {en:.2f} pieces a sentence")
        row.append("'Ich habe heute keine Zeit.' -> " + " ".join(tok.encode_pieces("Ich habe heute keine Zeit.")))
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
