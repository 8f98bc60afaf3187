"""Plotly figures of attention maps: one builder for notebooks (`AttentionMaps.figure`) and the app's exports.

Rows are queries, columns are keys. Axes are numeric with tick text, so a piece that occurs twice never
merges into one category; every label is HTML-escaped first (Plotly renders tick text as HTML).
plotly is imported when a figure is built, so the model and the command-line tools never need it.

The words a figure shows (hovers, axis and subplot titles) are `words`, a mapping over WORDS' keys: English unless a
caller passes its own (the app passes its page's language, attention_lens/shell/figures.py figure_words); a hover's
number is
Plotly's own `%{z:.3f}`, written with the layout's `separators` the caller sets. The library reads no catalogue.
"""
from __future__ import annotations

import html

import numpy as np

COLORSCALE = "Viridis"
WORDS = {"query": "query", "key": "key", "weight": "weight", "queries": "queries", "keys": "keys",
         "layer": "layer", "head": "head", "layers": "layers", "heads": "heads", "mean_of_heads": "mean of heads",
         "finished": "(finished)",
         "score": "score", "contribution_share": "contribution share", "masked": "masked", "step": "step",
         "scores_title": "scores q·kᵀ/√d_k", "weights_title": "weights = softmax(masked scores)",
         "contribution_title": "contribution ‖α v W_O‖ (row share)"}
KIND_TITLES = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
               "cross": "Cross-attention"}
WORDS.update(KIND_TITLES)  # a figure's title names its kind of map


def label(piece: str) -> str:
    """A piece as safe display text for Plotly: tags escaped, '▁' kept as the visible word marker."""
    return html.escape(str(piece), quote=False)


def said(words: dict | None) -> dict:
    """WORDS with a caller's `words` over them (a word it leaves out stays English)."""
    return {**WORDS, **(words or {})}


def row_labels(target_tokens: list[str], next_piece: str | None = None, words: dict | None = None) -> list[str]:
    """Decoder query rows: 'query → the token this row predicts' (the last row predicts next_piece). A last
    row of </s> with no next piece is '</s> → (finished)': the model still reads its own </s>, but what it would
    predict then is not used; any other last row with no next piece is '→ ?'."""
    ends = list(target_tokens[-1:]) == ["</s>"]
    last = next_piece if next_piece is not None else (said(words)["finished"] if ends else "?")
    nxt = list(target_tokens[1:]) + [last]
    return [f"{label(q)} → {label(n)}" for q, n in zip(target_tokens, nxt)]


def axis_labels(maps, kind: str, words: dict | None = None) -> tuple[list[str], list[str]]:
    """(key labels, query labels) of one kind of map."""
    src = [label(p) for p in maps.source_tokens] if maps.source_tokens is not None else None
    tgt = list(maps.target_tokens) if maps.target_tokens is not None else None
    shape = maps[kind].shape
    if src is None:
        src = [str(j) for j in range(shape[-1] if kind != "decoder_self" else 0)]
    if tgt is None:
        tgt = [str(i) for i in range(shape[-2] if kind != "encoder_self" else 0)]
    if kind == "encoder_self":
        return src, src
    rows = row_labels(tgt, words=words)
    return ([label(p) for p in tgt] if kind == "decoder_self" else src), rows


def heatmap(weights: np.ndarray, x_labels: list[str], y_labels: list[str], title: str = "",
            highlight_row: int | None = None, zmax: float | None = None, words: dict | None = None):
    """One (T, S) attention matrix as a plotly Figure; `highlight_row` is boxed in red; `words` as WORDS."""
    import plotly.graph_objects as go
    w = np.asarray(weights, dtype=np.float32)
    T, S = w.shape
    if (T, S) != (len(y_labels), len(x_labels)):
        raise ValueError(f"weights {w.shape} do not match {len(y_labels)} row and {len(x_labels)} column labels")
    w_ = said(words)
    fig = go.Figure(_trace(w, x_labels, y_labels, zmax, w_))
    fig.update_layout(title={"text": title}, margin={"l": 120, "r": 20, "t": 40, "b": 90})
    fig.update_xaxes(**_axis(x_labels, w_["keys"]))
    fig.update_yaxes(**_axis(y_labels, w_["queries"]), autorange="reversed")
    if highlight_row is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=S - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line={"color": "#ff4136", "width": 2})
    return fig


def attention_figure(maps, kind: str, layer: int | None = None, head: int | None = None, words: dict | None = None):
    """maps[kind] as a plotly Figure: one heatmap for (layer, head); the mean of heads when head is None;
    the layers × heads grid (one shared colour scale) when layer is None (only `head`'s column if given); `words` as
    WORDS."""
    w = maps[kind]  # (L, H, T, S)
    L, H = w.shape[:2]
    for name, value, n in (("layer", layer, L), ("head", head, H)):
        if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool)
                                  or not 0 <= value < n):
            raise ValueError(f"{name} must be an integer from 0 to {n - 1} or None, got {value!r}")
    x, y = axis_labels(maps, kind, words)
    w_ = said(words)
    if layer is not None:
        z = w[layer].mean(0) if head is None else w[layer, head]  # (T, S)
        which = w_["mean_of_heads"] if head is None else f"{w_['head']} {head + 1}"
        return heatmap(z, x, y, f"{w_[kind]} · {w_['layer']} {layer + 1} · {which}", words=words)
    return _grid(w, x, y, kind, range(H) if head is None else [head], w_)


