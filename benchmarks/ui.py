"""python -m benchmarks.ui [--steps 40] [--forces 8] [--loads 5] [--latency 150] [--checkpoint DIR] [--tour-only]
                         [--first-load-only]

Launches the app on loopback and drives headless Chromium (Debian's /usr/bin/chromium), then prints:

- `/config`: the page's configuration, which Gradio deep-copies for every page load and every API client,
  fetched over loopback (no browser) N times;
- first page load: navigation until the attention view is ready (lens.js loaded and run), without and with
  emulated network latency (Chrome DevTools' Network.emulateNetworkConditions, e.g. a share link's tunnel);
- Step click -> view settled, for a 15-word sentence with the layers x heads grid visible. "Settled" is
  measured in the page with performance.now(): from the click on #step until the last update the click
  causes has finished: the view redrawn (canvases, labels, chips, top-k) AND the Gradio components it
  updates through its js-only event (#translation) holding the new value; then
  the next animation frame (the one that paints it) is awaited as well. Requests sent to the server
  while stepping are counted (page.on("request")): the target is 0;
- the same steps with the emulated latency;
- the round trip of a no-op Gradio event (a hidden button, queue and SSE like every model event) on the
  same page, as the reference a server-side step would cost at least;
- a forced piece (a click in the top-k list) -> the new trajectory drawn, with the server's own time;
- the attribution request of the colour toggle's ALTI+ and saliency (assets/attribution.js: one request for every
  row of the trajectory) -> drawn, with the server's time beside Start's on the same sentence, as a ratio
  (target: ALTI+ <= 1.5x Start), after each of --attributions fresh Starts;
- the guided tour (assets/tour.js): the bytes its component adds to the first page load (its entry in /config:
  tour.js, its HTML and CSS; raw and gzipped), the requests the page makes for the tour's files before the tour
  starts (the target is 0) and the files its start fetches (the vendored driver.js and its CSS).
--first-load-only: the first page load alone, beside a bare Gradio page (a gr.Blocks with one textbox) served by the
same process and loaded in turn with ours (bare, ours, bare, ours, ...: the machine's load hits both alike), each in
a fresh browser context (nothing cached), without and with the emulated latency; then, for both pages, the
requests the load makes by type (those before the page is ready, and all of them once the network is quiet) and
the HTML document's size (Gradio puts the config in it). Ready: the attention view's script has run (ours), the
textbox is in the page (bare). It serves every shipped model, as app.py does, unless --checkpoint names one.

Prints figures; asserts nothing (never a timed test).
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
import urllib.request

from tests.serving import chromium, serving
from transformer.decode.decoding import Translator

from .common import pct
from .decode import SENTENCE
from .page_load import READY, emulate_latency, first_load_lines, page_loads

YIELD = ("() => new Promise(r => { const c = new MessageChannel(); c.port1.onmessage = () => r(); "
         "c.port2.postMessage(0); })")

# click `sel`, then wait (polling between tasks, not timers) until the view has redrawn and the translation
# box holds what the view says; then one animation frame
CLICK_SETTLED = f"""async ([sel, seqChange]) => {{
  const L = window.__lens, yieldNow = {YIELD};
  const ta = document.querySelector('#translation textarea');
  const n = L.renders, seq = L.state.traj ? L.state.traj.seq : null, t0 = performance.now();
  document.querySelector(sel).click();
  let drawn = null;
  for (;;) {{
    const fresh = L.renders > n && (!seqChange || (L.state.traj && L.state.traj.seq !== seq));
    if (fresh && drawn === null) drawn = performance.now() - t0;
    if (fresh) {{ const [text] = L.sync(); if (ta.value === text) break; }}
    if (performance.now() - t0 > 60000) throw new Error('the view did not settle within 60 s');
    await yieldNow();
  }}
  const settled = performance.now() - t0;
  await new Promise(r => requestAnimationFrame(() => r()));
  const I = document.getElementById('inside')?.inside;  // the inside panel (assets/inside.js), on its element
  const shown = I && I.row ? I.row.step : null;
  return {{drawn, settled, frame: performance.now() - t0, draw_ms: L.drawMs, arrival: L.recvAt - t0,
           inside_ms: shown === L.state.t ? I.updateMs : null,
           step: L.state.t, n: L.state.traj.n, server_ms: L.state.traj.p.ms ?? null}};
}}"""

NOOP = f"""async () => {{
  const done = () => +(document.getElementById('noop').dataset.done || 0);  // attention_lens/translate/tab.py counts
  there const yieldNow = {YIELD}, n = done(), t0 = performance.now();
  document.querySelector('button#noop, #noop button').click();  // a gr.Button: #noop itself
  while (done() <= n) {{
    if (performance.now() - t0 > 30000) throw new Error('no-op did not return');
    await yieldNow();
  }}
  return performance.now() - t0;
}}"""

def config_times(url, n: int) -> list[float]:
    """GET /config n times (after one warm-up request), seconds each."""
    out = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url + "config", timeout=120) as r:
            r.read()
        if i:
            out.append(time.perf_counter() - t0)
    return out


# the inside panel's one request per head answered
INSIDE_READY = "!document.getElementById('inside')?.inside || document.getElementById('inside').inside.ready()"


def step_through(page, steps: int) -> tuple[list[dict], int]:
    """Step clicks timed until `steps` were measured (Reset, local, at the end); requests counted."""
    page.wait_for_function(INSIDE_READY, timeout=120000)
    sent = []
    listener = lambda r: sent.append(r.url)
    page.on("request", listener)
    out, finished = [], 0
    try:
        while len(out) < steps:
            if page.evaluate("window.__lens.state.t >= window.__lens.state.traj.n - 1"):
                finished += 1
                page.evaluate(CLICK_SETTLED, ["#reset", False])
                continue
            out.append(page.evaluate(CLICK_SETTLED, ["#step", False]))
    finally:
        page.remove_listener("request", listener)
    return out, len(sent), finished


def inside_line(xs) -> str:
    """The inside panel's update on each step (assets/inside.js, open beside the map), from CLICK_SETTLED."""
    u = [x["inside_ms"] for x in xs if x.get("inside_ms") is not None]
    if not u:
        return "  the inside panel: not shown on these steps"
    return (f"  + the inside panel's update on the step (open, its table and strips): "
            f"median {statistics.median(u):.1f} ms, p95 {pct(u, 95):.1f} ms, max {max(u):.1f} ms "
            f"(n={len(u)}; target: within one frame, <= 16 ms)")


