"""python -m transformer.atlas --checkpoint checkpoints/de-en --split val

A head atlas: for every attention head, what it does (statistics of its weights and a rule-based role,
after Voita et al. 2019) and how much it matters (the BLEU lost when it alone is switched off, after
Michel et al. 2019), plus a pruning curve. Writes <checkpoint>/head_atlas.json.

What the statistics are computed on
-----------------------------------
The intact model greedy-decodes every sentence of the split (same batching as
`Translator.translate_batch`). Then ONE teacher-forced pass per sentence (`decoding.attend_ids`) runs on
source = the tokenised sentence + </s>, and decoder input = <s> followed by the greedy output without its
last token: exactly the rows that chose the output tokens, so decoder row t is the query that predicted
output token t+1. These are the weights the app shows for a greedy translation (it also shows one more row,
the query at the final </s>, which predicts nothing and is left out here). The reference translation is
not used for statistics (only for BLEU).

Queries and keys, per kind (a[i, j] is the weight of query i on key j; each row sums to 1):
  encoder_self  queries: source positions 0..S-1, keys: source positions 0..S-1 (the last key is </s>);
  decoder_self  queries: decoder positions 1..T-1, keys: positions 0..i (causal). The query at position 0
                (<s>) has a single visible key, its row is 1.0 by construction, and it is skipped;
  cross         queries: decoder positions 0..T-1, keys: source positions 0..S-1.
Every statistic below is POOLED over the split: a sum over all counted queries of all sentences divided by
the number of those queries (long sentences weigh more, as in a corpus BLEU).

  confidence         mean over queries of max_j a[i, j]                                   (Voita et al.)
  entropy            mean over queries of -sum_j a[i, j] ln a[i, j], in nats (0 ln 0 = 0)
  share_same         mean over queries of a[i, i]                                  (self kinds; cross: null)
  share_previous     mean of a[i, i-1] over the queries that have a previous key (i >= 1)   (cross: null)
  share_next         mean of a[i, i+1] over the queries that have a next key (i <= S-2); encoder_self only:
                     decoder_self cannot see the next position (causal mask) and cross has no positions
                     in common with its queries, so both are null
  share_bos          mean over queries of the weight on keys whose piece is <s> (0 where there is none:
                     only decoder_self has an <s> key)
  share_eos          mean over queries of the weight on keys whose piece is </s>
  share_punctuation  mean over queries of the weight on punctuation keys: pieces that, with the
                     SentencePiece word marker removed, are non-empty and made only of Unicode punctuation
                     (category P*), e.g. '.', ',', '▁"', '▁('; special pieces are never punctuation
  distance           self kinds: mean over queries of sum_j a[i, j] |i - j|, in positions;
                     cross: mean over queries of sum_j a[i, j] |j - d_i|, with d_i = i (S-1)/(T-1) the
                     diagonal from (first query, first source piece) to (last query, </s>); d_0 = 0 if T = 1
  monotonicity       cross only (null for self kinds): per sentence, take each query's argmax source
                     position (first one on ties), drop the queries whose argmax is </s>, and count the
                     consecutive pairs of the remaining queries whose argmax does not decrease; pooled:
                     non-decreasing pairs / all pairs over the split (null if there is no pair)

Importance: `bleu` is the corpus sacreBLEU (cased, `metrics.bleu`) of the intact greedy translations
against the references; for each head, `bleu_ablated` is the same with that head alone switched off
(`translate_batch(..., ablate=[head])`: its output is zeroed before the output projection, in every
forward pass, as `capture.HeadAblation` does) and `bleu_drop` = bleu - bleu_ablated (both rounded to 2
decimals first). `rank` 1 is the head with the largest drop.

Roles (`assign_role`): rules, not a classifier. The first rule that holds wins, in this order
(a statistic that is null never satisfies a rule):
  1 previous-token  share_previous >= POSITIONAL_SHARE (0.5)
  2 next-token      share_next >= POSITIONAL_SHARE (0.5)
  3 self            share_same >= POSITIONAL_SHARE (0.5)
  4 no-op           share_bos + share_eos >= NOOP_SHARE (0.5)
  5 punctuation     share_punctuation >= PUNCTUATION_SHARE (0.5)
  6 alignment       cross only: monotonicity >= ALIGNMENT_MONOTONICITY (0.75)
                    and confidence >= ALIGNMENT_CONFIDENCE (0.4)
  7 diffuse         confidence < DIFFUSE_CONFIDENCE (0.3)
  8 mixed           none of the above
The thresholds were fixed before looking at the shipped checkpoint's numbers.

Pruning (`pruning_curve`): heads are switched off cumulatively in increasing order of importance
(bleu_drop ascending; ties by kind in the order encoder_self, decoder_self, cross, then layer, then head),
with a greedy BLEU after each removal. The curve starts with the intact model ({"removed": null,
"heads_off": 0}) and its last point is the first removal after which all heads of one kind are off, or
whose BLEU is below PRUNE_STOP_FRACTION (0.5) of the intact BLEU (or the last head of the list).
`prunable_within_1_bleu` is the largest heads_off on the curve whose BLEU is >= intact BLEU - 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np

from .analysis import SPECIALS, WORD_START
from .capture import KINDS, AttentionMaps

# -- role thresholds (documented above; the README quotes them)
POSITIONAL_SHARE = 0.5
NOOP_SHARE = 0.5
PUNCTUATION_SHARE = 0.5
ALIGNMENT_MONOTONICITY = 0.75
ALIGNMENT_CONFIDENCE = 0.4
DIFFUSE_CONFIDENCE = 0.3
ROLE_RULES = (  # (role, rule), in the order they are tried
    ("previous-token", f"share_previous >= {POSITIONAL_SHARE}"),
    ("next-token", f"share_next >= {POSITIONAL_SHARE}"),
    ("self", f"share_same >= {POSITIONAL_SHARE}"),
    ("no-op", f"share_bos + share_eos >= {NOOP_SHARE}"),
    ("punctuation", f"share_punctuation >= {PUNCTUATION_SHARE}"),
    ("alignment", f"cross and monotonicity >= {ALIGNMENT_MONOTONICITY} and confidence >= {ALIGNMENT_CONFIDENCE}"),
    ("diffuse", f"confidence < {DIFFUSE_CONFIDENCE}"),
    ("mixed", "otherwise"),
)
ROLES = tuple(r for r, _ in ROLE_RULES)
PRUNE_STOP_FRACTION = 0.5
DECIMALS = 4
ATLAS = "head_atlas.json"
STATS = ("confidence", "entropy", "share_same", "share_previous", "share_next", "share_bos", "share_eos",
         "share_punctuation", "distance", "monotonicity")


def is_punctuation(piece: str) -> bool:
    s = piece.replace(WORD_START, "")
    return piece not in SPECIALS and bool(s) and all(unicodedata.category(c).startswith("P") for c in s)


def head_key(head) -> tuple:
    """Sort key of a (kind, layer, head) triple: kind in KINDS order, then layer, then head."""
    kind, layer, h = head
    return KINDS.index(kind), layer, h


def all_heads(model) -> list[tuple[str, int, int]]:
    """Every (kind, layer, head) of the model, in KINDS order, then layer, then head."""
    layers = {"encoder_self": len(model.encoder), "decoder_self": len(model.decoder), "cross": len(model.decoder)}
    return [(k, l, h) for k in KINDS for l in range(layers[k]) for h in range(model.config.n_heads)]


# ----------------------------------------------------------------------------------------------------
# Statistics (numpy only)

class _Sums:
    """Pooled sums of one kind: (L, H) arrays of weighted sums and plain query counts."""

    def __init__(self, shape):
        self.s = {name: np.zeros(shape) for name in STATS if name != "monotonicity"}
        self.mono_up, self.mono_pairs = np.zeros(shape), np.zeros(shape)
        self.n = {"queries": 0, "previous": 0, "next": 0}


def _add(kind: str, acc: _Sums, a: np.ndarray, keys: list[str]) -> None:
    """Add one sentence's weights a (L, H, Q, K) of one kind, with key pieces `keys`, to acc."""
    Q, K = a.shape[-2:]
    if len(keys) != K:
        raise ValueError(f"{kind}: {K} keys in the weights but {len(keys)} key pieces")
    pos = np.arange(Q)
    q = pos[1:] if kind == "decoder_self" else (pos if K > 1 else pos[:0])  # counted queries
    w = a[:, :, q, :]  # (L, H, n, K)
    s = acc.s
    acc.n["queries"] += len(q)
    s["confidence"] += w.max(-1, initial=0.0).sum(-1)
    s["entropy"] -= np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0).sum((-1, -2))
    keys = np.asarray(keys, dtype=object)
    for name, mask in (("share_bos", keys == "<s>"), ("share_eos", keys == "</s>"),
                       ("share_punctuation", np.array([is_punctuation(p) for p in keys], dtype=bool))):
        s[name] += w[..., mask].sum((-1, -2)) if mask.any() else 0.0
    col = np.arange(K)
    if kind == "cross":
        diag = q * (K - 1) / (Q - 1) if Q > 1 else np.zeros(len(q))  # (n,)
        s["distance"] += (w * np.abs(col[None, :] - diag[:, None])).sum((-1, -2))
        arg = w.argmax(-1)  # (L, H, n)
        eos = keys == "</s>"
        for l in range(a.shape[0]):
            for h in range(a.shape[1]):
                seq = arg[l, h][~eos[arg[l, h]]]
                acc.mono_up[l, h] += int((np.diff(seq) >= 0).sum())
                acc.mono_pairs[l, h] += max(len(seq) - 1, 0)
        return
    s["distance"] += (w * np.abs(q[:, None] - col[None, :])).sum((-1, -2))
    s["share_same"] += a[:, :, q, q].sum(-1)
    qp = q[q >= 1]
    s["share_previous"] += a[:, :, qp, qp - 1].sum(-1)
    acc.n["previous"] += len(qp)
    if kind == "encoder_self":
        qn = q[q <= K - 2]
        s["share_next"] += a[:, :, qn, qn + 1].sum(-1)
        acc.n["next"] += len(qn)


