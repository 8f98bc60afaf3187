"""What the first page load costs: the page's scripts and styles in one file, and what the first
screen does not show loaded when it is first opened.

Gradio puts every component's props in the page's HTML, and each gr.HTML view carried its own copy of its script
(js_on_load) and style (css_template): three attention views, nine copies of lens.css, 0.6 MB of HTML. And the
browser fetches the code of every component type the config holds as visible, inactive tabs and closed accordions
included (a Plot, a Dataframe: 2 to 7 files each), before it draws the first screen. `Page.finish(demo)`, once
every tab is built:

- **one script** (`bundle`): every gr.HTML's js_on_load becomes a function of one static file,
  attention-lens-<hash>.js, loaded once by the page's head; the component keeps a one-line js_on_load that calls
  its function with the same element, trigger, props, server, upload and watch (queued until the file has run,
  so the views start in the order they mounted, as before). The stub reaches the file's functions through the
  page's one global of the views, window.__attentionLens ({run, names, queue, opened}): Gradio compiles a
  js_on_load with new Function(...), which sees no other name of a script the page loaded. The same file puts
  the views' styles in the page, once: each css_template scoped as Gradio scopes it (`#html-<random> { css }`,
  here the same element by its elem_id, with the same specificity), then the views' head styles (layout.css,
  attribution.css, ...).
- **types loaded when first opened** (`defer`): a component in a tab that is not the first shown, or in a closed
  accordion, whose type nothing on the first screen uses, is put in the config hidden and shown (as it was) by a
  js-only event the first time its tab is selected or its accordion opened; Gradio then fetches its type's code.
- **big values sent when first opened**: a gated component's value over BIG_VALUE bytes (the head atlas) that no
  event writes is left out of the config and sent by the server when its tab is first opened, and so are the
  results registered with `Page.when_opened` (the Attention being learned plot, computed at every page load
  before).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
from gradio.blocks import BlockContext
from gradio.components import Component

BIG_VALUE = 8_500  # bytes of JSON: a gated value above this waits for its tab to be opened (the model card,
# in the page in both languages and modes, is 8,009 bytes since its German was made plainer, 2026-12-04)
NEVER_DEFERRED = {"state", "api"}  # invisible plumbing Gradio loads in every page
SCOPE = ":is({ids}) > :where(.html-container) > :where([id^=\"html-\"])"  # the element js_on_load gets
# Rules of Gradio's own stylesheets that apply to the whole page, not to their component: Markdown's (every table's
# margins) and Dataframe's (every dropdown arrow's size). They came with the first page while it held a Markdown and
# a Dataframe, and the views were laid out with them; with those types loaded later, the bundle carries them (same
# selectors and specificity), so the page looks the same before and after they load (tests/test_first_load_browser.py)
GRADIO_PAGE_RULES = (
    ".gradio-container table, .gradio-container tr, .gradio-container td, .gradio-container th {"
    " margin-top: var(--spacing-sm); margin-bottom: var(--spacing-sm); padding: var(--spacing-xl); }\n"
    "svg.dropdown-arrow { width: var(--size-4); height: var(--size-4); margin-left: auto; }")
_STYLE = re.compile(r"\s*<style>(.*?)</style>\s*", re.DOTALL)
_DIR: Path | None = None
_SERVED: list[Path] = []


def bundle_dir() -> Path:
    """This process's folder of bundles (served as a static path), made on first use and removed at exit."""
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="attention-lens-page-"))
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


@dataclass
class Page:
    """Collects `when_opened` handlers while the tabs are built; `finish(demo)` applies all of the above."""

    opened: list = field(default_factory=list)  # (gate, fn, inputs, outputs)
    url: str | None = None  # the bundle's URL, once finished

    def when_opened(self, gate: BlockContext, fn, inputs: list, outputs: list) -> None:
        """Run `fn(*inputs) -> outputs` on the server the first time `gate` (a Tab, a closed Accordion) is opened
        in a page, instead of at every page load (outside the model's concurrency group: for work that needs no
        model)."""
        self.opened.append((gate, fn, list(inputs), list(outputs)))

    def finish(self, demo: gr.Blocks) -> None:
        """Call inside `with demo:` once everything is built."""
        self.url = bundle(demo)
        defer(demo, self.opened)


# -- one script, one stylesheet ------------------------------------------------------------------------------------

def html_components(demo: gr.Blocks) -> list[gr.HTML]:
    return [b for _, b in sorted(demo.blocks.items()) if isinstance(b, gr.HTML)]


def stub(name: str) -> str:
    """A gr.HTML's js_on_load: its function in the bundle, called with Gradio's own arguments (or queued)."""
    return (f'const a = [element, trigger, props, server, upload, watch], L = window.__attentionLens; '
            f'if (L && L.run) L.run("{name}", a); else ((window.__attentionLens = L || {{}}).queue = L && L.queue '
            f'|| []).push(["{name}", a]);')


