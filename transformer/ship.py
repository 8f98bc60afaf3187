"""python -m transformer.ship --run RUN_DIR --out checkpoints/en-de

Ships the weights a run last saved (at the end of an epoch; a paused run's mid-epoch weights are never shipped) as
a checkpoint folder: model.pt, tokenizer.model, training_log.json and attention_history.npz copied, and
metrics.json written from the training log: the last completed epoch's validation BLEU per domain, the epochs,
steps and training time so far, and whether the run's schedule has finished ("in training: epoch 1 of 7").
Test scores are added afterwards by `python -m transformer.evaluate --checkpoint OUT --split ... --save`.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from .checkpoint import LOG, TOKENIZER, WEIGHTS, load_checkpoint
from .history import HISTORY
from .metrics import update_metrics

STATE = "train_state.pt"


def completed(log: dict) -> list[dict]:
    """The log's entries of completed epochs, one per epoch (a paused epoch's partial entries are left out)."""
    done = {e["epoch"]: e for e in log.get("epochs", []) if "paused_at_group" not in e}
    return [done[k] for k in sorted(done)]


def metrics_of(log: dict, parameters: int, data: str, device: str) -> dict:
    epochs = completed(log)
    if not epochs:
        raise ValueError("the run has completed no epoch yet: nothing to ship")
    last = epochs[-1]
    planned = (log.get("starts") or [{}])[-1].get("args", log.get("args", {})).get("epochs", last["epoch"])
    by_domain = {k[4:]: v for k, v in last.items() if k.startswith("val_bleu_") and k != "val_bleu_lc"}
    return {"parameters": parameters, "weights": f"epoch {last['epoch']}", "val_bleu": last["val_bleu"],
            "val_bleu_lc": last["val_bleu_lc"], "val_by_domain": by_domain, "data": data,
            "epochs": last["epoch"], "epochs_planned": planned, "in_training": last["epoch"] < planned,
            "steps": last["step"], "train_seconds": round(sum(e["epoch_seconds"] for e in log["epochs"])),
            "device": device, "world_size": log.get("world_size", 1), "amp": log.get("amp", "off"),
            "tokens_per_s": round(sum(e["tokens_per_s"] for e in epochs) / len(epochs))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="the training run's --out folder")
    p.add_argument("--out", required=True, help="the checkpoint folder to write (e.g. checkpoints/en-de)")
    p.add_argument("--data", default="", help="what it was trained on, in words (default: the log's)")
    p.add_argument("--device", default="CPU (2 threads)", help="where it was trained, in words")
    a = p.parse_args(argv)
    run, out = Path(a.run), Path(a.out)
    try:
        log = json.loads((run / LOG).read_text())
        model, _ = load_checkpoint(run)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {e}")
    if completed(log)[-1:] and log["epochs"][-1].get("paused_at_group"):
        print("note: the run is paused mid-epoch; its model.pt then holds the paused weights", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for name in (WEIGHTS, TOKENIZER, LOG, HISTORY):
        if (run / name).exists():
            shutil.copy2(run / name, out / name)
    data = a.data or log.get("data", "") or ("Tatoeba's training part (transformer.corpus) + Multi30k train x"
                                              f"{log.get('args', {}).get('multi30k_upsample', 2)}")
    metrics = update_metrics(out, metrics_of(log, model.num_parameters(), data, a.device))
    print(json.dumps({k: metrics[k] for k in ("weights", "val_bleu", "epochs", "epochs_planned", "in_training")}))


if __name__ == "__main__":
    main()