def _means(kind: str, acc: _Sums) -> dict:
    """(layer, head) -> {statistic: pooled mean or None}."""
    def div(x, n):
        return None if n == 0 else round(float(x) / float(n), DECIMALS)

    L, H = acc.mono_pairs.shape
    out = {}
    for l in range(L):
        for h in range(H):
            n = acc.n["queries"]
            st = {name: div(acc.s[name][l, h], n) for name in STATS if name != "monotonicity"}
            if kind == "cross":
                st["share_same"] = st["share_previous"] = st["share_next"] = None
                st["monotonicity"] = div(acc.mono_up[l, h], acc.mono_pairs[l, h])
            else:
                st["share_previous"] = div(acc.s["share_previous"][l, h], acc.n["previous"])
                st["share_next"] = div(acc.s["share_next"][l, h], acc.n["next"]) if kind == "encoder_self" else None
                st["monotonicity"] = None
            out[(l, h)] = {name: st[name] for name in STATS}
    return out


def head_statistics(maps_list, source_tokens_list=None, target_tokens_list=None) -> dict:
    """Pooled statistics of every head over sentences (see the module docstring for the definitions).

    maps_list: AttentionMaps (any iterable, consumed once): encoder_self (L_enc, H, S, S), decoder_self
    (L_dec, H, T, T), cross (L_dec, H, T, S); rows are the counted queries' distributions.
    source_tokens_list / target_tokens_list: the S source pieces and T decoder-input pieces (starting with
    <s>) of each sentence; None: each maps' own source_tokens / target_tokens.
    -> {(kind, layer, head): {statistic: float or None}}
    """
    srcs = iter(source_tokens_list) if source_tokens_list is not None else None
    tgts = iter(target_tokens_list) if target_tokens_list is not None else None
    acc: dict[str, _Sums] = {}
    sentences = 0
    for maps in maps_list:
        src = next(srcs) if srcs is not None else maps.source_tokens
        tgt = next(tgts) if tgts is not None else maps.target_tokens
        if src is None or tgt is None:
            raise ValueError("source and target pieces are needed for every sentence")
        for kind, keys in (("encoder_self", src), ("decoder_self", tgt), ("cross", src)):
            a = np.asarray(maps[kind], dtype=np.float64)
            if a.ndim != 4:
                raise ValueError(f"{kind} weights must be (L, H, Q, K), got shape {a.shape}")
            queries = src if kind == "encoder_self" else tgt
            if a.shape[-2] != len(queries):
                raise ValueError(f"{kind}: {a.shape[-2]} query rows but {len(queries)} query pieces")
            if kind not in acc:
                acc[kind] = _Sums(a.shape[:2])
            elif acc[kind].mono_pairs.shape != a.shape[:2]:
                raise ValueError(f"{kind}: sentences disagree on (layers, heads)")
            _add(kind, acc[kind], a, list(keys))
        sentences += 1
    if not sentences:
        raise ValueError("no sentences")
    return {(kind, l, h): st for kind in KINDS for (l, h), st in _means(kind, acc[kind]).items()}


