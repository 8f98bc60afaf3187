"""Statistics of every attention head's weights, pooled over a corpus (numpy only): what the head atlas
(transformer.train.atlas) records of each head and the role rules (transformer.interpret.roles) read.

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
"""
from __future__ import annotations

import unicodedata

import numpy as np

from .analysis import SPECIALS, WORD_START
from .capture import KINDS

DECIMALS = 4
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


def is_punctuation(piece: str) -> bool:
    s = piece.replace(WORD_START, "")
    return piece not in SPECIALS and bool(s) and all(unicodedata.category(c).startswith("P") for c in s)


def piece_scores(tokenizer) -> dict:
    """{piece: score}: SentencePiece's per-piece score (a unigram model's log-probability: lower = rarer)."""
    return {tokenizer.piece(i): tokenizer.sp.get_score(i) for i in range(len(tokenizer))}


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
