"""Figures of the other tabs (Model, Beam search, Across layers), as plotly Figures.

The attention heatmaps themselves come from transformer.interpret.figures (shared with notebooks and exports);
the live Translate view draws in the browser from ui.translate.payload.
"""
from __future__ import annotations

import math

import numpy as np

from transformer.interpret.figures import label
from ui.shell.texts import said  # a figure's words in the user's page's language


def axis_words(kind: str, languages: tuple[str, str] | None) -> tuple[str, str]:
    """(what the rows are, what the columns are) of a kind of map, in the model's languages (source, target codes):
    cross-attention's rows are the target being written, its columns the source it reads (assets/lens_maps.js
    axisWords says the same in the browser)."""
    from ui.shell.texts import labels, page_lang
    w = labels(page_lang())  # in the user's page's language (ui/shell/texts/<lang>.toml [label])
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


def localized_axes(fig):
    """`fig` (a transformer/interpret/figures.py heatmap) with its axes' titles, "keys" and "queries", in the user's
    page's language."""
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
    return go.Figure(spec)


def epoch_points(log: dict) -> tuple[list[dict], list[dict]]:
    """(one entry per completed epoch, the pauses) from a training_log.json. An epoch paused and resumed
    (--stop-after-minutes, --resume) is logged twice: first with "paused_at_group" (validated where it paused),
    then when it completed. The point of an epoch is the entry that completed it, its train loss the mean over
    the epoch's parts weighted by their steps (each part's train loss is the mean over its own steps). A pause:
    {"epoch", "x" (epoch - 1 + the share of the epoch's steps done), "step", "of"}; an epoch still paused has
    no point yet."""
    parts: dict = {}
    for e in log.get("epochs", []):
        parts.setdefault(e.get("epoch"), []).append(e)
    step = lambda e, default: e.get("step") if isinstance(e.get("step"), int) else default
    points, pauses, end = [], [], 0  # end: the step the previous epoch ended at
    for epoch in sorted(k for k in parts if isinstance(k, (int, float))):
        rows = parts[epoch]
        done = [e for e in rows if "paused_at_group" not in e]
        last = (done or rows)[-1]
        span = max(1, step(last, end) - end)
        weighted, before = [], end
        for e in rows:
            if "paused_at_group" in e:
                at = step(e, end) - end
                pauses.append({"epoch": epoch, "step": at, "of": span if done else None,
                               "x": epoch - 1 + at / span if done else epoch})
            if e.get("train_loss") is not None and step(e, before) > before:
                weighted.append((step(e, before) - before, e["train_loss"]))
            before = step(e, before)
        if done:
            loss = (round(sum(n * x for n, x in weighted) / sum(n for n, _ in weighted), 4) if weighted
                    else last.get("train_loss"))
            points.append({**last, "train_loss": loss})
        end = step(last, end)
    return points, pauses


def training_curves(log: dict) -> dict:
    """Loss and BLEU per epoch from a checkpoint's training_log.json: one point per epoch (epoch_points), and a
    dotted line where training was paused and resumed."""
    points, pauses = epoch_points(log)
    ep = [e["epoch"] for e in points]
    get = lambda k: [e.get(k) for e in points]
    two = all(e.get("val_bleu_multi30k") is not None and e.get("val_bleu_tatoeba") is not None for e in points)
    bleu = said("curve_bleu_two" if points and two else "curve_bleu")
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": p["x"], "x1": p["x"], "y0": 0, "y1": 1,
               "line": {"dash": "dot", "color": "#999", "width": 1}} for p in pauses]
    notes = [{"x": p["x"], "y": 0.02, "xref": "x", "yref": "paper", "xanchor": "left", "yanchor": "bottom",
              "textangle": -90, "showarrow": False, "text": said("curve_paused").strip(),  # up the line: two close
              "font": {"size": 11, "color": "#777"}} for p in pauses]  # pauses never overprint each other
    return {"data": [
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("train_loss"), "name": said("curve_train")},
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("val_loss"), "name": said("curve_val")},
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("val_bleu"), "name": bleu, "yaxis": "y2"}],
        "layout": {"xaxis": {"title": {"text": said("curve_epoch")}, "dtick": 1},
                   "yaxis": {"title": {"text": said("curve_loss")}},
                   "yaxis2": {"title": {"text": "BLEU"}, "overlaying": "y", "side": "right"},
                   "legend": {"orientation": "h", "y": -0.25}, "margin": {"t": 30}, "shapes": shapes,
                   "annotations": notes}}


