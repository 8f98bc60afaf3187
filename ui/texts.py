"""The page's explanations (issue 39 item 5): one catalogue per language, `ui/texts/<lang>.toml`, where every text
has a plain version, shown by default, and a detailed one, one click away ("Explain: simply | in detail", the
box of assets/explain.js, remembered in links as `explain=detail`).

Python builders put `explained(key)` into a gr.Markdown: both versions, each in a div the page's CSS shows or hides
by the mode (`EXPLAIN_CSS`), so switching needs no request and every text, a note set later included, follows it.
The JS views read the same catalogue (`window.__explain.t(key)`, given to the page by `explain_box`). Keys are
dotted paths into the TOML: "beam.intro", "glossary.rollout", "look_for.de-en".
"""
from __future__ import annotations

import functools
import json
import tomllib
from pathlib import Path

import gradio as gr

from .components import asset

TEXTS_DIR = Path(__file__).parent / "texts"
MODES = ("plain", "detail")
EXPLAIN_CSS = ("body:not(.explain-detail) .x-detail, body.explain-detail .x-plain { display: none !important; }"
               "#intro #explain_box { flex: 0 0 auto !important; width: auto !important; }"
               "#intro #explain_box .html-container { padding: 0 !important; }")
BOX_CSS = (".explain-box { white-space: nowrap; font-size: 13px; display: flex; flex-direction: column; gap: 2px; }"
           ".explain-box .explain-label { font-size: 10.5px; color: var(--body-text-color-subdued, #555); }"
           ".explain-box .explain-modes { display: flex; }"
           ".explain-box button { font: inherit; font-size: 12px; padding: 2px 8px; margin: 0; cursor: pointer;"
           " border: 1px solid var(--border-color-primary, #d1d5db); background: var(--background-fill-secondary,"
           " #f9fafb); color: var(--body-text-color, #111); }"
           ".explain-box button:first-child { border-radius: 6px 0 0 6px; }"
           ".explain-box button:last-child { border-radius: 0 6px 6px 0; border-left: none; }"
           ".explain-box button[aria-pressed=true] { background: #fff7ed; border-color: #fb923c; color: #7c2d12; }")
EXPLAIN_HTML = ('<div class="explain-box" role="group" aria-labelledby="explain_label">'
                '<span class="explain-label" id="explain_label">Explanations</span><span class="explain-modes">'
                '<button type="button" id="explain_plain" data-mode="plain" aria-pressed="true"'
                ' title="Explanations in everyday words">simply</button>'
                '<button type="button" id="explain_detail" data-mode="detail" aria-pressed="false"'
                ' title="Explanations with the maths and the papers they come from">in detail</button></span></div>')


@functools.lru_cache(maxsize=None)
def catalogue(lang: str = "en") -> dict:
    """The catalogue of one language as nested dicts (read once)."""
    with open(TEXTS_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


def entry(key: str, lang: str = "en") -> dict:
    """{"plain", "detail"} of a dotted key; KeyError names the key."""
    node = catalogue(lang)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"no text {key!r} in ui/texts/{lang}.toml")
        node = node[part]
    if not (isinstance(node, dict) and set(MODES) <= set(node)):
        raise KeyError(f"text {key!r} needs both a plain and a detail version")
    return node


def text(key: str, mode: str = "plain", lang: str = "en") -> str:
    return entry(key, lang)[mode]


def explained(*keys: str, lang: str = "en") -> str:
    """Markdown holding the texts of `keys` (joined by a space, in order) in both versions; the page's mode shows
    one."""
    return versions(*(" ".join(text(k, mode, lang) for k in keys) for mode in MODES))


def versions(plain: str, detail: str) -> str:
    """Markdown of a plain and a detailed text, each in the div the page's mode shows or hides (blank lines around
    each, so the Markdown inside the divs is rendered)."""
    return "\n".join(f'<div class="x-{mode}">\n\n{body}\n\n</div>' for mode, body in zip(MODES, (plain, detail)))


def spans(key: str, lang: str = "en") -> str:
    """HTML of a text in both versions, as two spans the page's mode shows or hides (for HTML templates; the
    catalogue's own markup, such as <sub>, is kept)."""
    return "".join(f'<span class="x-{mode}">{text(key, mode, lang)}</span>' for mode in MODES)


def flat(lang: str = "en") -> dict[str, dict]:
    """Every text of a catalogue by its dotted key, in the catalogue's order: {key: {"plain", "detail"}}."""
    out = {}

    def walk(node, path):
        if isinstance(node, dict) and set(MODES) <= set(node):
            out[".".join(path)] = {m: node[m] for m in MODES}
        elif isinstance(node, dict):
            for k, v in node.items():
                if k != "taught" or path:
                    walk(v, path + [k])
    walk(catalogue(lang), [])
    return out


def explain_box() -> gr.HTML:
    """'Explain: simply | in detail' (assets/explain.js), with the catalogue the page's scripts read."""
    data = json.dumps(flat(), ensure_ascii=False).replace("</", "<\\/")
    return gr.HTML(None, html_template=EXPLAIN_HTML, css_template=BOX_CSS, elem_id="explain_box",
                   head=f"<style>{EXPLAIN_CSS}</style>",
                   js_on_load=f"const TEXTS = {data};\n" + asset("explain.js"))
