"""python -m benchmarks.first_screen [--loads 7] [--latency 150]

Where the first page load's time goes (issue #29 item 1): the app's page beside a bare Gradio page (a gr.Blocks with
one textbox) and beside two cut-down builds of our own page, all served by this process and loaded in turn (bare,
full, ...: the machine's load hits all alike), each in a fresh browser context, without and with the emulated
latency:

- full: the page as app.py serves it (every shipped model);
- translate-only: the same page with every tab but Translate left empty (their builders skipped);
- translate-only, no view scripts: that, with every gr.HTML's js_on_load removed (the views never start);
- box and view alone: the sentence box, the user's State and one attention view with its real script, template and
  style, made into the page's one script and stylesheet as the app's are (ui/first_load.py): what a first screen
  drawn by one script would hold at least, the floor of the redesign docs/benchmarks.md describes.

Ready, for every page alike: the sentence box (#source's textarea; the bare page's one textarea) is in the page.
The cut-down pages are diagnostics, not pages anyone is served: what they cost is the floor of a first screen built
of Gradio components, whatever the other tabs and our scripts do. Also prints each page's count of components and
events (its /config). Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import urllib.request
from contextlib import ExitStack, contextmanager
from unittest import mock

from transformer.checkpoint import find_checkpoints
from transformer.decoding import Translator
from ui.serving import chromium, serving

from .ui import BARE_READY, bare_page, first_loads

SOURCE_READY = "document.querySelector('#source textarea') !== null"
OTHER_TABS = ("compare_tab", "ablation_tab", "beam_tab", "layers_tab", "atlas_tab", "learned_tab", "model_tab")


@contextmanager
def cut_down(no_scripts: bool):
    """While building: every tab but Translate empty; with no_scripts, no gr.HTML keeps its js_on_load."""
    import ui.app as app
    import ui.first_load as fl
    with ExitStack() as stack:
        for name in OTHER_TABS:
            # nothing built; the tabs that follow the model give no outputs and no content
            stack.enter_context(mock.patch.object(getattr(app, name), "build", lambda *a, **k: ([], lambda tr: [])))
        if no_scripts:
            finish = fl.Page.finish

            def without_scripts(page, demo):
                for c in fl.html_components(demo):
                    c.js_on_load = None
                finish(page, demo)
            stack.enter_context(mock.patch.object(fl.Page, "finish", without_scripts))
        yield


@contextmanager
def box_and_view(tr):
    """The sentence box, a State and one attention view (its script, template, style: ui.components.lens_view),
    bundled as the app's page is (ui.first_load.Page.finish), on a free loopback port. Yields its URL."""
    import gradio as gr

    import ui.first_load as fl
    from ui.components import Ctx, asset, lens_view
    from ui.serving import launched
    with gr.Blocks() as demo:
        gr.Textbox(elem_id="source", lines=1, max_lines=4, show_label=False, container=False)
        ctx = Ctx(tr, gr.State(None), asset("lens.css"), "")
        lens_view(ctx, "attention")
        fl.Page().finish(demo)
    demo.queue()
    with launched(demo) as url:
        yield url


def counts(url: str) -> str:
    with urllib.request.urlopen(url + "config", timeout=60) as r:
        config = json.loads(r.read())
    return f"{len(config['components'])} components, {len(config['dependencies'])} events"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=int, default=7, help="page loads to time (each page, each condition)")
    p.add_argument("--latency", type=float, default=150, help="emulated network latency, ms")
    a = p.parse_args(argv)
    served = [Translator.load(path, "cpu") for path in find_checkpoints(None)]
    with ExitStack() as stack:
        pages = {"bare": stack.enter_context(bare_page()), "full": stack.enter_context(serving(served))}
        with cut_down(no_scripts=False):
            pages["translate-only"] = stack.enter_context(serving(served))
        with cut_down(no_scripts=True):
            pages["translate-only, no view scripts"] = stack.enter_context(serving(served))
        pages["box and view alone"] = stack.enter_context(box_and_view(served[0]))
        browser = stack.enter_context(chromium())
        print(f"{len(served)} model(s) served; {a.loads} loads of each page per condition; ready: the sentence box")
        for name, url in pages.items():
            print(f"{name}: {counts(url)}")
        ready = {name: (url, BARE_READY if name == "bare" else SOURCE_READY) for name, url in pages.items()}
        for latency in (0, a.latency):
            t = first_loads(browser, ready, a.loads, latency)
            bare = statistics.median(t["bare"])
            what = f"with {latency:.0f} ms latency" if latency else "no added latency"
            print(f"{what}: " + "; ".join(f"{name} {1000 * statistics.median(xs):.0f} ms"
                                          + ("" if name == "bare" else f" ({statistics.median(xs) / bare:.2f}x)")
                                          for name, xs in t.items()))


if __name__ == "__main__":
    main()