def assign_role(kind: str, stats: dict) -> str:
    """The first rule of ROLE_RULES that holds (see the module docstring)."""
    def ge(name, t):
        v = stats.get(name)
        return v is not None and v >= t

    if ge("share_previous", POSITIONAL_SHARE):
        return "previous-token"
    if ge("share_next", POSITIONAL_SHARE):
        return "next-token"
    if ge("share_same", POSITIONAL_SHARE):
        return "self"
    if (stats.get("share_bos") or 0.0) + (stats.get("share_eos") or 0.0) >= NOOP_SHARE:
        return "no-op"
    if ge("share_punctuation", PUNCTUATION_SHARE):
        return "punctuation"
    if kind == "cross" and ge("monotonicity", ALIGNMENT_MONOTONICITY) and ge("confidence", ALIGNMENT_CONFIDENCE):
        return "alignment"
    conf = stats.get("confidence")
    if conf is not None and conf < DIFFUSE_CONFIDENCE:
        return "diffuse"
    return "mixed"


# ----------------------------------------------------------------------------------------------------
# Decoding: BLEU with heads switched off, and the teacher-forced maps the statistics read

def _log(progress, msg: str) -> None:
    if progress:
        progress(msg)


def corpus_bleu(translator, pairs, ablate=None, batch_size: int = 64) -> dict:
    """Greedy-decode the sources of `pairs` with `ablate` heads off -> metrics.bleu against the references."""
    from .metrics import bleu
    hyps = translator.translate_batch([s for s, _ in pairs], batch_size=batch_size, ablate=ablate)
    return bleu(hyps, [t for _, t in pairs])


