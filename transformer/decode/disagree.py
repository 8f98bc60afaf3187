"""Where weight and contribution disagree: the query rows, over every head of a decoded sentence, whose
highest-weight key is not their highest-contribution key ‖α_ij v_j W_Oʰ‖ (transformer/interpret/inside.py computes
both).

    python -m transformer.disagree "Ein Hund rennt durch den Schnee."
"""
from __future__ import annotations

import argparse
import sys

from ..interpret.capture import KINDS
from ..interpret.inside import find_disagreements
from .decoding import Translator


def describe(r: dict) -> str:
    (ww, wc), (cw, cc), (nw, nc) = r["weights"], r["contributions"], r["value_norms"]
    return (f"{r['kind']} layer {r['layer']} head {r['head']} (0-based), query row {r['row']} {r['query']!r}: "
            f"highest weight {r['top_weight_key']!r} (weight {ww:.3f}, ‖vW_O‖ {nw:.3f}, contribution {cw:.3f}); "
            f"highest contribution {r['top_contribution_key']!r} (weight {wc:.3f}, ‖vW_O‖ {nc:.3f}, "
            f"contribution {cc:.3f})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="+", help="sentences in the model's source language")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint directory or shipped name, e.g. en-de (default: German -> English)")
    p.add_argument("--device", default="auto")
    p.add_argument("--kind", choices=KINDS, action="append", help="only these kinds (default: all three)")
    p.add_argument("--show", type=int, default=3, help="examples to print per sentence")
    a = p.parse_args(argv)
    tr = Translator.load(a.checkpoint, a.device)
    for text in a.text:
        s = tr.start(text).run()
        found = find_disagreements(s, tuple(a.kind or KINDS))
        print(f"{text}\n  -> {s.translation}\n  {len(found)} query rows where the highest-weight key is not the "
              f"highest-contribution key (all heads, step {s.cursor})")
        for r in found[:a.show]:
            print("  " + describe(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