def inside_size(page) -> str:
    """The size of the inside panel's payload for the head shown (one request per head and trajectory)."""
    page.wait_for_function(INSIDE_READY + " && document.getElementById('inside')?.inside.row", timeout=120000)
    n = page.evaluate("(() => { const r = document.getElementById('inside')?.inside.row, ids = "
                      "window.__lens.state.traj.ids.join(','); "
                      "const h = [...document.getElementById('inside')?.inside.cache.values()].find(h => h.kind === "
                      "r.kind && "
                      "h.layer === r.layer && h.head === r.head && h.ids === ids); "
                      "return JSON.stringify(h.p).length; })()")
    return f"{n / 1000:.1f} kB"


def noops(page, n: int) -> list[float]:
    return [page.evaluate(NOOP) for _ in range(n)]


def forces(page, n: int) -> list[dict]:
    """Force the second top-k piece at steps 1, 2, ...; Reset (local: back to the greedy trajectory) between."""
    out = []
    for i in range(n):
        page.evaluate(CLICK_SETTLED, ["#reset", False])
        for _ in range(1 + i % 4):
            page.evaluate(CLICK_SETTLED, ["#step", False])
        out.append(page.evaluate(CLICK_SETTLED, ["#topk .topk-list button:nth-child(2)", True]))
    page.evaluate(CLICK_SETTLED, ["#reset", False])
    return out


# tick a measure of the colour toggle, wait until its map is drawn; the server's time is in the payload ("ms")
ATTRIBUTION = f"""async (method) => {{
  const A = document.getElementById('attribution')?.attribution, yieldNow = {YIELD}, t0 = performance.now();
  document.querySelector(`#attention .lens-measure input[value=${{method}}]`).click();
  while (!(A.ready() && A.view() && A.view().method === method)) {{
    if (performance.now() - t0 > 300000) throw new Error('no attribution within 300 s');
    await yieldNow();
  }}
  const drawn = performance.now() - t0, a = A.cache.get(`${{window.__lens.state.traj.seq}}|${{method}}`);
  document.querySelector('#attention .lens-measure input[value=weight]').click();
  return {{drawn, server_ms: a.ms}};
}}"""