def greedy_ids(translator, texts: list[str], batch_size: int = 64) -> list[list[int]]:
    """The intact model's greedy output ids per text (in input order), batched as translate_batch does."""
    srcs = [translator.source_ids(t) for t in texts]
    order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
    out: list[list[int]] = [[] for _ in srcs]
    for b in range(0, len(order), batch_size):
        idx = order[b:b + batch_size]
        for i, ids in zip(idx, translator.translate_ids([srcs[i] for i in idx])):
            out[i] = ids
    return out


def teacher_forced_maps(translator, texts: list[str], outputs: list[list[int]]):
    """Yield AttentionMaps (with pieces) of one teacher-forced pass per sentence: source + </s>, decoder
    input <s> + output[:-1] (the rows that chose the output tokens)."""
    from .decoding import attend_ids
    tok = translator.tokenizer
    for text, out in zip(texts, outputs):
        src = translator.source_ids(text)
        tgt = [translator.config.bos_id] + list(out[:-1])
        maps = attend_ids(translator.model, src, tgt)
        maps.source_tokens, maps.target_tokens = tok.pieces(src), tok.pieces(tgt)
        yield maps


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
    return {"pruning": curve, "prunable_within_1_bleu": within}


def build_atlas(translator, pairs, batch_size: int = 64, split: str | None = None, prune: bool = True,
                progress=print) -> dict:
    """Everything in head_atlas.json (see the module docstring)."""
    t_start = time.perf_counter()
    timing = {}
    texts = [s for s, _ in pairs]
    if not texts:
        raise ValueError("no sentences")
    t0 = time.perf_counter()
    base = corpus_bleu(translator, pairs, None, batch_size)
    _log(progress, f"intact greedy BLEU {base['bleu']:.2f} ({len(texts)} sentences)")
    outputs = greedy_ids(translator, texts, batch_size)
    stats = head_statistics(teacher_forced_maps(translator, texts, outputs))
    timing["statistics"] = round(time.perf_counter() - t0, 1)
    _log(progress, f"statistics: one teacher-forced pass per sentence  {timing['statistics']:.0f} s")
    src_lens = [len(translator.source_ids(t)) for t in texts]
    queries = {"encoder_self": sum(n for n in src_lens if n > 1), "decoder_self": sum(len(o) - 1 for o in outputs),
               "cross": sum(len(o) for o in outputs)}

    t0 = time.perf_counter()
    imp = importance(translator, pairs, None, batch_size, base, progress)
    timing["importance"] = round(time.perf_counter() - t0, 1)
    ranked = sorted(imp["heads"], key=lambda h: (-imp["heads"][h]["bleu_drop"], head_key(h)))
    rank = {h: i for i, h in enumerate(ranked, 1)}

    heads = []
    for head in all_heads(translator.model):
        kind, layer, h = head
        st = stats[head]
        entry = {"kind": kind, "layer": layer, "head": h, "role": assign_role(kind, st),
                 "bleu_ablated": imp["heads"][head]["bleu_ablated"], "bleu_drop": imp["heads"][head]["bleu_drop"],
                 "rank": rank[head]}
        entry.update(st)
        heads.append(entry)

    atlas = {"split": split, "sentences": len(texts), "bleu": base["bleu"], "bleu_lc": base["bleu_lc"],
             "statistics_on": "greedy output of the intact model (teacher-forced, one pass per sentence)",
             "queries": queries, "role_rules": [{"role": r, "rule": rule} for r, rule in ROLE_RULES],
             "heads": heads}
    if prune:
        t0 = time.perf_counter()
        atlas.update(pruning_curve(translator, pairs, {h: imp["heads"][h]["bleu_drop"] for h in imp["heads"]},
                                   base["bleu"], batch_size, progress=progress))
        timing["pruning"] = round(time.perf_counter() - t0, 1)
    atlas["seconds"] = round(time.perf_counter() - t_start, 1)
    atlas["timing"] = timing
    return atlas


