"""Plotly figure specs (plain dicts) and compact attention payloads, from numpy arrays + token labels.

No torch, no gradio. The live attention view draws in the browser (assets/lens.js) from the compact
payload built here; the other tabs (Model, Across layers, Beam search, Attention being learned) use the
figures built here.
"""
from __future__ import annotations

import base64
import html

import numpy as np

COLORSCALE = "Viridis"
SPECIALS = ("<s>", "</s>", "<pad>")
KIND_TITLES = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
               "cross": "Cross-attention (decoder → encoder)"}


def label(piece: str) -> str:
    """A piece as safe display text for Plotly: '▁' shown as a visible space marker, tags escaped."""
    return html.escape(piece, quote=False)


def row_labels(target_tokens: list[str], next_piece: str | None = None) -> list[str]:
    """Decoder query rows: 'query → the token this row predicts' (the last row predicts next_piece)."""
    nxt = list(target_tokens[1:]) + [next_piece if next_piece is not None else "?"]
    return [f"{label(q)} → {label(n)}" for q, n in zip(target_tokens, nxt)]


# -- compact arrays: float weights in [0, 1] as base64 uint16 (resolution 1.5e-5)

def encode_array(a: np.ndarray) -> dict:
    a = np.asarray(a, dtype=np.float32)
    q = np.clip(np.rint(a * 65535.0), 0, 65535).astype("<u2")
    return {"shape": list(a.shape), "b64": base64.b64encode(q.tobytes()).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(d["b64"]), dtype="<u2")
    return (q.astype(np.float32) / 65535.0).reshape(d["shape"])


def attention_payload(maps, source_tokens, target_tokens, *, cursor: int, next_piece: str | None = None,
                      forced: list[bool] | None = None, done: bool = False, mode: str = "greedy",
                      doc: str = "") -> dict:
    """Everything the browser needs to draw one step: tokens and the three kinds of maps, compactly."""
    out = {"v": 1, "doc": doc, "mode": mode, "source": list(source_tokens), "target": list(target_tokens),
           "cursor": int(cursor), "next": next_piece, "done": bool(done),
           "forced": list(forced) if forced is not None else [False] * len(target_tokens),
           "maps": {k: encode_array(getattr(maps, k)) for k in ("encoder_self", "decoder_self", "cross")}}
    return out


# -- figures

def _axis(labels, title, reverse=False, size=11):
    ax = {"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": labels, "title": {"text": title},
          "tickfont": {"size": size}, "showgrid": False, "zeroline": False}
    if reverse:
        ax["autorange"] = "reversed"
    return ax


def heatmap_figure(weights: np.ndarray, x_labels: list[str], y_labels: list[str], title: str = "",
                   highlight_row: int | None = None, zmax: float | None = None) -> dict:
    """One attention matrix: rows are queries (y), columns are keys (x). Numeric axes + tick text, so
    repeated pieces never merge into one category."""
    w = np.asarray(weights, dtype=np.float32)
    T, S = w.shape
    if (T, S) != (len(y_labels), len(x_labels)):
        raise ValueError(f"weights {w.shape} do not match {len(y_labels)} row and {len(x_labels)} column labels")
    hover = [[f"query {y_labels[i]}<br>key {x_labels[j]}<br>weight {w[i, j]:.3f}" for j in range(S)] for i in range(T)]
    fig = {"data": [{"type": "heatmap", "z": np.round(w, 4).tolist(), "x": list(range(S)), "y": list(range(T)),
                     "text": hover, "hoverinfo": "text", "colorscale": COLORSCALE, "zmin": 0,
                     "zmax": float(zmax if zmax is not None else max(1e-6, float(w.max(initial=0))))}],
           "layout": {"title": {"text": title}, "xaxis": _axis(x_labels, "keys"), "yaxis": _axis(y_labels, "queries", True),
                      "margin": {"l": 120, "r": 20, "t": 40, "b": 90}}}
    if highlight_row is not None:
        fig["layout"]["shapes"] = [{"type": "rect", "xref": "x", "yref": "y", "x0": -0.5, "x1": S - 0.5,
                                    "y0": highlight_row - 0.5, "y1": highlight_row + 0.5,
                                    "line": {"color": "#ff4136", "width": 2}}]
    return fig


