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
  share_bos          mean over queries of the weight on keys whose piece is <s> (decoder_self only: the
                     other kinds have no <s> key, and their share_bos is null)
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
The argmax statistics (after Voita et al.'s positional and rare-token heads) are the fraction of queries
whose STRONGEST key (argmax_j a[i, j]; k keys tied for the maximum count 1/k each) is the key named:
  argmax_previous     i-1, over the queries that have a previous key (self kinds; cross: null)
  argmax_next         i+1, over the queries that have a next key (encoder_self only, as share_next)
  argmax_same         i (self kinds; cross: null)
  argmax_boundary     a key whose piece is <s> or </s> (a "sink"), over all queries
  argmax_punctuation  a punctuation key, over all queries
  argmax_rarest       the rarest candidate key: candidates are the visible keys that are neither special
                      pieces nor punctuation (and, for self kinds, not the query's own position); rarest =
                      lowest SentencePiece score (`piece_scores`: the unigram log-probability), the first
                      on ties; over the queries with at least two candidates (null without scores)
  agreement           cross only: the key that the sum of every OTHER cross head's row (all layers)
                      puts most weight on, over all queries (ties on both sides: the chance that a pick
                      among the head's and one among the others' coincide): agreement with the model's own
                      alignment, leaving the head out (null with a single cross head)
`chance` (in the JSON, per kind): the value each statistic has for a head that spreads its weight evenly over
the keys it can see (all of them tied for strongest), e.g. argmax_previous's chance is the mean over its
counted queries of 1 / (number of visible keys); agreement's is the mean of 1 / S (a key picked at random);
monotonicity's is null.

Importance: `bleu` is the corpus sacreBLEU (cased, `metrics.bleu`) of the intact greedy translations
against the references; for each head, `bleu_ablated` is the same with that head alone switched off
(`translate_batch(..., ablate=[head])`: its output is zeroed before the output projection, in every
forward pass, as `capture.HeadAblation` does) and `bleu_drop` = bleu - bleu_ablated (both rounded to 2
decimals first). `rank` 1 is the head with the largest drop.

Roles (`assign_role`): rules, not a classifier, all in ONE table, `ROLE_RULES` (a tuple of `Rule(name,
label, kinds, statistic, op, threshold, description)`), which both `assign_role` and the Head atlas tab's
legend (`legend`) read; the JSON records the table as `role_rules`. A rule applies to the kinds it names and
holds when its statistic passes its threshold (a null statistic never does). Of the rules that hold, the one
passed by the largest ratio wins (statistic / threshold; for "<" threshold / statistic), the first in the
table on ties; a head no rule holds for is "mixed" (`role_reason` names the rule it comes nearest to).
Thresholds sit in gaps of the statistics' distribution on the shipped checkpoint (docs/training.md).

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

import argparse
import json
import os
import sys
import time
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .analysis import SPECIALS, WORD_START
from .capture import KINDS, AttentionMaps

# -- role thresholds: ROLE_RULES below (the README quotes them)
PRUNE_STOP_FRACTION = 0.5
DECIMALS = 4
ATLAS = "head_atlas.json"
MIXED = "mixed"
BOUNDARY = ("<s>", "</s>")

# Every statistic of a head, in the order the JSON lists them: (name, short, words, unit). The words (and the
# short form, used where several statistics of a group share a line) are what the Head atlas tab shows; the
# unit says how a value reads: "queries" and "pairs" are fractions of those, "weight" a mean attention weight
# (0..1), "nats" and "pieces" plain numbers.
STAT_TABLE = (
    ("confidence", "largest weight", "largest weight of a row, on average", "weight"),
    ("entropy", "entropy", "spread of a row (entropy)", "nats"),
    ("share_same", "own position", "weight on its own position", "weight"),
    ("share_previous", "previous", "weight on the previous piece", "weight"),
    ("share_next", "next", "weight on the next piece", "weight"),
    ("share_bos", "<s>", "weight on <s>", "weight"),
    ("share_eos", "</s>", "weight on </s>", "weight"),
    ("share_punctuation", "punctuation", "weight on punctuation", "weight"),
    ("distance", "distance", "distance to the keys it weighs (cross: from the diagonal)", "pieces"),
    ("monotonicity", "monotone", "strongest source piece moves forward or stays", "pairs"),
    ("argmax_previous", "previous", "strongest key is the previous piece", "queries"),
    ("argmax_next", "next", "strongest key is the next piece", "queries"),
    ("argmax_same", "own piece", "strongest key is its own piece", "queries"),
    ("argmax_boundary", "<s> or </s>", "strongest key is <s> or </s>", "queries"),
    ("argmax_punctuation", "punctuation", "strongest key is punctuation", "queries"),
    ("argmax_rarest", "rarest piece", "strongest key is the rarest word piece in view", "queries"),
    ("agreement", "agrees", "strongest source piece is the one the other cross heads pick", "queries"),
)
STATS = tuple(row[0] for row in STAT_TABLE)
STAT_SHORT = {name: short for name, short, _, _ in STAT_TABLE}
STAT_WORDS = {name: words for name, _, words, _ in STAT_TABLE}
STAT_UNITS = {name: unit for name, _, _, unit in STAT_TABLE}


def fmt_stat(name: str, value) -> str:
    """A statistic's value in words' units: '36% of queries', '0.07', '1.79 nats', '4.3 pieces'; None: 'n/a'."""
    if value is None:
        return "n/a"
    unit = STAT_UNITS[name]
    if unit in ("queries", "pairs"):
        return f"{100 * value:.0f}% of {unit}"
    return {"weight": f"{value:.2f}", "nats": f"{value:.2f} nats", "pieces": f"{value:.1f} pieces"}[unit]


@dataclass(frozen=True)
class Rule:
    """One role: a head of one of `kinds` whose `statistic` is `op` (">=" or "<") `threshold` may have it."""

    name: str  # the role
    label: str  # its short form in the atlas grid's cells
    kinds: tuple  # the attention kinds it applies to
    statistic: str  # a name of STATS
    op: str
    threshold: float  # > 0
    description: str  # what such a head does, in words (the tab's legend)

    def __post_init__(self):
        if self.statistic not in STATS or self.op not in (">=", "<") or not self.threshold > 0 \
                or not self.kinds or not set(self.kinds) <= set(KINDS):
            raise ValueError(f"not a valid role rule: {self}")

    def holds(self, value) -> bool:
        return value is not None and (value >= self.threshold if self.op == ">=" else value < self.threshold)

    def ratio(self, value: float) -> float:
        """How far the value is towards (below 1) or past (above 1) the threshold."""
        if self.op == ">=":
            return value / self.threshold
        return self.threshold / value if value > 0 else float("inf")

    @property
    def text(self) -> str:
        """The rule in words, e.g. 'strongest key is the previous piece: ≥ 33% of queries'."""
        return f"{STAT_WORDS[self.statistic]}: {'≥' if self.op == '>=' else '<'} {fmt_stat(self.statistic, self.threshold)}"


SELF_KINDS = ("encoder_self", "decoder_self")
# THE table of roles: assign_role and the Head atlas tab's legend both read it. Names after Voita et al. 2019
# where one fits. Thresholds sit in gaps of the shipped checkpoint's distribution (docs/training.md, "Head atlas").
ROLE_RULES = (
    Rule("previous-token", "prev", SELF_KINDS, "argmax_previous", ">=", 0.36,
         "positional: looks at the piece just before its own"),
    Rule("next-token", "next", ("encoder_self",), "argmax_next", ">=", 0.33,
         "positional: looks at the piece just after its own (the decoder cannot see ahead)"),
    Rule("same-token", "same", SELF_KINDS, "argmax_same", ">=", 0.36, "positional: looks at its own piece"),
    Rule("sink", "sink", KINDS, "argmax_boundary", ">=", 0.5,
         "parks its attention on </s> (or <s>, the decoder's only boundary key): close to doing nothing"),
    Rule("punctuation", "punct", KINDS, "argmax_punctuation", ">=", 0.5, "looks at punctuation"),
    Rule("rare-token", "rare", ("encoder_self", "cross"), "argmax_rarest", ">=", 0.2,
         "looks at the sentence's rarest word piece (lowest probability in the tokenizer)"),
    Rule("alignment", "align", ("cross",), "agreement", ">=", 0.52,
         "looks at the source piece being translated: the one the other cross heads pick too"),
    Rule("diffuse", "diffuse", KINDS, "confidence", "<", 0.3, "spreads its weight over many keys"),
)
ROLES = tuple(r.name for r in ROLE_RULES) + (MIXED,)
MIXED_DESCRIPTION = "no rule holds (hover names the nearest)"


def is_punctuation(piece: str) -> bool:
    s = piece.replace(WORD_START, "")
    return piece not in SPECIALS and bool(s) and all(unicodedata.category(c).startswith("P") for c in s)


def piece_scores(tokenizer) -> dict:
    """{piece: score}: SentencePiece's per-piece score (a unigram model's log-probability: lower = rarer)."""
    return {tokenizer.piece(i): tokenizer.sp.get_score(i) for i in range(len(tokenizer))}


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
    """Pooled sums of one kind: per statistic an (L, H) sum over queries, the number of queries it counts
    (the same for every head) and the sum a head choosing uniformly among its visible keys would get
    (`chance`); monotonicity counts pairs, which differ per head."""

    def __init__(self, shape):
        self.s = {name: np.zeros(shape) for name in STATS}
        self.n = dict.fromkeys(STATS, 0)
        self.c = dict.fromkeys(STATS, 0.0)
        self.pairs = np.zeros(shape)


def _masks(kind: str, q: np.ndarray, keys: list[str], scores) -> dict:
    """{statistic: (keys of interest (n, K) bool, counted queries (n,) bool)} of one sentence."""
    n, K = len(q), len(keys)
    col = np.arange(K)
    vis = col[None, :] <= q[:, None] if kind == "decoder_self" else np.ones((n, K), bool)  # (n, K)
    every = np.ones(n, bool)

    def on(pred):  # (n, K): the visible keys whose piece satisfies pred
        return np.array([pred(p) for p in keys], dtype=bool)[None, :] & vis

    punct = on(is_punctuation)
    m = {"share_eos": (on(lambda p: p == "</s>"), every),
         "share_punctuation": (punct, every), "argmax_punctuation": (punct, every),
         "argmax_boundary": (on(lambda p: p in BOUNDARY), every)}
    same = col[None, :] == q[:, None]  # (n, K)
    if kind == "decoder_self":  # the only kind with an <s> key
        m["share_bos"] = (on(lambda p: p == "<s>"), every)
    if kind != "cross":
        m["share_same"] = m["argmax_same"] = (same, every)
        m["share_previous"] = m["argmax_previous"] = (col[None, :] == q[:, None] - 1, q >= 1)
        if kind == "encoder_self":
            m["share_next"] = m["argmax_next"] = (col[None, :] == q[:, None] + 1, q <= K - 2)
    if scores is not None:
        cand = on(lambda p: p not in SPECIALS and not is_punctuation(p)) & (~same if kind != "cross" else True)
        sc = np.where(cand, np.array([scores.get(p, -np.inf) for p in keys])[None, :], np.inf)  # (n, K)
        ok = cand.sum(1) >= 2  # a rarest piece among at least two candidates
        rarest = np.zeros((n, K), bool)
        rarest[np.arange(n), sc.argmin(1)] = ok
        m["argmax_rarest"] = (rarest, ok)
    return m


def _add(kind: str, acc: _Sums, a: np.ndarray, keys: list[str], scores=None) -> None:
    """Add one sentence's weights a (L, H, Q, K) of one kind, with key pieces `keys`, to acc."""
    Q, K = a.shape[-2:]
    if len(keys) != K:
        raise ValueError(f"{kind}: {K} keys in the weights but {len(keys)} key pieces")
    pos = np.arange(Q)
    q = pos[1:] if kind == "decoder_self" else (pos if K > 1 else pos[:0])  # counted queries (n,)
    n, col = len(q), np.arange(K)
    if not n:
        return
    w = a[:, :, q, :]  # (L, H, n, K)
    arg = w.argmax(-1)  # (L, H, n), first on ties
    top = w == w.max(-1, keepdims=True)  # (L, H, n, K) the strongest keys
    top = top / top.sum(-1, keepdims=True)  # (L, H, n, K) tied strongest keys share their query
    vis = col[None, :] <= q[:, None] if kind == "decoder_self" else np.ones((n, K), bool)  # (n, K)
    u = vis / vis.sum(1, keepdims=True)  # (n, K) a head spreading evenly over the keys it can see
    s, c = acc.s, acc.c
    for name, (mask, counted) in _masks(kind, q, keys, scores).items():
        mask = mask & counted[:, None]
        acc.n[name] += int(counted.sum())
        c[name] += float((u * mask).sum())
        s[name] += ((top if name.startswith("argmax") else w) * mask).sum((-1, -2))
    for name in ("confidence", "entropy", "distance"):
        acc.n[name] += n
    s["confidence"] += w.max(-1, initial=0.0).sum(-1)
    c["confidence"] += float(u.max(1).sum())
    s["entropy"] -= np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0).sum((-1, -2))
    c["entropy"] += float(np.log(vis.sum(1)).sum())
    if kind == "cross":
        diag = q * (K - 1) / (Q - 1) if Q > 1 else np.zeros(n)  # (n,)
        dist = np.abs(col[None, :] - diag[:, None])  # (n, K)
        _add_alignment(acc, w, arg, top, np.asarray(keys, dtype=object) == "</s>")
    else:
        dist = np.abs(q[:, None] - col[None, :])  # (n, K)
    s["distance"] += (w * dist).sum((-1, -2))
    c["distance"] += float((u * dist).sum())


def _add_alignment(acc: _Sums, w: np.ndarray, arg: np.ndarray, top: np.ndarray, eos: np.ndarray) -> None:
    """Cross-attention only: monotonicity and agreement of one sentence (w (L, H, n, S), arg (L, H, n), top
    (L, H, n, S) the strongest keys, ties sharing)."""
    L, H, n, S = w.shape
    for l in range(L):
        for h in range(H):
            seq = arg[l, h][~eos[arg[l, h]]]
            acc.s["monotonicity"][l, h] += int((np.diff(seq) >= 0).sum())
            acc.pairs[l, h] += max(len(seq) - 1, 0)
    if L * H > 1:  # the other heads' pick: argmax of the sum of every other cross head's row
        others = w.sum((0, 1))[None, None] - w  # (L, H, n, S) every other cross head's weights, summed
        pick = others == others.max(-1, keepdims=True)  # (L, H, n, S) their strongest keys
        acc.s["agreement"] += (top * pick / pick.sum(-1, keepdims=True)).sum((-1, -2))
        acc.n["agreement"] += n
        acc.c["agreement"] += n / S


def _means(acc: _Sums) -> tuple[dict, dict]:
    """((layer, head) -> {statistic: pooled mean or None}, {statistic: a uniform head's value or None})."""
    def div(x, n):
        return None if n == 0 else round(float(x) / float(n), DECIMALS)

    L, H = acc.pairs.shape
    out = {}
    for l in range(L):
        for h in range(H):
            st = {name: div(acc.s[name][l, h], acc.n[name]) for name in STATS}
            st["monotonicity"] = div(acc.s["monotonicity"][l, h], acc.pairs[l, h])
            out[(l, h)] = st
    chance = {name: div(acc.c[name], acc.n[name]) for name in STATS}
    chance["monotonicity"] = None
    return out, chance


def pooled_statistics(maps_list, source_tokens_list=None, target_tokens_list=None, scores=None) -> tuple[dict, dict]:
    """Pooled statistics of every head over sentences (see the module docstring for the definitions).

    maps_list: AttentionMaps (any iterable, consumed once): encoder_self (L_enc, H, S, S), decoder_self
    (L_dec, H, T, T), cross (L_dec, H, T, S); rows are the counted queries' distributions.
    source_tokens_list / target_tokens_list: the S source pieces and T decoder-input pieces (starting with
    <s>) of each sentence; None: each maps' own source_tokens / target_tokens. scores: {piece: score}
    (`piece_scores`; lower = rarer, a missing piece is rarest) for argmax_rarest, None: argmax_rarest null.
    -> ({(kind, layer, head): {statistic: float or None}}, {kind: {statistic: chance value or None}})
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
            elif acc[kind].pairs.shape != a.shape[:2]:
                raise ValueError(f"{kind}: sentences disagree on (layers, heads)")
            _add(kind, acc[kind], a, list(keys), scores)
        sentences += 1
    if not sentences:
        raise ValueError("no sentences")
    means = {kind: _means(acc[kind]) for kind in KINDS}
    return ({(kind, l, h): st for kind in KINDS for (l, h), st in means[kind][0].items()},
            {kind: means[kind][1] for kind in KINDS})


def head_statistics(maps_list, source_tokens_list=None, target_tokens_list=None, scores=None) -> dict:
    """{(kind, layer, head): {statistic: float or None}}: `pooled_statistics` without the chance levels."""
    return pooled_statistics(maps_list, source_tokens_list, target_tokens_list, scores)[0]


# ----------------------------------------------------------------------------------------------------
# Roles: ROLE_RULES applied to a head's statistics

def explain_role(kind: str, stats: dict, rules=None) -> tuple[str, Rule | None, bool]:
    """(role, rule, holds). Of the rules of `rules` (default ROLE_RULES) for `kind` that hold, the one whose
    statistic passes its threshold by the largest ratio (statistic / threshold; for "<": threshold /
    statistic), the first in the table on ties. When none holds: (MIXED, the rule it comes nearest to by
    that ratio or None when no rule applies, False). A statistic that is null never satisfies a rule."""
    best = nearest = None
    for rule in ROLE_RULES if rules is None else rules:
        value = stats.get(rule.statistic) if kind in rule.kinds else None
        if value is None:
            continue
        ratio = rule.ratio(value)
        if rule.holds(value):
            if best is None or ratio > best[0]:
                best = (ratio, rule)
        elif nearest is None or ratio > nearest[0]:
            nearest = (ratio, rule)
    if best is not None:
        return best[1].name, best[1], True
    return MIXED, (nearest[1] if nearest else None), False


def assign_role(kind: str, stats: dict, rules=None) -> str:
    """The role `explain_role` gives."""
    return explain_role(kind, stats, rules)[0]


def role_reason(kind: str, stats: dict, rules=None) -> str:
    """Why a head has its role, in words, e.g. 'strongest key is the previous piece: 36% of queries (needs
    ≥ 33% of queries)'."""
    role, rule, holds = explain_role(kind, stats, rules)
    if rule is None:
        return "no rule applies to this kind of head"
    value = fmt_stat(rule.statistic, stats.get(rule.statistic))
    need = f"{'≥' if rule.op == '>=' else '<'} {fmt_stat(rule.statistic, rule.threshold)}"
    if holds:
        return f"{STAT_WORDS[rule.statistic]}: {value} (needs {need})"
    return f"no rule holds; nearest is {rule.name}: {STAT_WORDS[rule.statistic]}: {value} (needs {need})"