def attributions(page, n: int) -> tuple[list[dict], dict]:
    """n fresh Starts of the sentence in the box, each followed by ALTI+ and saliency: (Starts, {method: [...]})."""
    starts, out = [], {"alti": [], "saliency": []}
    for _ in range(n):
        starts.append(page.evaluate(CLICK_SETTLED, ["#start", True]))
        page.wait_for_function(INSIDE_READY, timeout=120000)
        for method, got in out.items():
            got.append(page.evaluate(ATTRIBUTION, method))
    return starts, out


def attribution_lines(starts, found) -> list[str]:
    if not starts:
        return ["attribution: not measured (--attributions 0)"]
    start_ms = statistics.median(x["server_ms"] for x in starts)
    lines = [(f"attribution (the colour toggle: one request for every row of the trajectory), after {len(starts)} "
              f"fresh Starts (server median {start_ms:.0f} ms):")]
    for method, xs in found.items():
        srv, drawn = statistics.median(x["server_ms"] for x in xs), statistics.median(x["drawn"] for x in xs)
        lines.append(f"  {method}: click -> drawn median {drawn:.0f} ms; server median {srv:.0f} ms = "
                     f"{srv / start_ms:.2f}x Start's server time" + (" (target <= 1.5x)" if method == "alti" else ""))
    return lines


def tour_lines(url, browser) -> list[str]:
    """What the tour costs a page that never starts it, and what its start fetches (see the docstring)."""
    with urllib.request.urlopen(url + "config", timeout=120) as r:
        config = r.read()
    box = next(c for c in json.loads(config)["components"] if c["props"].get("elem_id") == "tour_box")
    raw = json.dumps(box, ensure_ascii=False, separators=(",", ":")).encode()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.goto(url)
    page.wait_for_function(READY, timeout=120000)
    page.wait_for_timeout(2000)  # the page idle, the tour offered but not started
    before, mine = len(sent), [u for u in sent if "driver" in u or "tour" in u]
    page.click("#tour")
    page.wait_for_selector(".driver-popover", timeout=60000)
    fetched = [u.rsplit("/", 1)[1] for u in sent[before:] if "driver" in u]
    page.close()
    return [(f"tour: its component adds {len(raw) / 1000:.1f} kB to the first page load "
             f"({len(gzip.compress(raw)) / 1000:.1f} kB gzipped; the whole /config: {len(config) / 1000:.0f} kB); "
             f"requests for the tour's files before it starts: {len(mine)} (the page load made {before}); "
             f"starting it fetches {len(fetched)}: {', '.join(fetched)}")]


def arguments(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=40, help="Step clicks to time (each condition)")
    p.add_argument("--loads", type=int, default=5, help="page loads to time (each condition)")
    p.add_argument("--configs", type=int, default=10, help="GET /config requests to time")
    p.add_argument("--forces", type=int, default=8, help="forced pieces to time")
    p.add_argument("--noops", type=int, default=20, help="no-op round trips to time (each condition)")
    p.add_argument("--latency", type=float, default=150, help="emulated network latency, ms")
    p.add_argument("--sentence", default=SENTENCE)
    p.add_argument("--kind", default="cross", choices=["encoder_self", "decoder_self", "cross"])
    p.add_argument("--attributions", type=int, default=3, help="fresh Starts, each timed with ALTI+ and saliency")
    p.add_argument("--tour-only", action="store_true", help="only what the tour adds to the first page load")
    p.add_argument("--first-load-only", action="store_true",
                   help="only the first page load, beside a bare Gradio page (times, requests, HTML size)")
    return p.parse_args(argv)


def force_line(xs, rtt, label):
    """The forced-piece figures: click to drawn, the round trip, the view's own part."""
    ms, med = (lambda x: f"{x:.0f} ms"), statistics.median
    tot = [x["settled"] for x in xs]
    srv = [x["server_ms"] for x in xs]
    arrive = [x["arrival"] for x in xs]
    view = [x["settled"] - x["arrival"] for x in xs]
    n = len(xs)
    return (f"forced piece -> new trajectory drawn{label}: median {ms(med(tot))}, max {ms(max(tot))} (n={n})\n"
            f"  click -> the new trajectory reaches the view (one round trip): median {ms(med(arrive))} "
            f"[a no-op round trip: median {ms(med(rtt))}; the server's handler, force + greedy continuation + "
            f"payload, inside it: median {ms(med(srv))}]\n"
            f"  + the view decoding the trajectory and drawing the forced step: median {ms(med(view))}, "
            f"max {ms(max(view))} (target <= 100 ms)")


