"""Loading the page in headless Chromium, for the benchmarks that time it (benchmarks.ui, benchmarks.first_screen,
benchmarks.component_cost): a page load in a fresh context until it is ready, with emulated network latency
(Chrome DevTools' Network.emulateNetworkConditions), the requests it makes, and a bare Gradio page (a gr.Blocks with
one textbox) as the reference; `first_load_lines` is `python -m benchmarks.ui --first-load-only`'s report.

Prints nothing itself and asserts nothing (never a timed test).
"""
from __future__ import annotations

import collections
import statistics
import time
from contextlib import contextmanager

from tests.serving import launched

READY = "window.__lens !== undefined && window.__lens.ready === true"
BARE_READY = "document.querySelector('textarea') !== null"  # the bare page's one textbox


def emulate_latency(page, latency_ms: float):
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": latency_ms,
                                                  "downloadThroughput": -1, "uploadThroughput": -1})
    return cdp


def page_loads(browser, url, n: int, latency_ms: float = 0) -> list[float]:
    out = []
    for i in range(n + 1):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        if latency_ms:
            emulate_latency(page, latency_ms)
        t0 = time.perf_counter()
        page.goto(url)
        page.wait_for_function(READY, timeout=120000)
        if i:  # the first load warms the server's caches
            out.append(time.perf_counter() - t0)
        page.close()
    return out


@contextmanager
def bare_page():
    """A bare Gradio page (a gr.Blocks with one textbox) on a free loopback port, in this process: the reference
    the first page load is compared with. Yields its URL."""
    import gradio as gr
    with gr.Blocks() as demo:
        gr.Textbox()
    with launched(demo) as url:
        yield url


def one_load(browser, url: str, ready: str, latency_ms: float = 0, settle_ms: int = 0) -> dict:
    """One page load in a fresh context: seconds to ready, and (with settle_ms) the requests it made by type
    before ready and in all settle_ms after it, and the HTML document's size."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    sent, done = [], []
    page.on("request", lambda r: sent.append(r.resource_type))
    page.on("requestfinished", lambda r: done.append(r))
    if latency_ms:
        emulate_latency(page, latency_ms)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(ready, timeout=120000, polling=10)
    out = {"s": time.perf_counter() - t0, "before_ready": collections.Counter(sent)}
    if settle_ms:  # (never "networkidle": the page keeps Gradio's heartbeat stream open)
        page.wait_for_timeout(settle_ms)
        out["all"] = collections.Counter(sent)
        doc = next(r for r in done if r.resource_type == "document")
        out["html_bytes"] = len(doc.response().body())  # as the browser got it, decoded
        out["html_wire"] = doc.sizes()["responseBodySize"]  # on the wire (compressed)
    page.close()
    return out


def first_loads(browser, pages: dict, n: int, latency_ms: float) -> dict:
    """{name: [seconds]}: n loads of each page (after one warm-up each), interleaved."""
    for url, ready in pages.values():
        one_load(browser, url, ready, latency_ms)
    out = {name: [] for name in pages}
    for _ in range(n):
        for name, (url, ready) in pages.items():
            out[name].append(one_load(browser, url, ready, latency_ms)["s"])
    return out


def counts(c: collections.Counter) -> str:
    return f"{sum(c.values())} ({', '.join(f'{k} {v}' for k, v in c.most_common())})"


def first_load_lines(url: str, browser, n: int, latency_ms: float) -> list[str]:
    """The first page load, ours beside a bare Gradio page (see the docstring)."""
    lines = []
    with bare_page() as bare:
        pages = {"bare": (bare, BARE_READY), "ours": (url, READY)}
        for lat in (0, latency_ms):
            t = first_loads(browser, pages, n, lat)
            b, o = statistics.median(t["bare"]), statistics.median(t["ours"])
            what = f"with {lat:.0f} ms latency" if lat else "no added latency"
            lines.append(f"first page load, {what}: ours median {1000 * o:.0f} ms "
                         f"(runs {', '.join(f'{1000 * x:.0f}' for x in t['ours'])}), bare Gradio page median "
                         f"{1000 * b:.0f} ms (runs {', '.join(f'{1000 * x:.0f}' for x in t['bare'])}): "
                         f"{o / b:.2f}x (guard <= {2.0 if not lat else 1.6}x: issue 57)")
        for name, (u, ready) in pages.items():
            x = one_load(browser, u, ready, settle_ms=2000)
            lines.append(f"{name}: requests before ready {counts(x['before_ready'])}; in all {counts(x['all'])}; "
                         f"HTML document {x['html_bytes'] / 1000:.0f} kB ({x['html_wire'] / 1000:.0f} kB on the "
                         "wire)" + (" (guard: <= 60 requests)" if name == "ours" else ""))
    return lines
