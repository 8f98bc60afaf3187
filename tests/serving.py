"""Serving the app in this process on a free loopback port, and driving it with Debian's Chromium:
the one place tests and benchmarks get both from."""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from contextlib import contextmanager

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
if not os.environ.get("ATTENTION_LENS_DATA"):  # the live classes' database of an app served here: a folder of its
    _DATA = tempfile.mkdtemp(prefix="attention-lens-data-")  # own, removed at exit, never the user's data folder
    os.environ["ATTENTION_LENS_DATA"] = _DATA
    atexit.register(shutil.rmtree, _DATA, True)

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
    # a new app in this process starts as a new process does: a new registry, with only the classes its data folder
    # kept (build() attaches the store), none of them counted against a client until its teacher's page follows it
    page.REGISTRY = registry.Registry()
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


GENERIC = "The upstream Gradio app has raised an exception"  # Gradio's answer for an error it has no message for


def fn_indices(url: str) -> dict[str, tuple[int, list[int]]]:
    """The page's events by their API name: {name: (fn_index, the positions of its gr.State inputs)} (from
    /config): a client sends the values of the others; the page's queue takes a placeholder for each state."""
    import httpx
    config = httpx.get(f"{url}config", timeout=60).json()
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    return {d["api_name"]: (d["id"], [i for i, c in enumerate(d["inputs"]) if c in states])
            for d in config["dependencies"] if d.get("api_name")}


def raw_call(url: str, name: str, data: list, lang: str | None = None, session: str | None = None,
             timeout: float = 120, fns: dict | None = None) -> tuple[str, object]:
    """One call of the endpoint /`name` as the page makes it (Gradio's queue: /queue/join, then the session's
    stream /queue/data), its JSON written with escapes, so that it may carry what a client library cannot encode (a
    lone surrogate); `data`: the values a client sends (gr.State's are put in). `lang`: the page's language
    cookie; `session`: a session hash (calls with the same one share the user's state; default: a new session).
    Returns ("complete", the answer's data), ("error", its message: None when Gradio gave none), or ("cut", what
    the stream held when it ended without either)."""
    import json
    import uuid

    import httpx
    fn, states = (fns or fn_indices(url))[name]
    data = list(data)
    for i in states:
        data.insert(i, None)
    session = session or uuid.uuid4().hex
    cookies = {"al_lang": lang} if lang else None
    with httpx.Client(cookies=cookies, timeout=timeout) as h:
        body = {"data": data, "fn_index": fn, "session_hash": session, "event_data": None, "trigger_id": None}
        r = h.post(f"{url}gradio_api/queue/join", content=json.dumps(body),
                   headers={"content-type": "application/json"})
        if r.status_code != 200:
            return "http", f"{r.status_code} {r.text[:300]}"
        event = r.json()["event_id"]
        seen = []
        try:
            with h.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}) as stream:
                for line in stream.iter_lines():
                    seen.append(line)
                    if not line.startswith("data:"):
                        continue
                    msg = json.loads(line[5:])
                    if msg.get("event_id") not in (None, event) or msg.get("msg") != "process_completed":
                        continue
                    out = msg.get("output") or {}
                    if msg.get("success"):
                        return "complete", out.get("data")
                    return "error", out.get("error")
        except httpx.RemoteProtocolError as e:  # the server closed the stream in the middle of an answer
            seen.append(f"{type(e).__name__}: {e}")
    return "cut", "\n".join(seen)[-300:]
