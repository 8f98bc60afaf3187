"""TEMPORARY stand-in (replaced by the training developer's module at merge)."""
from __future__ import annotations

import json
from pathlib import Path

METRICS = "metrics.json"


def bleu(hyps: list[str], refs: list[str]) -> dict:
    import sacrebleu
    return {"bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "bleu_lc": round(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score, 2)}


def read_metrics(ckpt_dir) -> dict:
    try:
        return json.loads((Path(ckpt_dir) / METRICS).read_text())
    except (OSError, ValueError):
        return {}