def training_curves(log: dict) -> dict:
    """Loss and BLEU per epoch from a checkpoint's training_log.json."""
    ep = [e["epoch"] for e in log.get("epochs", [])]
    get = lambda k: [e.get(k) for e in log.get("epochs", [])]
    return {"data": [
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("train_loss"), "name": "train loss (smoothed)"},
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("val_loss"), "name": "validation loss"},
        {"type": "scatter", "mode": "lines+markers", "x": ep, "y": get("val_bleu"), "name": "validation BLEU",
         "yaxis": "y2"}],
        "layout": {"xaxis": {"title": {"text": "epoch"}}, "yaxis": {"title": {"text": "loss (nats/token)"}},
                   "yaxis2": {"title": {"text": "BLEU"}, "overlaying": "y", "side": "right"},
                   "legend": {"orientation": "h", "y": -0.25}, "margin": {"t": 30}}}


def beam_tree_figure(result_tree, pieces_of, highlight_path=None) -> dict:
    """A beam search tree (a BeamResult or its .tree: per step a list of nodes with .token, .parent,
    .score, .rank, .alive): x = step, y = rank in the beam (best on top), one line segment from each
    node to its parent. Finished (EOS) nodes are green diamonds; highlight_path, [(step, node index),
    ...] from the root, is drawn thick. pieces_of(id) -> piece text."""
    tree = getattr(result_tree, "tree", result_tree)
    ex, ey = [], []
    groups = {True: {"x": [], "y": [], "text": [], "hover": []}, False: {"x": [], "y": [], "text": [], "hover": []}}
    for step, nodes in enumerate(tree):
        for node in nodes:
            piece, g = label(pieces_of(node.token)), groups[bool(node.alive)]
            g["x"].append(step)
            g["y"].append(node.rank)
            g["text"].append(piece)
            g["hover"].append(f"step {step} · rank {node.rank}<br>{piece}<br>log-prob {node.score:.3f}")
            if node.parent >= 0:
                ex += [step - 1, step, None]
                ey += [tree[step - 1][node.parent].rank, node.rank, None]
    data = [{"type": "scatter", "mode": "lines", "x": ex, "y": ey, "line": {"color": "#bbbbbb", "width": 1},
             "hoverinfo": "skip", "name": "beam"}]
    if highlight_path:
        data.append({"type": "scatter", "mode": "lines", "x": [s for s, _ in highlight_path],
                     "y": [tree[s][i].rank for s, i in highlight_path], "line": {"color": "#ff851b", "width": 5},
                     "hoverinfo": "skip", "name": "chosen hypothesis"})
    for alive, name, marker in ((True, "live", {"symbol": "circle", "size": 10, "color": "#0074d9"}),
                                (False, "finished (EOS)", {"symbol": "diamond", "size": 13, "color": "#2ecc40"})):
        g = groups[alive]
        data.append({"type": "scatter", "mode": "markers+text", "x": g["x"], "y": g["y"], "text": g["text"],
                     "textposition": "top center", "hovertext": g["hover"], "hoverinfo": "text", "marker": marker,
                     "name": name})
    steps = list(range(len(tree)))
    return {"data": data,
            "layout": {"xaxis": {"tickmode": "array", "tickvals": steps, "ticktext": [str(s) for s in steps],
                                 "title": {"text": "step"}, "zeroline": False},
                       "yaxis": {"title": {"text": "rank in beam"}, "autorange": "reversed", "dtick": 1,
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
                       "yaxis": {"tickmode": "array", "tickvals": [0, 1], "ticktext": ["target", "source"],
                                 "range": [-0.6, 1.6], "showgrid": False, "zeroline": False},
                       "margin": {"l": 60, "r": 20, "t": 20, "b": 20}}}
