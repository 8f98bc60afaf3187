"""How much each attention head matters: the BLEU lost when it alone is switched off (after Michel et al.
2019), and the pruning curve of switching heads off cumulatively, least important first. Part of the head atlas
(transformer.train.atlas).

Importance: `bleu` is the corpus sacreBLEU (cased, `metrics.bleu`) of the intact greedy translations
against the references; for each head, `bleu_ablated` is the same with that head alone switched off
(`translate_batch(..., ablate=[head])`: its output is zeroed before the output projection, in every
forward pass, as `capture.HeadAblation` does) and `bleu_drop` = bleu - bleu_ablated (both rounded to 2
decimals first). `rank` 1 is the head with the largest drop.

Pruning (`pruning_curve`): heads are switched off cumulatively in increasing order of importance
(bleu_drop ascending; ties by kind in the order encoder_self, decoder_self, cross, then layer, then head),
with a greedy BLEU after each removal. The curve starts with the intact model ({"removed": null,
"heads_off": 0}) and its last point is the first removal after which all heads of one kind are off, or
whose BLEU is below PRUNE_STOP_FRACTION (0.5) of the intact BLEU (or the last head of the list): every
point is a full decode of the split, and a model at half its BLEU says little more. `pruning_stop` records
which of these ended the curve (`pruning_stop_text` says it in words).
`prunable_within_1_bleu` is the largest heads_off on the curve whose BLEU is >= intact BLEU - 1.
"""
from __future__ import annotations

import time

from .capture import KINDS, layers_of

PRUNE_STOP_FRACTION = 0.5


def head_key(head) -> tuple:
    """Sort key of a (kind, layer, head) triple: kind in KINDS order, then layer, then head."""
    kind, layer, h = head
    return KINDS.index(kind), layer, h


def all_heads(model) -> list[tuple[str, int, int]]:
    """Every (kind, layer, head) of the model, in KINDS order, then layer, then head."""
    return [(k, l, h) for k in KINDS for l in range(layers_of(model, k)) for h in range(model.config.n_heads)]


def _log(progress, msg: str) -> None:
    if progress:
        progress(msg)


def corpus_bleu(translator, pairs, ablate=None, batch_size: int = 64) -> dict:
    """Greedy-decode the sources of `pairs` with `ablate` heads off -> metrics.bleu against the references."""
    from ..model.metrics import bleu
    hyps = translator.translate_batch([s for s, _ in pairs], batch_size=batch_size, ablate=ablate)
    return bleu(hyps, [t for _, t in pairs])


def importance(translator, pairs, heads=None, batch_size: int = 64, base: dict | None = None,
               progress=print) -> dict:
    """BLEU with each head alone switched off.

    heads: (kind, layer, head) triples (None: every head of the model). base: the intact metrics.bleu
    dict if already computed. -> {"bleu", "bleu_lc", "heads": {(kind, layer, head): {"bleu_ablated",
    "bleu_lc_ablated", "bleu_drop"}}}, bleu_drop = bleu - bleu_ablated.
    """
    heads = all_heads(translator.model) if heads is None else [tuple(h) for h in heads]
    base = base or corpus_bleu(translator, pairs, None, batch_size)
    out = {}
    t0 = time.perf_counter()
    for n, head in enumerate(heads, 1):
        r = corpus_bleu(translator, pairs, [head], batch_size)
        out[head] = {"bleu_ablated": r["bleu"], "bleu_lc_ablated": r["bleu_lc"],
                     "bleu_drop": round(base["bleu"] - r["bleu"], 2)}
        _log(progress, f"  importance {n}/{len(heads)} {head[0]} L{head[1]} H{head[2]}: BLEU {r['bleu']:.2f} "
                       f"(drop {out[head]['bleu_drop']:+.2f})  {time.perf_counter() - t0:.0f} s")
    return {"bleu": base["bleu"], "bleu_lc": base["bleu_lc"], "heads": out}


def pruning_order(drops: dict) -> list[tuple[str, int, int]]:
    """Heads from least to most important: bleu_drop ascending, ties by kind (KINDS order), layer, head.
    drops: {(kind, layer, head): bleu_drop}."""
    return sorted(drops, key=lambda h: (drops[h], head_key(h)))


