"""attention-lens: watch our Transformer translate German to English, one token at a time.

    python app.py [--host 127.0.0.1] [--port 7860] [--share] [--auth-file FILE]
                  [--checkpoint DIR] [--device auto|cpu|cuda]

Logins (needed with --share): --auth-file FILE (one user:password per line), or the environment
variable ATTENTION_LENS_AUTH ("user:password", several separated by commas). --auth user:password
still works but shows the password to every user of this machine (`ps`).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

AUTH_ENV = "ATTENTION_LENS_AUTH"
# Run as a script, this file imports its neighbours `ui` and `transformer`; in a wheel it is attention_lens.app,
# its imports rewritten by setup.py. An editable install (`pip install -e .`) loads this very file as
# attention_lens.app for the `attention-lens` command: its neighbours are then the checkout's, as for a script.
if __package__ and (Path(__file__).parent / "pyproject.toml").exists():
    sys.path.insert(0, str(Path(__file__).parent))


def parse_auth(value: str | None):
    """'user:password' -> (user, password); None for no value; SystemExit for a malformed one."""
    if not value:
        return None
    if ":" not in value:
        raise SystemExit("a login must look like user:password")
    user, password = value.split(":", 1)
    if not user or not password:
        raise SystemExit("a login must look like user:password (both non-empty)")
    return (user, password)


def read_auth_file(path: str) -> list[tuple[str, str]]:
    """The logins of an --auth-file: one user:password per line, `#` comments and blank lines ignored.
    Read as UTF-8 with or without a byte order mark (Notepad writes one); only the line ending is removed,
    so a password keeps its leading and trailing spaces. Warns when others may read the file."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit(f"--auth-file: cannot read {path}: {getattr(e, 'strerror', None) or e}")
    if os.name == "posix" and mode & 0o044:
        print(f"WARNING: --auth-file {path} can be read by other users of this machine (mode {mode & 0o777:03o}); "
              f"chmod 600 {path}", file=sys.stderr)
    logins = []
    for number, line in enumerate(text.split("\n"), 1):  # universal newlines: \r\n and \r are \n here
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            user, password = parse_auth(line)
        except SystemExit as e:
            raise SystemExit(f"--auth-file {path}, line {number}: {e.code}") from None
        if user != user.strip():
            raise SystemExit(f"--auth-file {path}, line {number}: the user name {user!r} starts or ends with a space")
        logins.append((user, password))
    if not logins:
        raise SystemExit(f"--auth-file {path} holds no user:password line")
    return logins


def read_logins(args, environ=os.environ) -> list[tuple[str, str]]:
    """Every login given by --auth-file, ATTENTION_LENS_AUTH and --auth (with a warning for the last).
    A user given twice is refused: which of two passwords holds would otherwise be a silent choice."""
    logins = read_auth_file(args.auth_file) if args.auth_file else []
    if environ.get(AUTH_ENV):
        logins += [parse_auth(v.strip()) for v in environ[AUTH_ENV].split(",") if v.strip()]
    if args.auth:
        print("WARNING: --auth puts the password in the process list, readable by every user of this machine; "
              f"use --auth-file FILE or {AUTH_ENV} instead.", file=sys.stderr)
        logins.append(parse_auth(args.auth))
    users = [u for u, _ in logins]
    twice = sorted({u for u in users if users.count(u) > 1})
    if twice:
        raise SystemExit(f"logins: the user {', '.join(map(repr, twice))} is given more than once "
                         f"(--auth-file, {AUTH_ENV} and --auth together); give each user one password")
    return logins


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # a Hugging Face Space (or any host) sets GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; the flags win
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public Gradio share link (use with logins)")
    p.add_argument("--auth-file", help="file with one user:password per line required to open the app")
    p.add_argument("--auth", help="user:password (visible to other users of this machine: prefer --auth-file)")
    p.add_argument("--checkpoint", default=None, help="checkpoint directory (default: checkpoints/de-en)")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda")
    return p.parse_args(argv)


def main(argv=None):
    # First, before gradio, torch and the library are imported (this file imports nothing large, and `ui`
    # loads its app lazily): freed payloads go back to the system (ui/memory.py).
    from ui import memory
    memory.tune_allocator()
    a = parse_args(argv)
    logins = read_logins(a)
    if a.share and not logins:
        print("WARNING: --share without logins: anyone with the link can use this app and its compute.",
              file=sys.stderr)
    import torch
    from transformer.checkpoint import CheckpointError
    from transformer.decoding import Translator
    from transformer.device import describe
    from ui import build_demo
    try:
        tr = Translator.load(a.checkpoint, a.device)
    except (CheckpointError, ValueError) as e:
        raise SystemExit(f"error: {e}")
    if tr.device.type == "cpu":
        # A step is one position: tiny matrix products where thread start-up costs more than it saves.
        # One thread per request keeps a step fastest and lets the queue's requests share the cores.
        torch.set_num_threads(1)
    print(f"model loaded on {describe(tr.device)}", flush=True)
    build_demo(tr).launch(server_name=a.host, server_port=a.port, share=a.share, auth=logins or None,
                          footer_links=["api"])


if __name__ == "__main__":
    main()