def main(argv=None):
    a = arguments(argv)

    if a.first_load_only:  # the page as app.py serves it: every shipped model unless one is named
        from transformer.model.checkpoint import find_checkpoints
        served = [Translator.load(p, a.device) for p in find_checkpoints([a.checkpoint] if a.checkpoint else None)]
        print(f"{len(served)} model(s) served; {a.loads} loads of each page per condition")
        with serving(served) as url, chromium() as browser:
            return print("\n".join(first_load_lines(url, browser, a.loads, a.latency)))
    tr = Translator.load(a.checkpoint, a.device)
    ms = lambda x: f"{x:.0f} ms"
    med = lambda xs: statistics.median(xs)
    print(f"sentence ({len(a.sentence.split())} words): {a.sentence}")
    with serving(tr) as url, chromium() as browser:
        tour = tour_lines(url, browser)
        if a.tour_only:
            return print("\n".join(tour))
        configs = config_times(url, a.configs)
        loads = page_loads(browser, url, a.loads)
        loads_lat = page_loads(browser, url, a.loads, a.latency)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_function(READY, timeout=120000)
        page.fill("#source textarea", a.sentence)
        start = page.evaluate(CLICK_SETTLED, ["#start", True])
        attr_lines = attribution_lines(*attributions(page, a.attributions))
        if a.kind != "cross":
            page.click(f"#attention [data-kind={a.kind}]")
        grid = page.evaluate("window.__lens.grid()")
        inside_kb = inside_size(page)
        steps, sent, finished = step_through(page, a.steps)
        noop = noops(page, a.noops)
        forced = forces(page, a.forces)
        emulate_latency(page, a.latency)
        steps_lat, sent_lat, _ = step_through(page, a.steps)
        noop_lat = noops(page, max(3, a.noops // 4))
        forced_lat = forces(page, max(2, a.forces // 2))
        payload = page.evaluate("window.__lens.state.traj.p.steps.n")

    def step_line(xs, label):
        s = [x["settled"] for x in xs]
        f = [x["frame"] for x in xs]
        d = [x["draw_ms"] for x in xs]
        return (f"Step click -> view settled{label}: median {ms(med(s))}, p95 {ms(pct(s, 95))}, max {ms(max(s))}; "
                f"to the next frame: median {ms(med(f))}, p95 {ms(pct(f, 95))} (n={len(xs)}); "
                f"the view's own drawing: median {med(d):.1f} ms, p95 {pct(d, 95):.1f} ms\n" + inside_line(xs))

    print(f"GET /config (the config Gradio copies per page load and client): median {ms(1000 * med(configs))}, "
          f"max {ms(1000 * max(configs))} (n={len(configs)})")
    print(f"first page load (until the attention view is ready): median {ms(1000 * med(loads))}, "
          f"max {ms(1000 * max(loads))} (n={len(loads)}); with {a.latency:.0f} ms latency: "
          f"median {ms(1000 * med(loads_lat))}, max {ms(1000 * max(loads_lat))}")
    print("\n".join(tour))
    print(f"Start -> whole trajectory drawn ({payload} steps): {ms(start['settled'])} "
          f"(server {ms(start['server_ms'])})")
    print("\n".join(attr_lines))
    print(f"grid: {grid['panels']} panels ({a.kind}) visible; {finished} full translations stepped through; "
          f"the inside panel open (its payload for the head shown: {inside_kb})")
    print(step_line(steps, ""))
    print(f"  requests to the server during {len(steps)} steps: {sent}")
    print(f"  reference: no-op Gradio event round trip on the same page: median {ms(med(noop))}, "
          f"p95 {ms(pct(noop, 95))} (n={len(noop)})")
    print(step_line(steps_lat, f" with {a.latency:.0f} ms latency"))
    print(f"  requests to the server during {len(steps_lat)} steps: {sent_lat}")
    print(f"  reference: no-op round trip with {a.latency:.0f} ms latency: median {ms(med(noop_lat))} "
          f"(n={len(noop_lat)})")
    print(force_line(forced, noop, ""))
    print(force_line(forced_lat, noop_lat, f" with {a.latency:.0f} ms latency"))


if __name__ == "__main__":
    main()
