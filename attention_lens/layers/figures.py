"""The Across layers tab's figure: the word alignment as lines between the two sentences, upright on a phone."""
from __future__ import annotations

import numpy as np

from attention_lens.shell.figures import CHAR, longest, swap
from attention_lens.shell.texts import number, said  # a figure's words in the user's page's language
from transformer.interpret.figures import label


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
        hover = f"{tgt[t]} → {src[s]}: {number(w, 3)}"
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


def upright_alignment(d: dict, w: float, top: int) -> bool:
    """alignment_figure turned upright: the source down the left, the translation down the right, a line from
    each to each; the labels beside their dots; the two rows' names above them. False (untouched): not an
    alignment_figure (attention_lens/shell/figures.py for_width draws it as a heatmap)."""
    if not {"source", "target"} <= {t.get("name") for t in d.get("data", [])}:
        return False
    lay, data = d["layout"], d["data"]
    names = (lay.get("yaxis", {}).get("ticktext") or ["target", "source"])[:2]
    swap(d)
    for t in data:
        t["x"] = [None if v is None else 1 - v for v in t["x"]]
        if t.get("name") in ("source", "target"):
            t["textposition"] = "middle left" if t["name"] == "source" else "middle right"
            t["textfont"] = {"size": 12}
    src, tgt = (next(t for t in data if t.get("name") == n) for n in ("source", "target"))
    lw, rw = (longest(t.get("text")) * CHAR + 12 for t in (src, tgt))
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
    return True