def write_json(path: Path, obj) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv=None) -> dict:
    from . import data as D
    from .checkpoint import DEFAULT_CHECKPOINT
    from .evaluate import load_model_and_split
    from .metrics import read_metrics
    from .device import describe

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--split", default="val", choices=D.SPLITS)
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--out", help=f"output file (default: <checkpoint>/{ATLAS})")
    p.add_argument("--device", default="auto")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--limit", type=int, help="only the first N sentences of the split")
    a = p.parse_args(argv)
    if a.batch_size < 1:
        p.error("--batch-size must be at least 1")
    if a.limit is not None and a.limit < 1:
        p.error("--limit must be at least 1")
    tr, pairs = load_model_and_split(a.checkpoint, a.device, a.data_dir, a.split, a.threads)
    if a.limit is not None:
        pairs = pairs[:a.limit]
    out = Path(a.out) if a.out else Path(a.checkpoint) / ATLAS
    print(f"head atlas: {a.checkpoint}, {a.split} ({len(pairs)} sentences), {describe(tr.device)}", flush=True)
    atlas = build_atlas(tr, pairs, a.batch_size, a.split, progress=lambda m: print(m, flush=True))
    weights = read_metrics(a.checkpoint).get("weights")
    if weights:
        atlas["checkpoint_weights"] = weights
    write_json(out, atlas)
    print(f"wrote {out}: intact BLEU {atlas['bleu']:.2f}, "
          f"{atlas.get('prunable_within_1_bleu', '?')} heads prunable within 1 BLEU; total {atlas['seconds']:.0f} s")
    return atlas


if __name__ == "__main__":
    main()
