"""The one owner of BLEU/chrF scoring and of a checkpoint's metrics.json.

metrics.json is read, updated and written only through update_metrics(): train, evaluate and average
all go through it, and it replaces the file atomically (temp file + os.replace), so a reader never
sees a half-written file.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

METRICS = "metrics.json"
# how long the sources a model learned from were (transformer/train/lengths.py writes it)
SOURCE_LENGTHS = "source_lengths"


def bleu(hyps: list[str], refs: list[str]) -> dict:
    """Corpus sacreBLEU of hypotheses against one reference each: cased and lowercased, 2 decimals."""
    import sacrebleu
    return {"bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "bleu_lc": round(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score, 2)}


def chrf(hyps: list[str], refs: list[str]) -> float:
    """Corpus chrF (sacreBLEU's defaults), 2 decimals."""
    import sacrebleu
    return round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2)


def read_metrics(ckpt_dir: str | Path) -> dict:
    """The checkpoint's metrics.json as a dict; {} when it is missing, unreadable or not a JSON object."""
    try:
        m = json.loads((Path(ckpt_dir) / METRICS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return m if isinstance(m, dict) else {}


def update_metrics(ckpt_dir: str | Path, changes: dict, drop: tuple = ()) -> dict:
    """Read metrics.json, remove the keys in `drop`, apply `changes`, write it back atomically; return it.

    A dict value in `changes` is merged into a dict already stored under that key (one level deep, so
    evaluate can add one split's scores under "test" without losing the others); any other value
    replaces the stored one. To replace a stored dict outright, name its key in `drop` as well.
    """
    ckpt_dir = Path(ckpt_dir)
    m = read_metrics(ckpt_dir)
    for key in drop:
        m.pop(key, None)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(m.get(key), dict):
            m[key] = {**m[key], **value}
        else:
            m[key] = value
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=ckpt_dir, prefix=f".{METRICS}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(m, f, indent=1)
        dest = ckpt_dir / METRICS
        os.chmod(tmp, dest.stat().st_mode & 0o777 if dest.exists() else 0o644)  # mkstemp makes it 0600
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return m


def read_source_lengths(ckpt_dir) -> dict | None:
    """The checkpoint's record of its training sources' lengths (transformer/train/lengths.py), or None when it has none
    (or a malformed one)."""
    rec = read_metrics(ckpt_dir).get(SOURCE_LENGTHS) if ckpt_dir is not None else None
    try:
        return rec if rec and all(rec[u]["p99"] > 0 for u in ("words", "pieces")) else None
    except (KeyError, TypeError):
        return None
