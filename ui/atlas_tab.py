"""The Head atlas tab: which heads matter (BLEU lost with each one off) and what each does (its role)."""
from __future__ import annotations

import html
import json
import textwrap
from pathlib import Path

import gradio as gr

from transformer import atlas as A

from .components import Ctx, asset

ATLAS = "head_atlas.json"
TEMPLATE = ('<div class="atlas"><div class="atlas-summary" data-role="summary"></div><div class="atlas-views">'
            '<div class="atlas-grid" data-role="grid"></div><div class="atlas-curve" data-role="curve"></div></div>'
            '<div class="atlas-help">Each cell is one head, coloured by the BLEU lost when it alone is switched off '
            '(greedy, validation set) and labelled with its role; hover for the rule behind the role and every '
            'statistic, click to open the head in the Translate tab. The curve switches heads off cumulatively, '
            'least important first; the dotted line is 1 BLEU below the intact model.</div>'
            '<div class="atlas-help" data-role="note"></div>'
            '<div class="atlas-legend" data-role="legend"></div></div>')
KIND_TITLES = {"encoder_self": "Encoder self", "decoder_self": "Decoder self", "cross": "Cross"}


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


def atlas_view(atlas: dict) -> dict:
    """What the atlas view draws: the atlas with each head's hover text, the legend and cell labels generated
    from the rule table (`transformer.atlas.ROLE_RULES`), why the pruning curve ends where it does, and a
    note when the file's roles were assigned by another rule table than today's (then the hover gives no
    reason, since today's rules did not give the role)."""
    current = A.role_rules_json()
    same = atlas.get("role_rules") == current
    n = len(atlas["heads"])
    view = {**atlas, "heads": [{**h, "hover": hover_text(h, atlas.get("chance"), n, same)} for h in atlas["heads"]],
            "legend": A.legend(), "labels": {r["role"]: r["label"] for r in A.legend()},
            "pruning_note": A.pruning_stop_text(atlas), "rules_note": None}
    if not same:
        view["rules_note"] = ("This atlas's roles were assigned by an earlier rule table than the one below; "
                              "rebuild it (python -m transformer.atlas) to apply today's rules.")
    return view


HOVER_WIDTH = 64  # characters per hover line: the grid's tooltip must fit beside a cell at 1280 px


def _group(h: dict, prefix: str, title: str) -> list[str]:
    """The statistics of a group (argmax_*, share_*) as `title` and their short names and values."""
    parts = [f"{A.STAT_SHORT[s]} {A.fmt_stat(s, h[s]).replace(' of queries', '')}"
             for s in A.STATS if s.startswith(prefix) and h.get(s) is not None]
    return [title + " " + " · ".join(parts)] if parts else []


def hover_text(h: dict, chance: dict | None, n_heads: int, why: bool = True) -> str:
    """The hover of one head, in words (HTML, lines of at most HOVER_WIDTH characters): where it is, its role
    and why, the BLEU with it switched off, and its statistics (`transformer.atlas.STAT_TABLE`'s words)."""
    lines = [f"{KIND_TITLES.get(h['kind'], h['kind'])} · layer {h['layer'] + 1} · head {h['head'] + 1}"]
    if why:
        lines.append("why: " + A.role_reason(h["kind"], h))
    if h.get("bleu_ablated") is not None:
        d = h["bleu_drop"]
        lines.append(f"BLEU with this head switched off: {h['bleu_ablated']:.2f} ({'loses' if d >= 0 else 'gains'} "
                     f"{abs(d):.2f}; importance rank {h.get('rank')} of {n_heads})")
    at_random = ((chance or {}).get(h["kind"]) or {}).get("confidence")
    lines += _group(h, "argmax_", "strongest key, share of queries"
                    + (f" (any one key at random: {100 * at_random:.0f}%):" if at_random else ":"))
    lines += _group(h, "share_", "weight on:")
    lines += [f"{A.STAT_WORDS[s]}: {A.fmt_stat(s, h[s])}" for s in A.STATS
              if not s.startswith(("argmax_", "share_")) and h.get(s) is not None]
    wrapped = [html.escape(part) for line in lines for part in textwrap.wrap(line, HOVER_WIDTH, subsequent_indent="  ")]
    return "<br>".join([wrapped[0], f"role <b>{html.escape(str(h.get('role')))}</b>"] + wrapped[1:])


def build(ctx: Ctx, atlas: dict | None) -> None:
    if atlas is None:
        gr.Markdown(f"This checkpoint has no head atlas (`{ATLAS}`): make one with "
                    "`python -m transformer.atlas --checkpoint DIR --split val`.")
        return
    gr.HTML(atlas_view(atlas), html_template=TEMPLATE, css_template=ctx.css, js_on_load=asset("atlas.js"),
            head=f'<script src="{ctx.plotly_src}"></script>',
            elem_id="atlas")