def role_rules_json(rules=None) -> list[dict]:
    """The rule table as the atlas JSON records it (each rule's fields, its `role` name and `rule` text)."""
    return [{"role": r.name, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(r).items()},
             "rule": r.text} for r in (ROLE_RULES if rules is None else rules)]


def legend(rules=None) -> list[dict]:
    """The Head atlas tab's legend, generated from the rule table: one row per role, then mixed.
    [{"role", "label", "kinds": [kind, ...], "rule": words, "description"}]"""
    rows = [{"role": r.name, "label": r.label, "kinds": list(r.kinds), "rule": r.text, "description": r.description}
            for r in (ROLE_RULES if rules is None else rules)]
    return rows + [{"role": MIXED, "label": MIXED, "kinds": list(KINDS), "rule": "none of the above",
                    "description": MIXED_DESCRIPTION}]


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
    stats, chance = pooled_statistics(teacher_forced_maps(translator, texts, outputs),
                                      scores=piece_scores(translator.tokenizer))
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
             "queries": queries, "role_rules": role_rules_json(), "chance": chance, "heads": heads}
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


def spread(pairs: list, limit: int | None) -> list:
    """`limit` pairs taken evenly across `pairs` (index i * len // limit), so that a split made of parts
    (mixed_val: Multi30k val, then Tatoeba val) keeps its mix; all of them when limit is None or larger."""
    if limit is None or limit >= len(pairs):
        return list(pairs)
    return [pairs[i * len(pairs) // limit] for i in range(limit)]


def main(argv=None) -> dict:
    from . import corpus as C
    from . import data as D
    from .checkpoint import DEFAULT_CHECKPOINT
    from .evaluate import load_model_and_split
    from .metrics import read_metrics
    from .device import describe

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--split", default="val", choices=C.ALL_SPLITS,
                   help="mixed_val: Multi30k val + Tatoeba val, both domains (transformer.corpus)")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA), help="the Tatoeba file (tatoeba_* and mixed_val)")
    p.add_argument("--out", help=f"output file (default: <checkpoint>/{ATLAS})")
    p.add_argument("--device", default="auto")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--limit", type=int, help="only N sentences, taken evenly across the split (for speed)")
    a = p.parse_args(argv)
    if a.batch_size < 1:
        p.error("--batch-size must be at least 1")
    if a.limit is not None and a.limit < 1:
        p.error("--limit must be at least 1")
    tr, pairs = load_model_and_split(a.checkpoint, a.device, a.data_dir, a.split, a.threads, a.tatoeba)
    pairs = spread(pairs, a.limit)
    out = Path(a.out) if a.out else Path(a.checkpoint) / ATLAS
    print(f"head atlas: {a.checkpoint}, {a.split} ({len(pairs)} sentences), {describe(tr.device)}", flush=True)
    atlas = build_atlas(tr, pairs, a.batch_size, a.split, progress=lambda m: print(m, flush=True))
    weights = read_metrics(a.checkpoint).get("weights")
    if weights:
        atlas["checkpoint_weights"] = weights
    write_json(out, atlas)
    counts = {r: sum(h["role"] == r for h in atlas["heads"]) for r in ROLES}
    print("roles: " + ", ".join(f"{r} {n}" for r, n in counts.items() if n))
    if atlas.get("pruning_stop"):
        print(pruning_stop_text(atlas))
    print(f"wrote {out}: intact BLEU {atlas['bleu']:.2f}, "
          f"{atlas.get('prunable_within_1_bleu', '?')} heads prunable within 1 BLEU; total {atlas['seconds']:.0f} s")
    return atlas


if __name__ == "__main__":
    main()
