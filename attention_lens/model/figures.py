"""The Model tab's figure: loss and BLEU per epoch of the checkpoint's training log."""
from __future__ import annotations

from attention_lens.shell.texts import said  # a figure's words in the user's page's language


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
