"""What the tabs' plotly figures share: the axes said in the page's language, and a figure drawn for a phone's width.

Each tab's own figures are in its folder (attention_lens/model/figures.py, attention_lens/beam/figures.py,
attention_lens/layers/figures.py); the
attention heatmaps come from transformer.interpret.figures (shared with notebooks and exports); the live Translate
view draws in the browser from attention_lens.translate.payload.
"""
from __future__ import annotations

import copy
import math

from attention_lens.shell.texts import said, separators  # a figure's words and numbers in the user's page's language


def axis_words(kind: str, languages: tuple[str, str] | None) -> tuple[str, str]:
    """(what the rows are, what the columns are) of a kind of map, in the model's languages (source, target codes):
    cross-attention's rows are the target being written, its columns the source it reads (assets/shell/lens_maps.js
    axisWords says the same in the browser)."""
    from attention_lens.shell.texts import labels, page_lang
    w = labels(page_lang())  # in the user's page's language (attention_lens/shell/texts/<lang>.toml [label])
    s, t = (w.get(f"lang_{c}", c) for c in languages) if languages else (w["the_source"], w["the_translation"])
    if kind == "encoder_self":
        return w["axis_reading"].format(s=s), w["axis_reads"].format(s=s)
    if kind == "decoder_self":
        return w["axis_written"].format(t=t), w["axis_so_far"].format(t=t)
    return w["axis_written"].format(t=t), w["axis_reads"].format(s=s)


def axis_line(kind: str, languages: tuple[str, str] | None) -> str:
    """'↓ English being written · German it reads →'"""
    rows, cols = axis_words(kind, languages)
    return f"↓ {rows} · {cols} →"


def figure_words(lang: str | None = None) -> dict[str, str]:
    """The words of transformer.interpret.figures' heatmaps (its WORDS: hovers' 'query'/'key'/'weight', titles) in
    the user's page's language (or `lang`), from the catalogue's fig_<word> (the library reads no catalogue)."""
    from transformer.interpret.figures import WORDS
    return {k: said(f"fig_{k}", lang) for k in WORDS}


def with_separators(fig, lang: str | None = None):
    """`fig` (a plotly Figure or its dict; anything else passes) with Plotly's layout `separators` of the user's
    page's language (or `lang`): its ticks and hovers' numbers written 0,5 on the German page."""
    if hasattr(fig, "update_layout"):
        fig.update_layout(separators=separators(lang))
    elif isinstance(fig, dict):
        fig.setdefault("layout", {})["separators"] = separators(lang)
    return fig


def localized_axes(fig):
    """`fig` (a transformer/interpret/figures.py heatmap) with its axes' titles, "keys" and "queries", in the user's
    page's language, and its numbers written as the page writes them (with_separators)."""
    with_separators(fig)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        if axis.title.text in ("keys", "queries"):
            axis.title.text = said(axis.title.text)
    return fig


def with_axes(fig, kind: str, languages: tuple[str, str] | None):
    """An attention figure (transformer.interpret.figures) with its axis line under the title: what its rows and columns
    are."""
    import html
    title = fig.layout.title.text or ""
    localized_axes(fig)
    fig.update_layout(title={"text": f"{title}<br><sup>{html.escape(axis_line(kind, languages))}</sup>"})
    fig.update_layout(margin={"t": max(100, (fig.layout.margin.t or 0) + 20)})
    return fig


def figure(spec: dict):
    import plotly.graph_objects as go
    return with_separators(go.Figure(spec))  # its numbers as the user's page writes them


# -- A phone: a figure drawn for the width the page gives it ----------------------------------------

NARROW = 600  # px: below it the page is a phone's (assets/translate/layout.css), a figure drawn for the width it gets
CHAR = 7.0  # px of a character of the 12 px labels, about
WIDTH_JS = "innerWidth"  # what a tab's js= puts into its hidden width input (see width_input)


def width_input():
    """A hidden number the browser fills with the page's width before an event runs (its js=, with_width)."""
    import gradio as gr
    return gr.Number(0, visible="hidden", label="page width", precision=0)


def with_width(js: str | None, n_inputs: int) -> str:
    """A js= for an event whose last input (of n_inputs) is a width_input: `js` (a function of the inputs, or
    None) first, then the page's width put last."""
    first = f"({js})(...a)" if js else "a"
    return (f"(...a) => {{ const b = {first}; const out = Array.isArray(b) ? b.slice(0, {n_inputs}) : [b]; "
            f"out[{n_inputs - 1}] = {WIDTH_JS}; return out; }}")


def for_width(fig, width, upright=None):
    """`fig` (a plotly Figure or its dict; anything else passes) as drawn for a page `width` px wide: unchanged on a
    wide page. On a phone: the title wrapped to the width in lines of its own, left; labels of 11 px at least,
    thinned where their cells are too small. `upright(d, w, top) -> bool`, a tab's own figures turned for a phone
    (attention_lens/layers/figures.py upright_alignment, attention_lens/beam/figures.py upright_beam: their tokens down
    the screen), says whether it turned `d`; a figure it leaves is drawn as a heatmap."""
    import plotly.graph_objects as go
    d = _redrawn(fig, width, phone=True)
    if d is None:
        return fig
    lay, w = d.setdefault("layout", {}), float(width) - 42  # the plot's box inside Gradio's frame
    top = _narrow_title(lay, w)
    if upright is None or not upright(d, w, top):
        _narrow_heatmap(d, w, top)
    lay["font"] = {**lay.get("font", {}), "size": 12}
    return go.Figure(d)