def _grid(w: np.ndarray, x, y, kind: str, heads, words: dict):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    L, heads = w.shape[0], list(heads)
    fig = make_subplots(rows=L, cols=len(heads), horizontal_spacing=0.02, vertical_spacing=0.04,
                        column_titles=[f"{words['head']} {h + 1}" for h in heads],
                        row_titles=[f"{words['layer']} {l + 1}" for l in range(L)])
    zmax = float(max(1e-6, w[:, heads].max(initial=0)))
    for l in range(L):
        for c, h in enumerate(heads):
            fig.add_trace(_trace(w[l, h], x, y, zmax, words, f"{words['layer']} {l + 1} · {words['head']} {h + 1}<br>",
                                 showscale=(l, c) == (0, 0)), row=l + 1, col=c + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_layout(title={"text": f"{words[kind]}: {L} {words['layers']} × {len(heads)} {words['heads']}"},
                      height=max(400, 220 * L), margin={"l": 40, "r": 60, "t": 80, "b": 20})
    return fig if isinstance(fig, go.Figure) else go.Figure(fig)


def hover(words: dict, what: str, x, y, prefix: str = "") -> dict:
    """A heatmap's hover: its query's and key's labels (the cells' text and customdata), `what` (a WORDS key) and
    the cell's value as Plotly writes it, `%{z:.3f}` with the layout's separators."""
    return {"text": [[q] * len(x) for q in y], "customdata": [list(x) for _ in y],
            "hovertemplate": f"{prefix}{words['query']} %{{text}}<br>{words['key']} %{{customdata}}<br>"
                             f"{words[what]} %{{z:.3f}}<extra></extra>"}


def _trace(w: np.ndarray, x, y, zmax: float | None, words: dict, prefix: str = "", showscale: bool = True):
    import plotly.graph_objects as go
    T, S = w.shape
    return go.Heatmap(z=np.round(w, 4), x=list(range(S)), y=list(range(T)), **hover(words, "weight", x, y, prefix),
                      colorscale=COLORSCALE, zmin=0, showscale=showscale,
                      zmax=float(zmax if zmax is not None else max(1e-6, float(w.max(initial=0)))))


def _axis(labels, title: str) -> dict:
    return {"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": list(labels),
            "title": {"text": title}, "tickfont": {"size": 11}, "showgrid": False, "zeroline": False}


def inside_figure(ins, row: int | None = None, words: dict | None = None):
    """Inside one head (a transformer.interpret.inside.HeadInside) as three heatmaps side by side: the scaled scores
    q·kᵀ/√d_k (masked cells left blank), the weights softmax(masked scores), and the contributions
    ‖α v W_Oʰ‖ with each row normalised to sum to 1; `row` is boxed in red in each; `words` as WORDS."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    x = [label(p) for p in ins.key_tokens]
    y = [label(p) for p in ins.query_tokens]
    w_ = said(words)
    titles = (w_["scores_title"], w_["weights_title"], w_["contribution_title"])
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06, subplot_titles=titles)
    scores = np.where(ins.mask, np.nan, ins.scores)  # (Tq, Tk): a masked key has no score
    finite = scores[np.isfinite(scores)]
    lim = float(np.abs(finite).max()) if finite.size else 1.0
    for c, (z, scale, zmin, zmax, what) in enumerate((
            (scores, "RdBu_r", -lim, lim, "score"), (ins.weights, COLORSCALE, 0.0, 1.0, "weight"),
            (ins.contribution_share(), COLORSCALE, 0.0, 1.0, "contribution_share")), start=1):
        cells = hover(w_, what, x, y)  # a masked key's hover says so; its blank score cell has none
        cells["customdata"] = [[k + (f" ({w_['masked']})" if ins.mask[i, j] else "") for j, k in enumerate(x)]
                               for i in range(len(y))]
        fig.add_trace(go.Heatmap(z=np.round(z, 4), x=list(range(len(x))), y=list(range(len(y))), **cells,
                                 hoverongaps=False, colorscale=scale, zmin=zmin, zmax=zmax, showscale=c != 3,
                                 colorbar={"x": 0.31 if c == 1 else 1.0, "thickness": 10}), row=1, col=c)
        fig.update_xaxes(**_axis(x, w_["keys"]), row=1, col=c)
        fig.update_yaxes(**_axis(y if c == 1 else [""] * len(y), w_["queries"] if c == 1 else ""),
                         autorange="reversed", row=1, col=c)
        if row is not None:
            fig.add_shape(type="rect", x0=-0.5, x1=len(x) - 0.5, y0=row - 0.5, y1=row + 0.5,
                          line={"color": "#ff4136", "width": 2}, row=1, col=c)
    fig.update_layout(title={"text": f"{w_[ins.kind]} · {w_['layer']} {ins.layer + 1} · {w_['head']} {ins.head + 1} · "
                                     f"{w_['step']} {ins.step}: softmax(q·kᵀ/√d_k)·v"},
                      height=max(360, 140 + 20 * len(y)), margin={"l": 120, "r": 40, "t": 80, "b": 90})
    return fig
