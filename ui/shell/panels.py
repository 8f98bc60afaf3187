"""Tabs and folds drawn by the page's own HTML (issue #29 item 1).

Gradio fetches the code of every component type on the first screen before it draws it: gr.Tabs costs 4 files,
gr.Accordion 2, gr.Button 7 (with an image viewer it imports), gr.Dropdown 4. The first screen here uses only
types the page needs anyway (Textbox, HTML, Column): a tab bar and each fold's header are one gr.HTML
(assets/panels.js), and what they open is a gr.Column that Gradio's js-only events show and hide, with no request.

- `Tabs(names)`: the bar where it is created; `with tabs.tab(name, elem_id) as panel:` builds each panel in order.
  A panel never opened is not in the page (visible=False: its components are created when it is first shown);
  one left is not displayed but kept (the bar's CSS: its views keep their scripts and state), as gr.Tabs keeps them.
  `panel.select(fn, inputs, outputs, ...)` runs each time the tab is chosen (gr.Tab.select's place).
- `with fold(label, elem_id) as f:` a header button and, under it, the column it opens and closes (gr.Accordion's
  place); `f.expand(...)` runs when it is opened or closed (ui/shell/first_load.py uses its first time: an opening).
Both mark their column with `opener` (the event of its opening), which ui/shell/first_load.py reads to know what waits.
"""
from __future__ import annotations

import html
import json
from contextlib import contextmanager
from dataclasses import dataclass

import gradio as gr

from ui.shell.components import asset

QUIET = {"show_progress": "hidden"}


@dataclass
class Panel:
    """One tab: its name, its column, and the bar it belongs to."""

    name: str
    column: gr.Column
    tabs: Tabs
    flag: gr.Textbox | None = None  # made by the first server `select`: a hidden box the bar writes on each choice

    def select(self, fn, inputs=None, outputs=None, **kw):
        """Run `fn` (or a js-only `js=`) each time this tab is chosen. A js-only one is an event of the bar itself
        that acts only when the bar's value is this tab; a server one needs a hidden box of its own (the bar's
        event writes it when this tab is chosen), made here, before the bar's event is made (every box is a
        component more for the first load to build, so tabs with no server `select` have none)."""
        if fn is None and kw.get("js"):
            js = kw.pop("js")
            return self.tabs.bar.click(None, [self.tabs.bar] + list(inputs or []), outputs,
                                       js=chosen_js(self.name, js), **kw)
        if self.flag is None:
            if self.tabs.finished:
                raise RuntimeError(f"tab {self.name!r}: a server select must be set up before the last tab ends")
            self.flag = gr.Textbox("", visible=False, label=f"{self.name} chosen")
        return self.flag.change(fn, inputs, outputs, **kw)


def chosen_js(name: str, js: str) -> str:
    """A js-only event function of the bar, (bar's value, *inputs) -> `js`(*inputs) when `name` is the tab chosen,
    else undefined (no update)."""
    return f"(v, ...a) => v === {json.dumps(name)} ? ({js})(...a) : undefined"


def tab_template(names: list[str], shown: dict | None = None) -> str:
    """The bar: one button per tab, the chosen one (the component's value) aria-selected; `shown`: HTML shown for a
    name instead of the name (the catalogue's labels in every language, ui/shell/texts.py both)."""
    shown = shown or {}
    buttons = "".join(f'<button type="button" role="tab" data-name="{html.escape(n)}" '
                      f'aria-selected="${{value === {json.dumps(n)} ? "true" : "false"}}">'
                      f'{shown.get(n, html.escape(n))}</button>' for n in names)
    return f'<div class="al-tabs" role="tablist">{buttons}</div>'


def shown_js(names: list[str], flagged: list[int]) -> str:
    """The bar's one js-only event, (chosen tab, the boxes of the tabs `flagged`) -> (each panel, those boxes). A
    panel is put in the page the first time its tab is chosen and never updated again (a layout made visible shows
    every component in it, undoing what an event hid there, e.g. a view of another sentence: ui/shell/page_state.py);
    the
    bar's style (`hiding_css`) shows and hides the panels after. The chosen tab's box, if it has one, gets a new
    value (its change runs its server select events)."""
    return ("(v, ...flags) => { const names = " + json.dumps(names) + ", flagged = " + json.dumps(flagged)
            + ", seen = (window.__alTabsSeen = window.__alTabsSeen || new Set([names[0]])), first = !seen.has(v); "
            "seen.add(v); return names.map((n) => n === v && first ? {__type__: 'update', visible: true} : "
            "{__type__: 'update'}).concat(flagged.map((i, j) => names[i] === v ? String(Date.now()) : flags[j])); }")