def beam_tree_figure(result_tree, pieces_of, highlight_path=None) -> dict:
    """A beam search tree (a BeamResult or its .tree: per step a list of nodes with .token, .parent,
    .score, .rank, .alive): x = step, y = rank in the beam (best on top), one line segment from each
    node to its parent. Ranks are shown from 1 (best), as the hypotheses are numbered; a step can hold more
    nodes than the beam size, since a finished one (EOS, a green diamond) leaves the beam and frees its slot.
    highlight_path, [(step, node index), ...] from the root, is drawn thick. pieces_of(id) -> piece text."""
    tree = getattr(result_tree, "tree", result_tree)
    ex, ey = [], []
    groups = {True: {"x": [], "y": [], "text": [], "hover": []}, False: {"x": [], "y": [], "text": [], "hover": []}}
    for step, nodes in enumerate(tree):
        for node in nodes:
            piece, g = label(pieces_of(node.token)), groups[bool(node.alive)]
            g["x"].append(step)
            g["y"].append(node.rank + 1)
            g["text"].append(piece)
            g["hover"].append(said("beam_hover", step=step, rank=node.rank + 1, piece=piece, score=f"{node.score:.3f}"))
            if node.parent >= 0:
                ex += [step - 1, step, None]
                ey += [tree[step - 1][node.parent].rank + 1, node.rank + 1, None]
    data = [{"type": "scatter", "mode": "lines", "x": ex, "y": ey, "line": {"color": "#bbbbbb", "width": 1},
             "hoverinfo": "skip", "name": said("beam_lines"), "meta": "beam"}]  # meta: the tree in every language
    if highlight_path:
        data.append({"type": "scatter", "mode": "lines", "x": [s for s, _ in highlight_path],
                     "y": [tree[s][i].rank + 1 for s, i in highlight_path], "line": {"color": "#ff851b", "width": 5},
                     "hoverinfo": "skip", "name": said("beam_chosen")})
    for alive, name, marker in ((True, said("beam_live"), {"symbol": "circle", "size": 10, "color": "#0074d9"}),
                                (False, said("beam_finished"), {"symbol": "diamond", "size": 13, "color": "#2ecc40"})):
        g = groups[alive]
        data.append({"type": "scatter", "mode": "markers+text", "x": g["x"], "y": g["y"], "text": g["text"],
                     "textposition": "top center", "hovertext": g["hover"], "hoverinfo": "text", "marker": marker,
                     "name": name})
    steps = list(range(len(tree)))
    return {"data": data,
            "layout": {"xaxis": {"tickmode": "array", "tickvals": steps, "ticktext": [str(s) for s in steps],
                                 "title": {"text": said("step_word")}, "zeroline": False},
                       "yaxis": {"title": {"text": said("beam_place")}, "autorange": "reversed", "dtick": 1,
                                 "zeroline": False},
                       "legend": {"orientation": "h", "y": -0.2}, "margin": {"l": 60, "r": 20, "t": 30, "b": 60}}}


