"""python -m benchmarks.inside [--checkpoint DIR] [--device auto|cpu|cuda] [--repeats 5]

What opening one head costs ("Inside this head", attention_lens/translate/inside_payload.py): the payload's size as JSON
(one head, every position of the trajectory, plus ‖v W_O‖ of every head for the map's toggle) and the server's time to
make it (DecodingSession.inside with norms, one teacher-forced pass), for a 15-word and a 60-word sentence, every
kind (the size depends on the kind, not on the layer or head). The panel's update on a step is timed in the
browser by `python -m benchmarks.ui`. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from attention_lens.translate.inside_payload import inside_payload
from transformer.decode.decoding import Translator
from transformer.interpret.capture import KINDS

from .decode import SENTENCE as SENTENCE_15  # 15 words

SENTENCE_60 = ("Am frühen Morgen gingen drei junge Männer mit ihren Hunden durch den großen Park, während eine ältere "
               "Frau auf einer Bank saß und die Zeitung las; später trafen sie einen alten Freund, der ihnen von "
               "seiner langen Reise nach Italien erzählte, und sie beschlossen, gemeinsam in einem kleinen Café am "
               "Fluss zu frühstücken, bevor sie abends wieder nach Hause fuhren.")


def measure(tr: Translator, text: str, repeats: int) -> None:
    s = tr.start(text).run()
    print(f"{len(text.split())} words: {len(s.source_ids)} source pieces, {len(s.positions)} target positions")
    for kind in KINDS:
        times, size = [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = inside_payload(s.inside(kind, 0, 0, norms=True), s.target_ids)
            size = len(json.dumps(p))
            times.append(time.perf_counter() - t0)
        print(f"  {kind:13s} one head's payload {size / 1000:6.1f} kB as JSON; server (inside + encoding) "
              f"median {statistics.median(times) * 1e3:.0f} ms (n={repeats})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    tr = Translator.load(a.checkpoint, a.device)
    for text in (SENTENCE_15, SENTENCE_60):
        measure(tr, text, a.repeats)


if __name__ == "__main__":
    main()