def _redrawn(fig, width, phone: bool) -> dict | None:
    """A copy of `fig` (a plotly Figure or its dict) as a dict to draw for a page `width` px wide, when that page is a
    phone's (`phone`) or a wide one's; None when it is not, the width is unknown or `fig` is no figure (the caller
    then passes it on as it is). The caller's figure stays as it is."""
    if not isinstance(width, (int, float)) or width <= 0 or (width < NARROW) != phone or \
            not hasattr(fig, "to_dict") and not isinstance(fig, dict):
        return None
    return fig.to_dict() if hasattr(fig, "to_dict") else copy.deepcopy(dict(fig))


PAGE_SIDES = 80  # px of a wide page beside its figures (Gradio's padding and the plots' frames)


def in_box(fig, width, share: float = 1.0):
    """`fig` on a wide page `width` px wide, in a box of `share` of the page's width (0.5: one of two figures side by
    side): its title wrapped to the box in lines of its own, as on a phone, rather than cut at the box's right edge
    (a long German title was); the plot itself unchanged. A phone's figure (for_width) and an unknown width pass."""
    import plotly.graph_objects as go
    d = _redrawn(fig, width, phone=False)
    if d is None:
        return fig
    lay = d.setdefault("layout", {})
    top = _narrow_title(lay, (float(width) - PAGE_SIDES) * share - 42)
    lay["margin"] = {**lay.get("margin", {}), "t": top + 8}
    return go.Figure(d)


def _narrow_title(lay: dict, w: float) -> int:
    """The title in lines that fit `w`, left, under Gradio's label of the plot and Plotly's tool bar (36 px); the
    axis line (with_axes' <sup>) a line of 12 px. The height it takes, in px."""
    import re
    import textwrap
    title = lay.get("title") or {}
    text = title.get("text", "") if isinstance(title, dict) else str(title)
    if not text:
        return 36
    main, _, sub = text.partition("<br><sup>")
    sub = re.sub(r"</sup>$", "", sub)
    lines = textwrap.wrap(main, max(12, int(w / 8.4)))
    subs = textwrap.wrap(sub, max(12, int(w / CHAR)))
    text = "<br>".join(lines + [f'<span style="font-size:12px;color:#444">{s}</span>' for s in subs])
    lay["title"] = {"text": text, "x": 0.02, "xref": "container", "xanchor": "left", "yref": "container",
                    "yanchor": "top", "y": 1, "pad": {"t": 38}, "font": {"size": 15}}
    return 44 + 20 * len(lines) + 16 * len(subs)


def _thin(axis: dict, room: float, per: float) -> None:
    """Every k-th tick label of `axis` (ticktext) so that each has `per` px; the others left blank."""
    text = axis.get("ticktext")
    if not text:
        return
    k = max(1, math.ceil(per / max(room / len(text), 1e-6)))
    axis["ticktext"] = [t if i % k == 0 else "" for i, t in enumerate(text)]
    axis["tickfont"] = {**axis.get("tickfont", {}), "size": 11}


def longest(labels) -> int:
    import re
    return max([len(re.sub(r"&\w+;", "x", str(t))) for t in labels or []] + [1])


def _narrow_heatmap(d: dict, w: float, top: int) -> None:
    """A heatmap with its column labels upright, thinned to 13 px each, its rows at least 18 px, margins for the
    labels, the colour bar slim."""
    lay = d["layout"]
    xs, ys = lay.get("xaxis", {}), lay.get("yaxis", {})
    left = min(w * 0.45, longest(ys.get("ticktext")) * CHAR + 34)
    bottom = min(110, longest(xs.get("ticktext")) * CHAR + 40)
    room = w - left - 60
    cols, rows = max(1, len(xs.get("ticktext") or [1])), max(1, len(ys.get("ticktext") or [1]))
    cell = min(28.0, max(18.0, room / cols))
    _thin(xs, room, 13)
    xs.update(tickangle=-90, automargin=True)
    ys.update(automargin=True)
    for ax in (xs, ys):
        if isinstance(ax.get("title"), dict):
            ax["title"] = {**ax["title"], "font": {"size": 12}}
    lay["xaxis"], lay["yaxis"] = xs, ys
    for t in d.get("data", []):
        if t.get("type") == "heatmap":
            t["colorbar"] = {**t.get("colorbar", {}), "thickness": 10, "tickfont": {"size": 11}}
    lay["margin"] = {"l": left, "r": 10, "t": top + 8, "b": bottom}
    lay["height"] = max(300, int(top + 48 + bottom + rows * cell))  # room left when automargin widens a margin


def swap(d: dict) -> None:
    """Every trace's x and y swapped, y = 1 turned into x = 0 (the alignment's rows become its columns)."""
    for t in d.get("data", []):
        t["x"], t["y"] = t.get("y"), t.get("x")
