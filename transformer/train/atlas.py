"""python -m transformer.atlas --checkpoint checkpoints/de-en --split val

A head atlas: for every attention head, what it does (statistics of its weights and a rule-based role,
after Voita et al. 2019) and how much it matters (the BLEU lost when it alone is switched off, after
Michel et al. 2019), plus a pruning curve. Writes <checkpoint>/head_atlas.json.

This module decodes the split, builds the atlas and writes and reads its file; the parts are modules of their own,
each with the definitions the JSON's fields follow:
  transformer.interpret.atlas_stats  what the statistics are computed on, and each statistic (`pooled_statistics`);
  transformer.interpret.roles        the role rules, ONE table (`ROLE_RULES`), a head's role and its wording, the
  legend;
                           and the checkpoint's atlas as the app reads it (`load_atlas`, `head_roles`);
  transformer.interpret.importance   BLEU with each head switched off (`importance`) and the pruning curve.
Their public names are importable from here too, as they were before the split.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ..interpret.atlas_stats import (  # noqa: F401
    BOUNDARY,
    DECIMALS,
    STAT_SHORT,
    STAT_TABLE,
    STAT_UNITS,
    STAT_WORDS,
    STATS,
    fmt_stat,
    head_statistics,
    is_punctuation,
    piece_scores,
    pooled_statistics,
)
from ..interpret.importance import (  # noqa: F401
    KIND_WORDS,
    PRUNE_STOP_FRACTION,
    _log,
    all_heads,
    corpus_bleu,
    head_key,
    importance,
    pruning_curve,
    pruning_order,
    pruning_stop,
    pruning_stop_text,
)
from ..interpret.roles import (  # noqa: F401
    ATLAS,
    MIXED,
    MIXED_DESCRIPTION,
    ROLE_RULES,
    ROLES,
    SELF_KINDS,
    Rule,
    assign_role,
    explain_role,
    legend,
    role_reason,
    role_rules_json,
)


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
    from ..decode.decoding import attend_ids
    tok = translator.tokenizer
    for text, out in zip(texts, outputs):
        src = translator.source_ids(text)
        tgt = [translator.config.bos_id] + list(out[:-1])
        maps = attend_ids(translator.model, src, tgt)
        maps.source_tokens, maps.target_tokens = tok.pieces(src), tok.pieces(tgt)
        yield maps


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
    from ..model.checkpoint import DEFAULT_CHECKPOINT
    from ..model.device import describe
    from ..model.metrics import read_metrics
    from . import corpus as C
    from . import data as D
    from .evaluate import load_model_and_split

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    p.add_argument("--split", default="val", choices=C.ALL_SPLITS,
                   help="mixed_val: Multi30k val + Tatoeba val, both domains (transformer.train.corpus)")
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

