"""How long the sources a model was trained on were: words and pieces (median, 95th and 99th percentile, longest).

Stored in the checkpoint's metrics.json under "source_lengths", written by transformer.train.train at the end of a run
(from the pairs it trained on, joined ones included) and by this tool for a checkpoint made before that:

    python -m transformer.lengths --checkpoint checkpoints/de-en --save

which rebuilds the run's training pairs from its training_log.json (the same corpora, mix, joined pairs and seed)
and tokenises them with the checkpoint's tokenizer. The app and transformer.decode.translate read it back
(`metrics.read_source_lengths`) to say when an input is longer than what the model learned from.
"""
from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace

import numpy as np

from ..model.metrics import SOURCE_LENGTHS as KEY
from ..model.metrics import update_metrics

PERCENTILES = {"median": 50, "p95": 95, "p99": 99}


def summary(lengths) -> dict:
    """{median, p95, p99, max} of a list of lengths (numpy's linear percentiles, rounded to whole units)."""
    a = np.asarray(list(lengths), dtype=np.float64)
    if not a.size:
        raise ValueError("no lengths to summarise")
    return {**{k: round(float(np.percentile(a, q))) for k, q in PERCENTILES.items()}, "max": int(a.max())}


def source_lengths(sources: list[str], piece_counts: list[int]) -> dict:
    """The record stored in metrics.json: sentences, and the summary of their words (split on spaces) and pieces."""
    if len(sources) != len(piece_counts):
        raise ValueError(f"{len(sources)} sources but {len(piece_counts)} piece counts")
    return {"sentences": len(sources), "words": summary(len(s.split()) for s in sources),
            "pieces": summary(piece_counts)}


def training_sources(log: dict, data_dir=None, tatoeba=None) -> list[str]:
    """The sources a run trained on, rebuilt from its log's arguments (its first start's, as transformer.train.train
    recorded them) with the corpora found at data_dir / tatoeba (default: the log's own paths)."""
    from . import corpus
    args = dict(log.get("args") or {})
    starts = log.get("starts") or []
    if starts and starts[-1].get("args"):  # the flags of the last start: a fine-tuning run's own mix
        args.update(starts[-1]["args"])
    a = SimpleNamespace(**{"multi30k_upsample": 2, "seed": 1, **args})
    a.concat = a.concat if isinstance(getattr(a, "concat", None), (int, float)) else 0.0  # older logs: None
    a.data_dir = str(data_dir or a.data_dir)
    a.tatoeba = str(tatoeba or a.tatoeba)
    pairs, _, _ = corpus.corpora(a, a.data_dir, None if a.tatoeba == "none" else a.tatoeba)
    return [s for s, _ in pairs]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--data-dir", default=None, help="the Multi30k folder (default: the run's)")
    p.add_argument("--tatoeba", default=None, help="the Tatoeba file (default: the run's)")
    p.add_argument("--save", action="store_true", help=f"store the record in metrics.json under {KEY!r}")
    a = p.parse_args(argv)
    from ..model.checkpoint import LOG, CheckpointError, resolve_checkpoint
    from ..model.tokenizer import Tokenizer
    from .data import DataError
    ck = resolve_checkpoint(a.checkpoint)
    try:
        log = json.loads((ck / LOG).read_text())
        sources = training_sources(log, a.data_dir, a.tatoeba)
        tok = Tokenizer((ck / "tokenizer.model").read_bytes())
    except (OSError, ValueError, CheckpointError, DataError) as e:
        sys.exit(f"error: {e}")
    rec = source_lengths(sources, [len(ids) for ids in tok.encode_batch(sources)])
    print(json.dumps(rec))
    if a.save:
        update_metrics(ck, {KEY: rec}, drop=(KEY,))
    return rec


if __name__ == "__main__":
    main()