def alignment_figure(align: np.ndarray, source_tokens: list[str], target_tokens: list[str],
                     threshold: float = 0.1) -> dict:
    """Source tokens in a row on top, target tokens in a row below, one line per (t, s) with
    align[t, s] >= threshold, its width and opacity growing with the weight. align is (T, S)."""
    a = np.asarray(align, dtype=np.float64)
    if a.ndim != 2 or a.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(f"alignment {a.shape} does not match {len(target_tokens)} target and "
                         f"{len(source_tokens)} source tokens")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    T, S = a.shape
    width = max(S, T, 2) - 1
    spread = lambda n: np.linspace(0, width, n) if n > 1 else np.full(n, width / 2)  # (n,)
    xs, xt = spread(S), spread(T)  # (S,), (T,)
    src, tgt = [label(p) for p in source_tokens], [label(p) for p in target_tokens]
    data = []
    for t, s in zip(*np.nonzero(a >= threshold)):
        w = min(float(a[t, s]), 1.0)
        hover = f"{tgt[t]} → {src[s]}: {w:.3f}"
        data.append({"type": "scatter", "mode": "lines", "x": [float(xs[s]), float(xt[t])], "y": [1, 0],
                     "line": {"color": "#0074d9", "width": round(1 + 7 * w, 2)}, "opacity": round(0.2 + 0.8 * w, 3),
                     "text": [hover, hover], "hoverinfo": "text", "showlegend": False})
    for name, xv, y, text, pos in (("source", xs, 1, src, "top center"), ("target", xt, 0, tgt, "bottom center")):
        data.append({"type": "scatter", "mode": "markers+text", "x": [float(x) for x in xv], "y": [y] * len(text),
                     "text": text, "textposition": pos, "hoverinfo": "text", "marker": {"size": 6, "color": "#333333"},
                     "name": name, "showlegend": False})
    return {"data": data,
            "layout": {"xaxis": {"visible": False, "range": [-0.5, width + 0.5]},
                       "yaxis": {"tickmode": "array", "tickvals": [0, 1],
                                 "ticktext": [said("align_target"), said("align_source")],
                                 "range": [-0.6, 1.6], "showgrid": False, "zeroline": False},
                       "margin": {"l": 60, "r": 20, "t": 20, "b": 20}}}


# -- A phone (issue 41 item 2): a figure drawn for the width the page gives it ----------------------------------------

NARROW = 600  # px: below it the page is a phone's (assets/layout.css) and a figure is drawn for the width it gets
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


def for_width(fig, width):
    """`fig` (a plotly Figure or its dict; anything else passes) as drawn for a page `width` px wide: unchanged on a
    wide page. On a phone: the title wrapped to the width in lines of its own, left; labels of 11 px at least,
    thinned where their cells are too small; the alignment lines and the beam tree turned upright (their tokens
    down the screen, each label with the width of a column)."""
    import plotly.graph_objects as go
    if not isinstance(width, (int, float)) or not 0 < width < NARROW or not hasattr(fig, "to_dict") and \
            not isinstance(fig, dict):
        return fig
    d = fig.to_dict() if hasattr(fig, "to_dict") else {k: v for k, v in fig.items()}
    lay, w = d.setdefault("layout", {}), float(width) - 42  # the plot's box inside Gradio's frame
    names = {t.get("name") for t in d.get("data", [])}
    top = _narrow_title(lay, w)
    if {"source", "target"} <= names:
        _upright_alignment(d, w, top)
    elif any(t.get("meta") == "beam" for t in d.get("data", [])):  # (its names are the page's language's words)
        _upright_beam(d, w, top)
    else:
        _narrow_heatmap(d, w, top)
    lay["font"] = {**lay.get("font", {}), "size": 12}
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


def _longest(labels) -> int:
    import re
    return max([len(re.sub(r"&\w+;", "x", str(t))) for t in labels or []] + [1])


def _narrow_heatmap(d: dict, w: float, top: int) -> None:
    """A heatmap with its column labels upright, thinned to 13 px each, its rows at least 18 px, margins for the
    labels, the colour bar slim."""
    lay = d["layout"]
    xs, ys = lay.get("xaxis", {}), lay.get("yaxis", {})
    left = min(w * 0.45, _longest(ys.get("ticktext")) * CHAR + 34)
    bottom = min(110, _longest(xs.get("ticktext")) * CHAR + 40)
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