def hiding_css(bar_id: str, panels: list[tuple[str, str]]) -> str:
    """A panel whose tab is not selected is not displayed, at once (CSS follows the bar's aria-selected): a
    gr.Column made visible="hidden" hides its children but keeps its own box, and a column made invisible would
    lose its views' state."""
    return "\n".join(f'#{bar_id}:has(button[data-name={json.dumps(n)}][aria-selected="false"]) ~ #{i} '
                     "{ display: none !important; }" for n, i in panels)


class Tabs:
    def __init__(self, names: list[str], elem_id: str = "tab_bar", shown: dict | None = None):
        self.names = list(names)
        self.bar = gr.HTML(self.names[0], html_template=tab_template(self.names, shown), js_on_load=asset("panels.js"),
                           elem_id=elem_id, padding=False, apply_default_css=False)
        self.panels: list[Panel] = []
        self.finished = False

    @contextmanager
    def tab(self, name: str, elem_id: str):
        i = len(self.panels)
        if i >= len(self.names) or self.names[i] != name:
            raise ValueError(f"tab {name!r} out of the bar's order {self.names}")
        with gr.Column(visible=i == 0, elem_id=elem_id, elem_classes=["al-panel"]) as column:
            panel = Panel(name, column, self)
            column.opener = panel.select
            self.panels.append(panel)
            yield panel
        if i == len(self.names) - 1:
            self.finish()

    def finish(self) -> None:
        css = hiding_css(self.bar.elem_id, [(p.name, p.column.elem_id) for p in self.panels])
        self.bar.head = f"<style>{css}</style>" + (self.bar.head or "")  # to the page's one bundle (ui/first_load)
        flagged = [i for i, p in enumerate(self.panels) if p.flag is not None]
        flags = [self.panels[i].flag for i in flagged]
        self.bar.click(None, [self.bar] + flags, [p.column for p in self.panels] + flags,
                       js=shown_js(self.names, flagged), **QUIET)
        self.finished = True


@dataclass
class Fold:
    head: gr.HTML
    column: gr.Column

    def expand(self, fn, inputs=None, outputs=None, **kw):
        """Run `fn` (or a js-only `js=`) each time the fold is opened or closed (its header's click)."""
        return self.head.click(fn, inputs, outputs, **kw)


def fold_head(label: str, elem_id: str | None = None, closes: bool = False, shown: str | None = None) -> gr.HTML:
    """A fold's header button (#elem_id), made apart from its body where the two sit apart (fold's `head`).
    closes=True: the open fold closes on Esc, on a click outside it and on a change of tab (assets/panels.js), as a
    help text does that a reader opens, reads and leaves. `shown`: HTML shown instead of the label (ui/shell/texts.py
    both)."""
    closing = f' data-closes="{elem_id}_body"' if closes else ""  # the body's id: panels.js counts it as inside
    return gr.HTML("closed 0", html_template=(
        '<button type="button" class="al-fold" aria-expanded="${String(value).startsWith(\'open\') ? \'true\' : '
        f'\'false\'}}"{closing}>{shown or html.escape(label)}</button>'),
        js_on_load=asset("panels.js"), elem_id=elem_id, elem_classes=["al-fold-head"], padding=False,
        apply_default_css=False)


@contextmanager
def fold(label: str, elem_id: str | None = None, head: gr.HTML | None = None, shown: str | None = None):
    """A header button (#elem_id) and the column under it (#elem_id_body), closed at first; `head`: the header
    made by fold_head where it sits elsewhere on the page (the body is put where this is called)."""
    head = head if head is not None else fold_head(label, elem_id, shown=shown)
    with gr.Column(visible=False, elem_id=f"{elem_id}_body" if elem_id else None,
                   elem_classes=["al-fold-body"]) as column:
        f = Fold(head, column)
        column.opener = f.expand
        yield f
    # put in the page when first opened; closed, it is not displayed (assets/layout.css .al-fold-body), and kept
    key = json.dumps(elem_id or label)
    head.click(None, [head], [column], **QUIET,
               js=f"(v) => {{ const seen = (window.__alFoldsSeen = window.__alFoldsSeen || new Set()); if "
                  f"(seen.has({key}) || !String(v).startsWith('open')) return {{__type__: 'update'}}; seen.add({key}); "
                  "return {__type__: 'update', visible: true}; }")


def row(elem_id: str | None = None, visible=True, equal_height: bool = False, scale: int = 1) -> gr.Column:
    """gr.Row's place on the first screen: a column laid out as a row (assets/layout.css .al-row), since gr.Row
    costs 2 files of its own. Children take `scale` and `min_width` as in a gr.Row."""
    classes = ["al-row"] + (["al-equal"] if equal_height else [])
    return gr.Column(elem_id=elem_id, visible=visible, min_width=0, scale=scale, elem_classes=classes)