def pruning_curve(translator, pairs, drops: dict, base_bleu: float | None = None, batch_size: int = 64,
                  stop_fraction: float = PRUNE_STOP_FRACTION, progress=print) -> dict:
    """Switch heads off cumulatively in `pruning_order(drops)`, greedy BLEU after each removal.

    Stops after the removal that leaves some kind with no head on, or whose BLEU is below
    stop_fraction * intact BLEU. -> {"pruning": [{"removed", "heads_off", "bleu"}, ...] (the first point
    is the intact model, removed None), "prunable_within_1_bleu": largest heads_off with BLEU >= intact - 1}.
    """
    if base_bleu is None:
        base_bleu = corpus_bleu(translator, pairs, None, batch_size)["bleu"]
    per_kind: dict[str, int] = {}
    for kind, _, _ in all_heads(translator.model):
        per_kind[kind] = per_kind.get(kind, 0) + 1
    curve = [{"removed": None, "heads_off": 0, "bleu": base_bleu}]
    off: list[tuple] = []
    t0 = time.perf_counter()
    for head in pruning_order(drops):
        off.append(tuple(head))
        b = corpus_bleu(translator, pairs, off, batch_size)["bleu"]
        curve.append({"removed": list(head), "heads_off": len(off), "bleu": b})
        _log(progress, f"  pruning {len(off)} off (+{head[0]} L{head[1]} H{head[2]}): BLEU {b:.2f}  "
                       f"{time.perf_counter() - t0:.0f} s")
        emptied = any(sum(1 for h in off if h[0] == k) == n for k, n in per_kind.items())
        if emptied or b < stop_fraction * base_bleu:
            break
    within = max(p["heads_off"] for p in curve if p["bleu"] >= base_bleu - 1 - 1e-9)
    out = {"pruning": curve, "prunable_within_1_bleu": within, "prune_stop_fraction": stop_fraction}
    return {**out, "pruning_stop": pruning_stop({**out, "bleu": base_bleu, "heads": [
        {"kind": k, "layer": l, "head": h} for k, l, h in all_heads(translator.model)]})}


KIND_WORDS = {"encoder_self": "encoder self-attention", "decoder_self": "decoder self-attention",
              "cross": "cross-attention"}


def pruning_stop(atlas: dict) -> dict | None:
    """Why an atlas's pruning curve ends where it does (also for atlases written before this was recorded):
    {"heads_off", "bleu", "reason": "below_fraction" | "kind_off" | "all_off" | "incomplete", "kinds": the
    kinds with no head left on, "limit": stop fraction * intact BLEU}; None without a curve."""
    curve = atlas.get("pruning") or []
    if len(curve) < 2:
        return None
    fraction = atlas.get("prune_stop_fraction", PRUNE_STOP_FRACTION)
    per_kind: dict[str, int] = {}
    for h in atlas["heads"]:
        per_kind[h["kind"]] = per_kind.get(h["kind"], 0) + 1
    off = [p["removed"][0] for p in curve[1:]]
    emptied = [k for k in KINDS if k in per_kind and off.count(k) == per_kind[k]]
    last, limit = curve[-1], round(fraction * atlas["bleu"], 2)
    reason = ("kind_off" if emptied else "below_fraction" if last["bleu"] < fraction * atlas["bleu"]
              else "all_off" if len(off) == len(atlas["heads"]) else "incomplete")
    return {"heads_off": last["heads_off"], "bleu": last["bleu"], "reason": reason, "kinds": emptied,
            "limit": limit, "fraction": fraction}


def pruning_stop_text(atlas: dict) -> str | None:
    """`pruning_stop` in a sentence for the Head atlas tab."""
    st = pruning_stop(atlas)
    if st is None:
        return None
    n, last = st["heads_off"], atlas["pruning"][-1]["removed"]
    head = f"{KIND_WORDS[last[0]]} layer {last[1] + 1} head {last[2] + 1}"
    if st["reason"] == "kind_off":
        why = (f"switching off {head} left no {' and no '.join(KIND_WORDS[k] for k in st['kinds'])} head on, "
               "where the atlas stops")
    elif st["reason"] == "below_fraction":
        why = (f"switching off {head} too took BLEU to {st['bleu']:.2f}, below {100 * st['fraction']:.0f}% of "
               f"the intact model's {atlas['bleu']:.2f} ({st['limit']:.2f}); the atlas measures no further, "
               "since every point is a full decode of the split")
    elif st["reason"] == "all_off":
        why = "every head is off"
    else:
        return f"The curve ends at {n} heads off (it was stopped early)."
    return f"The curve ends at {n} heads off: {why}."