def _swap(d: dict) -> None:
    """Every trace's x and y swapped, y = 1 turned into x = 0 (the alignment's rows become its columns)."""
    for t in d.get("data", []):
        t["x"], t["y"] = t.get("y"), t.get("x")


def _upright_alignment(d: dict, w: float, top: int) -> None:
    """alignment_figure turned upright: the source down the left, the translation down the right, a line from
    each to each; the labels beside their dots; the two rows' names above them."""
    lay, data = d["layout"], d["data"]
    names = (lay.get("yaxis", {}).get("ticktext") or ["target", "source"])[:2]
    _swap(d)
    for t in data:
        t["x"] = [None if v is None else 1 - v for v in t["x"]]
        if t.get("name") in ("source", "target"):
            t["textposition"] = "middle left" if t["name"] == "source" else "middle right"
            t["textfont"] = {"size": 12}
    src, tgt = (next(t for t in data if t.get("name") == n) for n in ("source", "target"))
    lw, rw = (_longest(t.get("text")) * CHAR + 12 for t in (src, tgt))
    scale = min(1.0, 0.72 * w / (lw + rw))
    lw, rw = lw * scale, rw * scale
    span = 1 / (1 - (lw + rw) / w)
    n = max(len(src["y"]), len(tgt["y"]), 2)
    end = max([v for t in data for v in t["y"] if v is not None] + [1])
    lay["xaxis"] = {"visible": False, "range": [-lw / w * span, 1 + rw / w * span], "fixedrange": True}
    lay["yaxis"] = {"visible": False, "range": [end + 0.5, -0.7], "fixedrange": True}
    lay["annotations"] = [{"text": names[1], "x": 0, "xanchor": "left", "xref": "paper", "y": 1, "yref": "paper",
                           "yanchor": "bottom", "showarrow": False, "font": {"size": 12, "color": "#444"}},
                          {"text": names[0], "x": 1, "xanchor": "right", "xref": "paper", "y": 1, "yref": "paper",
                           "yanchor": "bottom", "showarrow": False, "font": {"size": 12, "color": "#444"}}]
    lay["margin"] = {"l": 4, "r": 4, "t": top + 24, "b": 8}
    lay["height"] = int(top + 32 + 30 * n)


def _upright_beam(d: dict, w: float, top: int) -> None:
    """beam_tree_figure turned upright: the steps down the screen, the places across (1, the best, on the left);
    each piece above its dot in odd places and below it in even ones (neighbours never share a line), a step 50 px
    below the one before."""
    lay = d["layout"]
    x_old, y_old = lay.get("xaxis", {}), lay.get("yaxis", {})
    _swap(d)
    places = max([v for t in d["data"] for v in t["x"] if v is not None] + [1])
    for t in d["data"]:
        if "text" in t:
            t["textfont"] = {"size": 12}
            t["textposition"] = ["top center" if round(x) % 2 else "bottom center" for x in t["x"]]
    lay["xaxis"] = {"title": {**y_old.get("title", {}), "font": {"size": 12}}, "side": "top", "dtick": 1,
                    "range": [0.5, places + 0.5], "zeroline": False, "tickfont": {"size": 12}, "fixedrange": True}
    lay["yaxis"] = {**{k: v for k, v in x_old.items() if k in ("tickmode", "tickvals", "ticktext", "title")},
                    "autorange": "reversed", "zeroline": False, "tickfont": {"size": 12}, "fixedrange": True}
    lay["legend"] = {"orientation": "h", "y": 0, "yanchor": "top", "font": {"size": 12}}
    steps = len(x_old.get("tickvals") or []) or 1
    lay["margin"] = {"l": 44, "r": 12, "t": top + 50, "b": 60}
    lay["height"] = int(top + 110 + 50 * steps)
