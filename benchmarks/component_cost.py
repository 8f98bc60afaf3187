"""python -m benchmarks.component_cost [--loads 7] [--n 60] [--rounds 2]

What one more Gradio component or event costs the first page load (issue #29 item 1: a budget for a first screen
that loads within 1.2x a bare page). Serves, in this process, a bare Gradio page (a gr.Blocks with one textbox) and
the same page with `--n` more of one thing each:

- visible gr.HTML: shown components of a type the page loads anyway (no script, a line of text each);
- hidden gr.HTML: the same inside a gr.Column(visible=False), as the tabs never opened are;
- hidden Textbox: hidden boxes like the app's relays and flags (visible=False);
- js-only events: `.change(None, js=...)` on one hidden box (what the app's players wire);
- server events: `.change(fn)` on that box;
- gr.api endpoints: one per endpoint (two parameters each: Gradio adds a component per parameter and output).

All are loaded in turn (bare, then each variant, --loads times per round: the machine's load hits all alike), each
in a fresh browser context, until the page's first textarea is there. Prints each page's median and, against the
bare page's median of the same round, the cost of one more of its thing in ms; then the app's own page counted the
same way (components shown on the first screen, hidden ones, events), to multiply by. Prints; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
from contextlib import ExitStack, contextmanager

from tests.serving import chromium, launched

from .page_load import BARE_READY, first_loads


def add_visible_html(gr, n):
    for i in range(n):
        gr.HTML(f"<p>line {i}</p>")


def add_hidden_html(gr, n):
    with gr.Column(visible=False):
        for i in range(n):
            gr.HTML(f"<p>line {i}</p>")


def add_hidden_boxes(gr, n):
    for _ in range(n):
        gr.Textbox(visible=False)


def add_js_events(gr, n):
    box = gr.Textbox(visible=False)
    for _ in range(n):
        box.change(None, [box], [box], js="(v) => v")


def add_server_events(gr, n):
    box = gr.Textbox(visible=False)
    for _ in range(n):
        box.change(lambda v: v, [box], [box])


def add_api(gr, n):
    for i in range(n):
        def endpoint(text: str, k: int = 0) -> str:
            return text
        gr.api(endpoint, api_name=f"endpoint_{i}")


VARIANTS = {"visible gr.HTML": add_visible_html, "hidden gr.HTML": add_hidden_html,
            "hidden Textbox": add_hidden_boxes, "js-only events": add_js_events, "server events": add_server_events,
            "gr.api endpoints": add_api}


@contextmanager
def page(add=None, n=0):
    """A gr.Blocks with one textbox and `add(gr, n)`'s blocks, queued as the app is, on a free loopback port."""
    import gradio as gr
    with gr.Blocks() as demo:
        gr.Textbox()
        if add is not None:
            add(gr, n)
    demo.queue()
    with launched(demo) as url:
        yield url


def first_screen_counts(config: dict) -> dict:
    """The app's config counted as the variants are: components shown on the first screen (every ancestor visible
    and the value True: "hidden" components are mounted but not displayed), the others, and the events."""
    comps = {c["id"]: c for c in config["components"]}
    shown, hidden = [], []

    def walk(node, visible):
        c = comps.get(node["id"])
        me = visible and (c is None or c.get("props", {}).get("visible") in (True, None))  # None: a layout's own
        if c is not None:
            (shown if me else hidden).append(c["type"])
        closed = c is not None and c["type"] == "accordion" and not c.get("props", {}).get("open", True)
        tabs = [ch for ch in node.get("children") or [] if comps.get(ch["id"], {}).get("type") == "tabitem"]
        for child in node.get("children") or []:  # of a gr.Tabs, the first tab is shown; a closed fold hides all
            walk(child, me and not closed and (child not in tabs or child is tabs[0]))
    walk(config["layout"], True)
    return {"shown": len(shown), "shown HTML": shown.count("html"), "hidden": len(hidden),
            "gr.api parameters": shown.count("api") + hidden.count("api"), "events": len(config["dependencies"])}


def app_counts() -> dict:
    from attention_lens.app import build_demo
    from transformer.decode.decoding import Translator
    from transformer.model.checkpoint import find_checkpoints
    demo = build_demo([Translator.load(path, "cpu") for path in find_checkpoints(None)])
    return first_screen_counts(json.loads(json.dumps(demo.get_config_file(), default=str)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=int, default=7, help="loads of each page per round")
    p.add_argument("--n", type=int, default=60, help="how many of its thing each variant adds")
    p.add_argument("--rounds", type=int, default=2, help="rounds (each with its own bare median)")
    a = p.parse_args(argv)
    n_api = max(1, a.n // 3)  # an endpoint is three components (two parameters, one output)
    with ExitStack() as stack:
        pages = {"bare": (stack.enter_context(page()), BARE_READY)}
        for name, add in VARIANTS.items():
            pages[name] = (stack.enter_context(page(add, n_api if add is add_api else a.n)), BARE_READY)
        browser = stack.enter_context(chromium())
        print(f"{a.loads} loads of each page per round, no added latency; ready: the page's first textarea")
        for r in range(a.rounds):
            t = first_loads(browser, pages, a.loads, 0)
            bare = statistics.median(t["bare"])
            cells = [f"bare {1000 * bare:.0f} ms"]
            for name in VARIANTS:
                m, k = statistics.median(t[name]), n_api if name == "gr.api endpoints" else a.n
                cells.append(f"{k} {name} {1000 * m:.0f} ms ({m / bare:.2f}x, {1000 * (m - bare) / k:+.2f} ms each)")
            print(f"round {r + 1}: " + "; ".join(cells), flush=True)
    print("the app's page: " + ", ".join(f"{k} {v}" for k, v in app_counts().items()))


if __name__ == "__main__":
    main()
