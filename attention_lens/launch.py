"""attention-lens: watch our Transformer translate (German <-> English), one token at a time.

    attention-lens [--host 127.0.0.1] [--port 7860] [--share] [--auth-file FILE]
                   [--checkpoint DIR ...] [--device auto|cpu|cuda] [--session-memory MB] [--data-dir DIR]
                                                                (in a checkout: python app.py ...)

Live classes are kept in --data-dir (default: the environment's ATTENTION_LENS_DATA, else the user's data folder,
~/.local/share/attention-lens on Linux), so that a class outlives a restart of the app (docs/reliability.md).

Logins (needed with --share): --auth-file FILE (one user:password per line), or the environment
variable ATTENTION_LENS_AUTH ("user:password", several separated by commas, or one per line as in the file
for a password with a comma). --auth user:password
still works but shows the password to every user of this machine (`ps`).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

from attention_lens.shell.logins import AUTH_ENV, open_warnings, parse_auth, read_auth_file, read_logins  # noqa: F401  (no gradio)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # a Hugging Face Space (or any host) sets GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; the flags win
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public Gradio share link (use with logins)")
    p.add_argument("--auth-file", help="file with one user:password per line required to open the app")
    p.add_argument("--auth", help="user:password (visible to other users of this machine: prefer --auth-file)")
    p.add_argument("--checkpoint", action="append", default=None,
                   help="a checkpoint directory, or a folder of them; a Hugging Face encoder-decoder: a folder written "
                        "by save_pretrained, or hf:owner/name from the hub (needs pip install '.[hf]'); may be given "
                        "several times (default: every model in checkpoints/: German -> English and English -> "
                        "German, beside any Hugging Face model named)")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda")
    p.add_argument("--session-memory", type=float, default=None, metavar="MB",
                   help="memory for all users' sessions together, in MB: their started sentences (least recently "
                        "used first out, built again when asked for) and Gradio's state of each visitor (default: a "
                        "sixteenth of the machine's memory, 64 to 384 MB)")
    p.add_argument("--data-dir", default=None,
                   help="the folder of the live classes' database (default: $ATTENTION_LENS_DATA, else the user's "
                        "data folder)")
    return p.parse_args(argv)


def stop_as_on_ctrl_c(signum, frame):
    """SIGTERM (a service manager's, a container's stop) ends the server as Ctrl-C does: Gradio closes its server on
    KeyboardInterrupt, and the process then exits normally, running its atexit handlers (the page's bundle folder,
    attention_lens/shell/first_load.py, is removed). Python's default for SIGTERM ends the process at once and
    leaves it behind."""
    raise KeyboardInterrupt


def main(argv=None):
    signal.signal(signal.SIGTERM, stop_as_on_ctrl_c)
    # First, before gradio, torch and the library are imported (this module imports nothing large, and
    # `attention_lens` loads its app lazily): freed payloads go back to the system (attention_lens/shell/memory.py).
    from attention_lens.shell import memory
    memory.tune_allocator()
    a = parse_args(argv)
    if a.data_dir:  # read where the page is built (attention_lens/live/store.py data_dir)
        os.environ["ATTENTION_LENS_DATA"] = a.data_dir
    logins = read_logins(a)
    for warning in open_warnings(a.host, a.share, logins):  # --share, or a --host others reach, without logins
        print(f"WARNING: {warning}", file=sys.stderr)
    import torch

    from attention_lens import build_demo
    from attention_lens.live.page import QUEUE_PLACES, SESSION_PLACES
    from attention_lens.shell import held
    from attention_lens.shell.components import WORKER_THREADS
    from transformer.decode.decoding import Translator
    from transformer.hf import is_hf_checkpoint, load_hf
    from transformer.model.checkpoint import CheckpointError, find_checkpoints
    from transformer.model.device import describe, is_accelerator
    ours = [p for p in a.checkpoint or [] if not is_hf_checkpoint(p)]
    try:  # ours (model.pt) first, in the order named; then the Hugging Face ones
        translators = [Translator.load(path, a.device) for path in find_checkpoints(ours or None)]
        translators += [load_hf(p, a.device) for p in a.checkpoint or [] if is_hf_checkpoint(p)]
    except (CheckpointError, ValueError, ImportError, OSError) as e:
        raise SystemExit(f"error: {e}")
    if not is_accelerator(translators[0].device):
        # A step is one position: tiny matrix products where thread start-up costs more than it saves.
        # One thread per request keeps a step fastest and lets the queue's requests share the cores.
        torch.set_num_threads(1)
    from transformer.decode import language
    language.warm()  # the language hint's and the caveats' detectors, before the first user's request
    print(f"{len(translators)} model(s) loaded on {describe(translators[0].device)}", flush=True)
    sessions = held.configure(a.session_memory)  # the sentences' budget; Gradio's sessions within the rest
    build_demo(translators).launch(server_name=a.host, server_port=a.port, share=a.share, auth=logins or None,
                                   footer_links=["api"], state_session_capacity=sessions + SESSION_PLACES,
                                   max_threads=WORKER_THREADS + QUEUE_PLACES)  # followers: attention_lens/live/page.py


if __name__ == "__main__":
    main()
