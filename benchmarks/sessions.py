"""What the server holds at its session cap (attention_lens.shell.components.SESSIONS_MAX): the app's RSS with that many
started sentences kept, as Gradio keeps each user's state.

    python -m benchmarks.sessions [--sessions N] [--words 15]
    python -m benchmarks.sessions --first-event [--rounds 20]

Starts N sentences with the Start handler (each decoded to its end, as the page does) and keeps every returned
session, then reads the resident set (psutil) against the same process before. Also gives one session's own
tensors and arrays in bytes, for a 15-word and a 60-word sentence. Prints, never asserts.

--first-event: what Gradio does for a user's first event before any handler runs (issue 42): it builds the user's
SessionState, the config of every block of the page (gradio/state_holder.py), on the server's event loop, where
nothing else is served meanwhile; a class pressing Start together pays it once per student, one after another.
Times Gradio's own SessionState and the app's (attention_lens/shell/session_state.py: each block configured when first
read) for the app's page (both shipped models), and Gradio's for a bare page of one textbox.
"""
from __future__ import annotations

import argparse
import gc

import numpy as np
import psutil
import torch

from attention_lens.shell.components import SESSIONS_MAX
from attention_lens.translate import handlers as decoding_views
from transformer.decode.decoding import Translator

TEXT = ("Der alte Mann ging gestern Abend mit seinem kleinen Hund langsam durch den dunklen Park nach Hause und "
         "sah dort viele Kinder die auf der Wiese mit einem roten Ball spielten während ihre Eltern auf den Bänken "
         "saßen und sich über das Wetter den Urlaub und die Arbeit unterhielten bis es dunkel wurde und alle")
WORDS = TEXT.split()


def held_bytes(session) -> int:
    """Bytes of the session's own tensors and arrays (keys/values on the device, attention rows on the host)."""
    n = session.cross_k.nbytes + session.cross_v.nbytes + session.encoder_self.nbytes
    for p in session.positions:
        n += p.k.nbytes + p.v.nbytes + p.hidden.nbytes + p.self_row.nbytes + p.cross_row.nbytes
    return n


def first_event(rounds: int) -> None:
    import time

    import gradio as gr
    from gradio.state_holder import SessionState

    from attention_lens.app import build_demo
    with gr.Blocks() as bare:
        gr.Textbox()
    demo = build_demo([Translator.load("de-en"), Translator.load("en-de")])
    for name, blocks, make in (("the app's page, Gradio's SessionState", demo, SessionState),
                               ("a bare page, Gradio's SessionState", bare, SessionState)):
        make(blocks)
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            make(blocks)
            times.append((time.perf_counter() - t0) * 1e3)
        print(f"{name}: {len(blocks.blocks)} blocks, a new session's state {np.median(times):.2f} ms (median of "
              f"{rounds}; min {min(times):.1f}); 30 students at once: {30 * np.median(times):.0f} ms in a row")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=SESSIONS_MAX)
    p.add_argument("--words", type=int, default=15)
    p.add_argument("--first-event", action="store_true")
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.first_event:
        return first_event(a.rounds)
    tr = Translator.load()
    text = " ".join(WORDS[:a.words]) + "."
    decoding_views.start(tr, text)  # warm
    gc.collect()
    before = psutil.Process().memory_info().rss
    kept = [decoding_views.start(tr, text)[0] for _ in range(a.sessions)]
    gc.collect()
    after = psutil.Process().memory_info().rss
    one = held_bytes(kept[0])
    long_one = held_bytes(decoding_views.start(tr, " ".join(WORDS[:60]) + ".")[0])
    mb = 2 ** 20
    print(f"{a.sessions} sessions of a {a.words}-word sentence ({len(kept[0].positions)} positions): RSS "
          f"{before / mb:.1f} -> {after / mb:.1f} MB (+{(after - before) / mb:.1f} MB, "
          f"{(after - before) / a.sessions / 1e3:.0f} kB a session)")
    print(f"one session's own tensors and arrays: {one / 1e3:.0f} kB ({a.words} words), {long_one / 1e3:.0f} kB "
          f"(60 words); at the cap of {SESSIONS_MAX} sessions of 60 words: {SESSIONS_MAX * long_one / mb:.0f} MB")
    return np.array([before, after])


if __name__ == "__main__":
    main()
