"""python -m benchmarks.payload [--checkpoint DIR] [--device auto|cpu|cuda]

How large the Translate tab's Start answer is (the trajectory payload, attention_lens/translate/payload.py, as JSON:
every map of every step, the top-20 after every position, the translations), for a 15-word sentence, a 60-word one, the
longest input the app accepts (2,000 characters, cut to the model's max_len - 1 source pieces), and the worst
case a user can reach: that input decoded to the last target position the session allows (a piece forced
wherever the model would stop, as clicks in the top-k list do). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import time

from attention_lens.translate.handlers import trajectory_outputs
from transformer.decode.decoding import MAX_INPUT_CHARS, Translator

from .decode import SENTENCE as SENTENCE_15
from .inside import SENTENCE_60


def size(session) -> int:
    """Bytes of the Start payload of `session`'s whole history, as JSON."""
    session.goto(0)
    return len(json.dumps(trajectory_outputs(session)[2]))


def to_the_limit(session):
    """Decode to the session's last position: where the model would stop, force its second choice."""
    eos = session.translator.config.eos_id
    while not session.done:
        best, second = [session.translator.tokenizer.piece_id(p) for p, _ in session.topk(2)]
        if best == eos:
            session.force(second)
        else:
            session.step()
    return session


def line(label: str, session, t0: float) -> str:
    return (f"{label}: {len(session.source_ids)} source pieces, {len(session.positions)} target positions: "
            f"{size(session) / 1e3:,.0f} kB ({time.perf_counter() - t0:.1f} s to decode)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    a = p.parse_args(argv)
    tr = Translator.load(a.checkpoint, a.device)
    longest = (SENTENCE_60 + " ") * (MAX_INPUT_CHARS // len(SENTENCE_60) + 1)
    for label, text in [("15 words", SENTENCE_15), ("60 words", SENTENCE_60),
                        (f"longest input ({MAX_INPUT_CHARS:,} characters)", longest)]:
        t0 = time.perf_counter()
        s = tr.start(text).run()
        print(line(label, s, t0))
    if len(s.positions) - 1 < s.limit:  # greedy stopped early: the worst case needs forced pieces
        t0 = time.perf_counter()
        print(line("the longest input decoded to the session's limit", to_the_limit(tr.start(longest)), t0))
    else:
        print("the longest input's greedy decoding already reaches the session's limit: that is the worst case")


if __name__ == "__main__":
    main()
