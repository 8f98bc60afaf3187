"""python -m transformer.translate "Ein Hund rennt." [--checkpoint DIR|de-en|en-de] [--device auto|cpu|cuda]

Translates each argument (or each line of standard input when none is given) with greedy decoding. A line that
looks like another language than the model reads, or that it can barely read, is said on standard error
(transformer.decode.language.hint), and so is every caveat on the translation (transformer.decode.caveats: longer than
what
the model learned from, repeating itself, unknown characters); it is translated all the same. Its help, notes and
errors are German when the locale is (LANG=de_DE.UTF-8: transformer/decode/cli_words.py); the translation is the
model's.
"""
from __future__ import annotations

import argparse
import sys

from ..model.checkpoint import CheckpointError
from .cli_words import cli_lang, said, said_note
from .decoding import Translator
from .language import hint


def main(argv=None, env=None):
    lang = cli_lang(env)  # the locale's language: LANG=de_DE.UTF-8 -> German words (the library's errors stay English)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + "\n\n" + said("description", lang),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="*", help=said("usage_text", lang))
    p.add_argument("--checkpoint", default=None, help=said("usage_checkpoint", lang))
    p.add_argument("--device", default="auto", help=said("usage_device", lang))
    a = p.parse_args(argv)
    try:
        tr = Translator.load(a.checkpoint, a.device)
    except (CheckpointError, ValueError) as e:
        sys.exit(said("error", lang, text=e))
    lines = a.text or [l for l in sys.stdin.read().splitlines() if l.strip()]
    status = 0
    for line in lines:
        found, src_lang = hint(line, tr.config.src_lang, tr.tokenizer), tr.config.src_lang
        notes = [found["message"]] if found else []  # the library's words (English): what it cut is added to them
        shown = [said_note(found, src_lang, lang, "hint")] if found else []
        try:
            src = tr.source_ids(line, notes)  # + what was cut
            out = tr.translate_ids([src])[0]
        except ValueError as e:
            for note in shown + notes[len(shown):]:
                print(said("note", lang, text=note), file=sys.stderr)
            message = said("empty", lang) if str(e) == said("empty") else e
            print(said("error", lang, text=message), file=sys.stderr)
            status = 1
            continue
        shown += notes[len(shown):] + [said_note(c, src_lang, lang) for c in tr.caveats(line, src, out)
                                       if c["message"] not in notes]
        for note in shown:
            print(said("note", lang, text=note), file=sys.stderr)
        print(tr.tokenizer.decode(out))
    return status


if __name__ == "__main__":
    sys.exit(main())
