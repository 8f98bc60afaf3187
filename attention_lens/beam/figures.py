"""The Beam search tab's figure: the beam as a tree, and the same tree upright on a phone."""
from __future__ import annotations

import html

from attention_lens.shell.figures import swap
from attention_lens.shell.texts import number, said  # a figure's words in the user's page's language
from transformer.interpret.figures import label


def beam_tree_figure(result_tree, pieces_of, highlight_path=None) -> dict:
    """A beam search tree (a BeamResult or its .tree: per step a list of nodes with .token, .parent,
    .score, .rank, .alive): x = step, y = rank in the beam (best on top), one line segment from each
    node to its parent. Ranks are shown from 1 (best), as the hypotheses are numbered; a step can hold more
    nodes than the beam size, since a finished one (</s>, a green diamond) leaves the beam and frees its slot.
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
            g["hover"].append(said("beam_hover", step=step, rank=node.rank + 1, piece=piece,
                                   score=number(node.score, 3)))
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
                                (False, html.escape(said("beam_finished"), quote=False),  # Plotly's names are
                                 {"symbol": "diamond", "size": 13, "color": "#2ecc40"})):  # HTML: its </s> shown
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


def upright_beam(d: dict, w: float, top: int) -> bool:
    """beam_tree_figure turned upright: the steps down the screen, the places across (1, the best, on the left);
    each piece above its dot in odd places and below it in even ones (neighbours never share a line), a step 50 px
    below the one before. False (untouched): not a beam_tree_figure (its trace names are the page's language's
    words: its meta says what it is)."""
    if not any(t.get("meta") == "beam" for t in d.get("data", [])):
        return False
    lay = d["layout"]
    x_old, y_old = lay.get("xaxis", {}), lay.get("yaxis", {})
    swap(d)
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
    return True
