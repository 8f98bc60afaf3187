"""python -m benchmarks.first_screen [--loads 7] [--latency 150] [--profile N]

Where the first page load's time goes (issue #29 item 1): the app's page beside a bare Gradio page (a gr.Blocks with
one textbox) and beside cut-down builds of our own page, all served by this process and loaded in turn (bare,
full, ...: the machine's load hits all alike), each in a fresh browser context, without and with the emulated
latency:

- full: the page as app.py serves it (every shipped model);
- translate-only: the same page with every tab but Translate left empty (their builders skipped);
- translate-only, no view scripts: that, with every gr.HTML's js_on_load removed (the views never start);
- box and view alone: the sentence box, the user's State and one attention view with its real script, template and
  style, made into the page's one script and stylesheet as the app's are (attention_lens/shell/first_load.py): what a
  first screen drawn by one script would hold at least, the floor of the redesign docs/benchmarks.md describes;
- box, view and a Start button: the same with the app's Start button (a gr.Button) and one server event, the least
  a first screen that can start a sentence holds;
- the first screen's views in one gr.HTML: the sentence box, a State and one gr.HTML that draws, in its script,
  every gr.HTML the app's first screen mounts (the title, the tour and link buttons, the top-k list, the attention
  view, the inside panel, the architecture strip, ...) from their own templates, and runs their own scripts (the
  app's bundle) on them: the page's own views with none of Gradio's components (the picker, the tabs, the buttons
  and the folds are Gradio's own since issue 57) and no event at all (its layout is one column).

Ready: the sentence box (#source's textarea; the bare page's one textarea) is in the page and, on every page with
the attention view's script, that view has run (window.__lens.ready, as benchmarks.ui waits for).
--profile N: then N more loads of each page (no added latency) under Chrome's CPU profiler, printing its script, layout
and style time (Performance.getMetrics), our bundle's own script time and the files with the most self time.
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

from tests.serving import chromium, serving
from transformer.decode.decoding import Translator
from transformer.model.checkpoint import find_checkpoints

from .page_load import BARE_READY, READY, bare_page, first_loads, one_load

SOURCE_READY = "document.querySelector('#source textarea') !== null"
VIEW_READY = f"{SOURCE_READY} && {READY}"
# the one gr.HTML of "the first screen's views in one gr.HTML": each part is a first-screen gr.HTML of the app, drawn
# from its template (Gradio's ${...} and {{...}} substitutions of its props) in the element Gradio would give it
# (#id > .html-container > #html-id: the bundle's styles select it so), then its function in the app's bundle run
# on it with its props (a trigger that does nothing, no server, a watch that keeps the watchers)
ONE_SCREEN_JS = """
const host = element.querySelector('.al-one-screen');
for (const p of JSON.parse(props.parts)) {
  const outer = document.createElement('div'), box = document.createElement('div'), el = document.createElement('div');
  outer.id = p.id; box.className = 'html-container'; el.id = 'html-' + p.id; outer.hidden = !p.shown;
  const names = Object.keys(p.props), tpl = p.template.replace(/\\{\\{\\s*(\\w+)\\s*\\}\\}/g, '${$1}');
  el.innerHTML = new Function(...names, 'return `' + tpl + '`;')(...names.map((k) => p.props[k]));
  box.appendChild(el); outer.appendChild(box); host.appendChild(outer);
  if (!p.view) continue;
  const watchers = {}, watch = (k, fn) => { (watchers[k] = watchers[k] || []).push(fn); };
  const a = [el, () => {}, {...p.props}, {}, async () => null, watch], L = window.__attentionLens;
  if (L && L.run) L.run(p.view, a);
  else ((window.__attentionLens = L || {}).queue = L && L.queue || []).push([p.view, a]);
}
"""
OTHER_TABS = ("compare_tab", "ablation_tab", "beam_tab", "layers_tab", "atlas_tab", "learned_tab", "model_tab")


@contextmanager
def cut_down(no_scripts: bool):
    """While building: every tab but Translate empty; with no_scripts, no gr.HTML keeps its js_on_load."""
    import attention_lens.shell.first_load as fl
    from attention_lens import app
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
def box_and_view(tr, start: bool = False):
    """The sentence box, a State and one attention view (its script, template, style:
    attention_lens.shell.components.lens_view),
    bundled as the app's page is (attention_lens.shell.first_load.Page.finish), on a free loopback port; with start, a
    Start button too (a gr.Button as the app's) and its one server event (box -> State, view). Yields its
    URL."""
    import gradio as gr

    import attention_lens.shell.first_load as fl
    from attention_lens.shell.components import Ctx, asset, lens_view
    from tests.serving import launched
    with gr.Blocks() as demo:
        box = gr.Textbox(elem_id="source", lines=1, max_lines=4, show_label=False, container=False)
        ctx = Ctx(tr, gr.State(None), asset("shell/lens.css"), "")
        view = lens_view(ctx, "attention")
        if start:
            start_button = gr.Button("Start", elem_id="start", variant="primary")
            start_button.click(lambda text: (None, None), [box], [ctx.state, view])
        fl.Page().finish(demo)
    demo.queue()
    with launched(demo) as url:
        yield url


def first_screen_parts(demo) -> list[dict]:
    """Every gr.HTML the page `demo` (finished: attention_lens/shell/first_load.py) mounts on its first screen, shown or
    hidden but
    kept, in page order: {id, template, props (its value too), view: its function's name in the bundle or None,
    shown: displayed (it and every block above it visible; else mounted but not displayed, visible="hidden")}."""
    from attention_lens.shell.first_load import gates
    config = json.loads(json.dumps(demo.get_config_file(), default=str))
    byid, mounted = {c["id"]: c for c in config["components"]}, []
    later = {b._id for b, gate in gates(demo).items() if gate is not None}  # in a tab not shown first, a closed fold

    def walk(node, kept, shown):
        c = byid.get(node["id"])
        visible = None if c is None else c["props"].get("visible")
        kept = kept and visible in (True, None, "hidden") and node["id"] not in later
        shown = shown and visible in (True, None)
        if kept and c is not None and c["type"] == "html":
            mounted.append((demo.blocks[node["id"]], shown))
        for child in node.get("children") or []:
            walk(child, kept, shown)
    walk(config["layout"], True, True)
    parts = []
    for b, shown in mounted:
        js = b.js_on_load or ""
        view = js.split('L.run("', 1)[1].split('"', 1)[0] if 'L.run("' in js else None
        parts.append({"id": b.elem_id or f"part{b._id}", "template": b.html_template or "",
                      "props": {**(b.props or {}), "value": b.value}, "view": view, "shown": shown})
    return parts


@contextmanager
def one_screen(served):
    """The first screen's views in one gr.HTML (the module's docstring), on a free loopback port. Yields its URL."""
    import gradio as gr

    from attention_lens.app import build_demo
    from attention_lens.shell import first_load
    from tests.serving import launched
    app = build_demo(served)
    with gr.Blocks() as demo:
        gr.Textbox(elem_id="source", lines=1, max_lines=4, show_label=False, container=False)
        gr.State(None)
        gr.HTML(None, html_template='<div class="al-one-screen"></div>', js_on_load=ONE_SCREEN_JS,
                parts=json.dumps(first_screen_parts(app), default=str), head=first_load.head_tag(app),
                elem_id="one_screen")
    demo.queue()
    with launched(demo) as url:
        yield url


def counts(url: str) -> str:
    with urllib.request.urlopen(url + "config", timeout=60) as r:
        config = json.loads(r.read())
    return f"{len(config['components'])} components, {len(config['dependencies'])} events"


def profiled(browser, url: str, ready: str, n: int) -> dict:
    """Where a load's main-thread time goes (no added latency): Chrome's CPU profile of n loads, each in a fresh
    context, from navigation to ready: {"script", "layout", "style": ms (Performance.getMetrics), "files": {script
    file or V8's own category: ms of self time}}, means over the loads."""
    import collections
    one_load(browser, url, ready)  # warm the server, as first_loads does
    total, files = collections.Counter(), collections.Counter()
    for _ in range(n):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        cdp = page.context.new_cdp_session(page)
        for method, params in (("Profiler.enable", {}), ("Profiler.setSamplingInterval", {"interval": 200}),
                               ("Profiler.start", {}), ("Performance.enable", {})):
            cdp.send(method, params)
        page.goto(url)
        page.wait_for_function(ready, timeout=120000, polling=10)
        prof = cdp.send("Profiler.stop")["profile"]
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        for key, name in (("script", "ScriptDuration"), ("layout", "LayoutDuration"), ("style", "RecalcStyleDuration")):
            total[key] += 1000 * metrics[name] / n
        frames = {node["id"]: node["callFrame"] for node in prof["nodes"]}
        for sample, us in zip(prof["samples"], prof["timeDeltas"]):
            f = frames[sample]
            files[f["url"].rsplit("/", 1)[-1] or f["functionName"] or "(native)"] += us / 1000 / n
        page.close()
    return {**total, "files": files}


def print_profiles(browser, ready: dict, n: int) -> None:
    for name, (url, when) in ready.items():
        p = profiled(browser, url, when, n)
        top = ", ".join(f"{f} {ms:.1f}" for f, ms in p["files"].most_common(8) if f != "(idle)")
        ours = sum(ms for f, ms in p["files"].items() if f.startswith("attention-lens-"))
        print(f"profile of {name} ({n} loads, ms each): script {p['script']:.0f}, layout {p['layout']:.0f}, style "
              f"{p['style']:.0f}; our bundle's own {ours:.1f}; most self time: {top}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loads", type=int, default=7, help="page loads to time (each page, each condition)")
    p.add_argument("--latency", type=float, default=150, help="emulated network latency, ms")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="then N loads of each page under Chrome's CPU profiler: where the main thread's time goes")
    a = p.parse_args(argv)
    served = [Translator.load(path, "cpu") for path in find_checkpoints(None)]
    with ExitStack() as stack:
        pages = {"bare": stack.enter_context(bare_page()), "full": stack.enter_context(serving(served))}
        with cut_down(no_scripts=False):
            pages["translate-only"] = stack.enter_context(serving(served))
        with cut_down(no_scripts=True):
            pages["translate-only, no view scripts"] = stack.enter_context(serving(served))
        pages["box and view alone"] = stack.enter_context(box_and_view(served[0]))
        pages["box, view and a Start button"] = stack.enter_context(box_and_view(served[0], start=True))
        pages["the first screen's views in one gr.HTML"] = stack.enter_context(one_screen(served))
        browser = stack.enter_context(chromium())
        print(f"{len(served)} model(s) served; {a.loads} loads of each page per condition; ready: the sentence box "
              "and the attention view (the sentence box alone on the page whose views never run)")
        for name, url in pages.items():
            print(f"{name}: {counts(url)}")
        ready = {name: (url, BARE_READY if name == "bare" else SOURCE_READY if "no view scripts" in name
                        else VIEW_READY) for name, url in pages.items()}
        for latency in (0, a.latency):
            t = first_loads(browser, ready, a.loads, latency)
            bare = statistics.median(t["bare"])
            what = f"with {latency:.0f} ms latency" if latency else "no added latency"
            print(f"{what}: " + "; ".join(f"{name} {1000 * statistics.median(xs):.0f} ms"
                                          + ("" if name == "bare" else f" ({statistics.median(xs) / bare:.2f}x)")
                                          for name, xs in t.items()))
        if a.profile:
            print_profiles(browser, ready, a.profile)


if __name__ == "__main__":
    main()
