"""The Head atlas tab: which heads matter (BLEU lost with each one off) and what each does (its role)."""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from .components import Ctx, asset

ATLAS = "head_atlas.json"
TEMPLATE = ('<div class="atlas"><div class="atlas-summary" data-role="summary"></div><div class="atlas-views">'
            '<div class="atlas-grid" data-role="grid"></div><div class="atlas-curve" data-role="curve"></div></div>'
            '<div class="atlas-help">Each cell is one head, coloured by the BLEU lost when it alone is switched off '
            '(greedy, validation set) and labelled with its role; hover for every statistic, click to open the head '
            'in the Translate tab. The curve switches heads off cumulatively, least important first; the dotted '
            'line is 1 BLEU below the intact model.</div></div>')


def load_atlas(tr) -> dict | None:
    return load_atlas_file(tr.checkpoint_dir)


def load_atlas_file(checkpoint_dir) -> dict | None:
    """The checkpoint's head_atlas.json, or None when it has none (or an unreadable one)."""
    if checkpoint_dir is None:
        return None
    try:
        atlas = json.loads((Path(checkpoint_dir) / ATLAS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return atlas if isinstance(atlas, dict) and isinstance(atlas.get("heads"), list) else None


def roles(atlas: dict | None) -> dict:
    """{kind: [[role of head h] per layer]} for the attention view's titles."""
    out: dict = {}
    for h in (atlas or {}).get("heads", []):
        layers = out.setdefault(h["kind"], [])
        while len(layers) <= h["layer"]:
            layers.append([])
        row = layers[h["layer"]]
        while len(row) <= h["head"]:
            row.append(None)
        row[h["head"]] = h.get("role")
    return out


def build(ctx: Ctx, atlas: dict | None) -> None:
    if atlas is None:
        gr.Markdown(f"This checkpoint has no head atlas (`{ATLAS}`): make one with "
                    "`python -m transformer.atlas --checkpoint DIR --split val`.")
        return
    gr.HTML(atlas, html_template=TEMPLATE, css_template=ctx.css, js_on_load=asset("atlas.js"),
            head=f'<script src="{ctx.plotly_src}"></script>',
            elem_id="atlas")