def scoped_css(html: list[gr.HTML]) -> list[str]:
    """Each css_template once, scoped to the components using it: `:is(#a, #b) > ... { css }` selects the element
    Gradio wraps it in (`#html-<random> { css }`) with the same specificity (one id). Components without an
    elem_id, or whose template uses Gradio's substitutions, keep theirs."""
    users: dict[str, list[str]] = {}
    for c in html:
        css = c.css_template or ""
        if not css.strip() or not c.elem_id or "${" in css or "{{" in css:
            continue
        users.setdefault(css, [])
        if c.elem_id not in users[css]:
            users[css].append(c.elem_id)
        c.css_template = ""
    return [f"{SCOPE.format(ids=', '.join('#' + i for i in ids))} {{\n{css}\n}}" for css, ids in users.items()]


def head_css(html: list[gr.HTML]) -> list[str]:
    """The styles the views put in the page's head (their `head` made of <style> blocks only), in order."""
    out = []
    for c in html:
        head = c.head or ""
        styles = _STYLE.findall(head)
        if styles and not _STYLE.sub("", head).strip():
            out += styles
            c.head = None
    return out


# What each view's js_on_load is given: Gradio's arguments, then two of the bundle's (docs/design.md "Where a script
# keeps what it keeps"): `find(id, name)`, the instance a view keeps on element #id (its `name`), or null, and `home`,
# this view's own element (the closest with an id of its own, its elem_id, not Gradio's "html-..."), where it keeps
# its instance. Written once here instead of in every view's file; a part gets both from `view`.
ARGUMENTS = ("element", "trigger", "props", "server", "upload", "watch", "find", "home")
FIND_HOME = ("const __alFind = (id, name) => document.getElementById(id)?.[name] ?? null;\n"
             "const __alHome = (element) => element.closest('[id]:not([id^=\"html-\"])') || element;\n")


def bundle_text(html: list[gr.HTML]) -> tuple[str, list[gr.HTML]]:
    """The bundle's JavaScript, every gr.HTML's js_on_load and css handed to it (their props now call it), and the
    components whose js_on_load it now holds."""
    css = "\n".join([GRADIO_PAGE_RULES] + scoped_css(html) + head_css(html))
    views, bundled = {}, []
    for c in html:
        js = c.js_on_load or ""
        if not js.strip():
            continue
        name = hashlib.sha256(js.encode()).hexdigest()[:10]
        views.setdefault(name, js)
        c.js_on_load = stub(name)
        bundled.append(c)
    functions = ",\n".join(f"{json.dumps(n)}: function ({', '.join(ARGUMENTS)}) {{\n{js}\n}}"
                           for n, js in views.items())
    return ("// attention-lens: the page's views and their styles in one file (attention_lens/shell/first_load.py);\n"
            "// each function is a gr.HTML's js_on_load, called by the one line left in its props.\n"
            "(function () {\n"
            "const __alStyle = document.createElement('style');\n"
            "__alStyle.dataset.attentionLens = '';\n"
            f"__alStyle.textContent = {json.dumps(css, ensure_ascii=False)};\n"
            "document.head.appendChild(__alStyle);\n"
            f"const __alViews = {{\n{functions}\n}};\n"
            f"{FIND_HOME}"
            "const __alRun = (name, a) => {\n"
            "  try { __alViews[name].apply(undefined, [...a, __alFind, __alHome(a[0])]); }  // + find, home\n"
            "  catch (e) { console.error('Error executing js_on_load:', e); }  // as Gradio reports a view's error\n"
            "};\n"
            "// the page's one global of the views (Gradio's js_on_load sees no other name): the calls queued before\n"
            "// this file ran, and the gates opened (restore_js), kept\n"
            "const __al = window.__attentionLens = window.__attentionLens || {};\n"
            "Object.assign(__al, {run: __alRun, names: Object.keys(__alViews)});\n"
            "for (const [name, a] of (__al.queue || []).splice(0)) __alRun(name, a);\n"
            "})();\n"), bundled


def bundle(demo: gr.Blocks) -> str:
    """Write the bundle (named by its content) and serve it; returns its URL. Each view's head names it, so that
    the views never run before it (Gradio loads a script once, whichever asks first); the page's own head loads it
    as soon as the page starts: launch(head=head_tag(demo)), Gradio's public way (attention_lens/app.py with_labels)."""
    text, bundled = bundle_text(html_components(demo))
    path = bundle_dir() / f"attention-lens-{hashlib.sha256(text.encode()).hexdigest()[:12]}.js"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    if not _SERVED:  # Gradio's list of static paths grows with every call
        gr.set_static_paths([str(path.parent)])
        _SERVED.append(path.parent)
    url = f"gradio_api/file={path}"  # relative to the page (its <base>), so a root path keeps working
    tag = f'<script src="{url}"></script>'
    for c in bundled:
        c.head = tag + (c.head or "")
    return url


def head_tag(demo: gr.Blocks) -> str:
    """The <script> tag of the page's bundle (as its views' heads name it), for launch(head=...); "" if none."""
    for c in html_components(demo):
        if m := re.search(r'<script src="[^"]*attention-lens-[0-9a-f]{12}\.js"></script>', c.head or ""):
            return m.group(0)
    return ""


