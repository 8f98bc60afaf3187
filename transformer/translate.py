"""python -m transformer.translate "Ein Hund rennt." [--checkpoint DIR|de-en|en-de] [--device auto|cpu|cuda]

Translates each argument (or each line of standard input when none is given) with greedy decoding. A line that
looks like another language than the model reads, or that it can barely read, is said on standard error
(transformer.language.hint), and so is every caveat on the translation (transformer.caveats: longer than what
the model learned from, repeating itself, unknown characters); it is translated all the same.
"""
from __future__ import annotations

import argparse
import sys

from .checkpoint import CheckpointError
from .decoding import Translator
from .language import hint


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="*", help="sentences in the model's source language; read from stdin when absent")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint directory, or a shipped model's name: de-en (the default), en-de")
    p.add_argument("--device", default="auto")
    a = p.parse_args(argv)
    try:
        tr = Translator.load(a.checkpoint, a.device)
    except (CheckpointError, ValueError) as e:
        sys.exit(f"error: {e}")
    lines = a.text or [l for l in sys.stdin.read().splitlines() if l.strip()]
    status = 0
    for line in lines:
        found = hint(line, tr.config.src_lang, tr.tokenizer)
        said = [found["message"]] if found else []
        try:
            src = tr.source_ids(line, said)  # + what was cut
            out = tr.translate_ids([src])[0]
        except ValueError as e:
            for note in said:
                print(f"note: {note}", file=sys.stderr)
            print(f"error: {e}", file=sys.stderr)
            status = 1
            continue
        said += [c["message"] for c in tr.caveats(line, src, out) if c["message"] not in said]
        for note in said:
            print(f"note: {note}", file=sys.stderr)
        print(tr.tokenizer.decode(out))
    return status


if __name__ == "__main__":
    sys.exit(main())
