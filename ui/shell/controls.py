"""Buttons and pickers drawn by the page's own HTML, for the first screen (issue #29 item 1): each is one gr.HTML
(assets/controls.js) with the events its Gradio counterpart has, so it is wired the same way.

- `button(label, elem_id, variant)`: `.click(...)` as gr.Button's; its value is its label (gr.update(value=...)
  relabels it).
- `buttons(items, elem_id)`: a row of buttons in one component, items (button id, value, label); a click on one
  sets the component's value to that button's value and fires its click event (one event for them all).
- `select(choices, value, elem_id, label)`: a native <select> of (label, value) pairs; its value is the chosen
  value; `.input(...)` runs on the user's pick, `.change(...)` on any new value (the user's or the server's), as
  a gr.Dropdown's; gr.update(choices=[...], value=...) replaces its options.
Styled with Gradio's own theme variables (assets/layout.css), so they look like the components they replace.
"""
from __future__ import annotations

import html
import json
import re

import gradio as gr

from ui.shell.components import asset
from ui.shell.texts import labels

# a JS expression escaping `x` for HTML (the templates are JS template strings; the values are ours, escaped anyway)
ESC = "String({x}).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\"/g, '&quot;')"


def button(label: str, elem_id: str, variant: str = "secondary", **kw) -> gr.HTML:
    """A button (#elem_id) whose click fires the component's click event; kw: visible, ... (its width: CSS)"""
    return gr.HTML(label, html_template=f'<button type="button" class="al-btn {variant}">${{{ESC.format(x="value")}}}'
                   '</button>', js_on_load=asset("controls.js"), elem_id=elem_id, elem_classes=["al-btn-box"],
                   padding=False, apply_default_css=False, **kw)


def buttons(items: list[tuple[str, str, str]], elem_id: str | None = None, shown: dict | None = None,
            **kw) -> gr.HTML:
    """Small buttons side by side (each #id) in one component: `.click(fn, [this, ...])` gets the clicked one's
    value, so one js-only event serves them all (gr.Button each would be a component each for the page to build).
    `shown`: {value: HTML} shown instead of a button's label (ui/shell/texts.py both: every language)."""
    shown = shown or {}
    inner = "".join(f'<button type="button" class="al-btn" id="{html.escape(i)}" data-value="{html.escape(v)}">'
                    f'{shown.get(v, html.escape(label))}</button>' for i, v, label in items)
    return gr.HTML("", html_template=f'<div class="al-btn-group">{inner}</div>', js_on_load=asset("controls.js"),
                   elem_id=elem_id, elem_classes=["al-btns-box"], padding=False, apply_default_css=False, **kw)


def select_template(label: str, disabled: bool = False) -> str:
    # a label holding gr.I18n markers (ui/shell/texts.py label) is said in the page's language as it is drawn
    # (window.__explain)
    # and keeps the markers in data-i18n for a language switch (assets/controls.js)
    said = ("(window.__explain && String(l).includes('__i18n__') ? String(l).replace(/__i18n__({[^}]*})/g, "
            "(m, j) => window.__explain.t('label.' + JSON.parse(j).key)) : l)")
    options = ("${choices.map(([l, v]) => `<option value=\"${" + ESC.format(x="v") + "}\"${v === value ? ' selected'"
               " : ''}${String(l).includes('__i18n__') ? ` data-i18n=\"${" + ESC.format(x="l") + "}\"` : ''}>${"
               + ESC.format(x=said) + "}</option>`).join('')}")
    # a gr.I18n marker (ui/shell/texts.py label): assets/controls.js says it in the page's language
    marked = "__i18n__" in label
    name = re.sub(r"__i18n__\{[^}]*\}", lambda m: labels()[json.loads(m.group(0)[8:])["key"]], label)
    return (f'<select class="al-select" aria-label="{html.escape(name)}"'
            f'{f" data-i18n-label={html.escape(label, quote=True)!r}" if marked else ""}'
            f'{" disabled" if disabled else ""}>{options}</select>')


def select(choices: list[tuple[str, str]], value: str, elem_id: str, label: str, interactive: bool = True,
           **kw) -> gr.HTML:
    """A picker (#elem_id select) of (label, value) choices; kw: visible, ... (its width: CSS)"""
    return gr.HTML(value, html_template=select_template(label, not interactive), choices=[list(c) for c in choices],
                   js_on_load=asset("controls.js"), elem_id=elem_id, elem_classes=["al-select-box"],
                   padding=False, apply_default_css=False, **kw)