# -- what the first screen does not show -----------------------------------------------------------------------------

def opener(block):
    """The event of a gate's opening (the tab's select, the fold's expand), or None for a block that is no gate."""
    if isinstance(block, gr.Tab):
        return block.select
    if isinstance(block, gr.Accordion):
        return block.expand
    # a column a button opens (attention_lens/app.py: the help under the intro row)
    return getattr(block, "opener", None)


def gates(demo: gr.Blocks) -> dict:
    """Every block in the page's layout (component or layout) -> the innermost tab not shown first, closed
    accordion, or column a button opens (`opener`) it is in (None: on the first screen, shown or not)."""
    out: dict = {}

    def first_tabs(block) -> set:
        """The tab shown first in each run of tabs among `block`'s children (Gradio wraps a run of gr.Tab in one
        gr.Tabs when the Blocks closes; inside it, `selected` names the one shown first)."""
        firsts, run = set(), []
        for child in list(getattr(block, "children", [])) + [None]:
            if isinstance(child, gr.Tab):
                run.append(child)
                continue
            if run:
                selected = getattr(block, "selected", None)
                chosen = [t for t in run if selected is not None and t.id == selected]
                firsts.add((chosen or run)[0])
            run = []
        return firsts

    def walk(block, gate):
        firsts = first_tabs(block)
        for child in getattr(block, "children", []):
            g = gate
            if (isinstance(child, gr.Tab) and child not in firsts
                    or isinstance(child, gr.Accordion) and not child.open
                    or getattr(child, "opener", None) is not None and child.visible is False):
                g = child
            out[child] = gate if g is child else g  # a gate itself is on its parent's screen
            if isinstance(child, BlockContext):
                walk(child, g)

    walk(demo, None)
    return out


def written(demo: gr.Blocks) -> set:
    """The components some event writes (its outputs)."""
    return {o for fn in demo.fns.values() for o in fn.outputs}


def value_size(c: Component) -> int:
    try:
        return len(json.dumps(c.get_config().get("value"), default=str))
    except (TypeError, ValueError):
        return 0


def first_screen_types(where: dict) -> set[str]:
    """The component types Gradio loads for the first screen anyway (visible or hidden: it loads both)."""
    return {c.get_block_name() for c, g in where.items() if g is None and c.visible is not False}


def restore_js(key: str, visibility: list, flag: bool) -> str:
    """A js-only event's function: the first time in a page, the deferred components' visibility as it was (and
    the gate's flag set, which fires its server work); afterwards nothing (undefined: no update)."""
    updates = [{"__type__": "update", "visible": v} for v in visibility]
    if flag:
        updates.append("opened")
    return (f"() => {{ const L = (window.__attentionLens = window.__attentionLens || {{}}), d = (L.opened = L.opened "
            f"|| {{}}); "
            f"if (d[{json.dumps(key)}]) return; d[{json.dumps(key)}] = true; return {json.dumps(updates)}; }}")


def defer(demo: gr.Blocks, opened: list) -> dict:
    """Hide, until first opened, the gated components of types the first screen does not use, and leave big values
    of gated components out of the config (see the module's docstring). Returns {gate: [deferred components]}."""
    where = gates(demo)
    eager, writes = first_screen_types(where), written(demo)
    shown: dict = {}
    for c, g in where.items():
        if g is None or c.get_block_name() in NEVER_DEFERRED:
            continue
        if c.get_block_name() not in eager and c.visible is not False:
            shown.setdefault(g, []).append((c, c.visible))
            c.visible = False
    work: dict = {}
    for gate, fn, inputs, outputs in opened:
        work.setdefault(gate, []).append((fn, inputs, outputs))
    for c, g in where.items():
        if not isinstance(c, Component):
            continue
        raw = c.constructor_args.get("value", c.value)  # what the builder gave, as an event's answer is
        if g is not None and c not in writes and not callable(raw) and value_size(c) > BIG_VALUE:
            c.value = None
            work.setdefault(g, []).append((lambda v=raw: v, [], [c]))
    for g in dict.fromkeys([g for g in where.values() if g in shown or g in work] + list(work)):  # page order
        parts = shown.get(g, [])
        flag = None
        if g in work:  # the gate's server work: a hidden box the restore writes once, and its change event
            flag = gr.Textbox("", visible="hidden", elem_classes=["attention-lens-opened"], label="opened")
            for fn, inputs, outputs in work[g]:
                flag.change(fn, inputs, outputs, api_visibility="private", show_progress="hidden",
                            concurrency_limit=None)
        trigger = opener(g)
        outs = [c for c, _ in parts] + ([flag] if flag is not None else [])
        trigger(None, None, outs, js=restore_js(str(g._id), [v for _, v in parts], flag is not None),
                show_progress="hidden")
    return {g: [c for c, _ in parts] for g, parts in shown.items()}
