"""Serving the app in this process on a free loopback port, and driving it with Debian's Chromium:
the one place tests and benchmarks get both from."""
from __future__ import annotations

import os
import shutil
import socket
from contextlib import contextmanager

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"  # Debian's package; `playwright install` is never used
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync", "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def launched(demo, **launch):
    """`demo` launched on 127.0.0.1 at a free port, in this process (launch returns at once). Yields the URL.
    Without Gradio's check that localhost answers (launch(_frontend=False); it changes nothing else): one HEAD of
    the page with a 3 s timeout, which a loaded machine misses now and then, and launch then raises "When localhost
    is not accessible ... share=True" (seen in CI on tests/test_sessions.py). The server is listening when launch
    returns: Gradio waits for uvicorn to have started."""
    launch.setdefault("_frontend", False)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@contextmanager
def serving(translator, **launch):
    """The app on 127.0.0.1 at a free port, in this process (launch returns at once). Yields the URL."""
    from attention_lens.app import build_demo
    from attention_lens.live import page, registry
    from attention_lens.live.page import QUEUE_PLACES, SESSION_PLACES
    page.REGISTRY = registry.Registry()  # a new app in this process starts with no class, as a new process does
    from attention_lens.shell.components import SESSIONS_MAX, WORKER_THREADS
    launch.setdefault("state_session_capacity", SESSIONS_MAX + SESSION_PLACES)  # as app.py launches it
    launch.setdefault("max_threads", WORKER_THREADS + QUEUE_PLACES)
    with launched(build_demo(translator), **launch) as url:
        yield url


def chromium_path() -> str | None:
    """The Chromium that will be launched, or None when it is not installed."""
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")


@contextmanager
def chromium():
    """A headless Chromium (Playwright driving the system's binary)."""
    from playwright.sync_api import sync_playwright
    path = chromium_path()
    if path is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()
