"""python -m transformer.ship --run RUN_DIR --out checkpoints/en-de

Ships the weights a run last saved (at the end of an epoch; a paused run's mid-epoch weights are never shipped) as
a checkpoint folder: model.pt, tokenizer.model, training_log.json and attention_history.npz copied, and
metrics.json written from the training log: the last completed epoch's validation BLEU per domain, the epochs,
steps and training time so far, and whether the run's schedule has finished ("in training: epoch 1 of 7").
Test scores are added afterwards by `python -m transformer.evaluate --checkpoint OUT --split ... --save`.

`--continues CHECKPOINT`: the run went on from that checkpoint's weights (`train --init`, with the learning rates its
schedule had left) because its own run could not resume (its training state was lost). The shipped log and history
are then the checkpoint's, with the run's completed epochs after them, numbered on (its epoch 1 is the checkpoint's
last + 1; steps and time added on), and the schedule planned is the checkpoint's.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from ..interpret.history import HISTORY, epoch_key
from ..model.checkpoint import LOG, TOKENIZER, WEIGHTS, load_checkpoint
from ..model.metrics import update_metrics
from .lengths import KEY as LENGTHS

STATE = "train_state.pt"


def completed(log: dict) -> list[dict]:
    """The log's entries of completed epochs, one per epoch (a paused epoch's partial entries are left out)."""
    done = {e["epoch"]: e for e in log.get("epochs", []) if "paused_at_group" not in e}
    return [done[k] for k in sorted(done)]


def planned_epochs(log: dict, default: int) -> int:
    """The epochs the log's schedule plans: its last start's (a continuing run's starts keep the schedule's)."""
    start = (log.get("starts") or [{}])[-1]
    return start.get("planned") or start.get("args", log.get("args", {})).get("epochs", default)


def continued(base: dict, run: dict) -> dict:
    """`base`'s log (a shipped checkpoint's) with the completed epochs of `run` (fine-tuned from it) after its own,
    numbered on; the run's starts are added with the schedule `base` planned."""
    done = completed(base)
    if not done:
        raise ValueError("the checkpoint continued has no completed epoch")
    last, seconds = done[-1], base["epochs"][-1].get("elapsed_seconds", 0.0)
    added = [{**e, "epoch": e["epoch"] + last["epoch"], "step": e["step"] + last["step"],
              "elapsed_seconds": e.get("elapsed_seconds", 0.0) + seconds, "continued_from": "init"}
             for e in completed(run)]
    plan = planned_epochs(base, last["epoch"])
    starts = [{**st, "step": st.get("step", 0) + last["step"], "epoch": st.get("epoch", 1) + last["epoch"],
               "planned": plan} for st in run.get("starts", [])]
    return {**base, "epochs": base["epochs"] + added, "starts": base.get("starts", []) + starts}


def continued_history(base_path: Path, run_path: Path, offset: int, out_path: Path) -> None:
    """The checkpoint's attention history with the run's whole-epoch snapshots after it, as epochs offset + e."""
    with np.load(base_path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    with np.load(run_path, allow_pickle=False) as z:
        extra = {k: z[k] for k in z.files}
    if list(arrays["sentences"]) != list(extra["sentences"]):
        raise ValueError("the run's attention history is of other example sentences than the checkpoint's")
    whole = [float(e) for e in extra["epochs"] if float(e) >= 1 and float(e).is_integer()]
    for e in whole:
        for i in range(len(arrays["sentences"])):
            for kind in ("tgt", "cross"):
                arrays[f"{kind}_{i}_{epoch_key(e + offset)}"] = extra[f"{kind}_{i}_{epoch_key(e)}"]
    arrays["epochs"] = np.concatenate([arrays["epochs"], np.array([e + offset for e in whole], dtype=np.float64)])
    np.savez_compressed(out_path, **arrays)


def metrics_of(log: dict, parameters: int, data: str, device: str) -> dict:
    epochs = completed(log)
    if not epochs:
        raise ValueError("the run has completed no epoch yet: nothing to ship")
    last = epochs[-1]
    planned = planned_epochs(log, last["epoch"])
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
    p.add_argument("--continues", default="",
                   help="the checkpoint the run was fine-tuned from to go on with its schedule (see above)")
    a = p.parse_args(argv)
    run, out = Path(a.run), Path(a.out)
    try:
        log = json.loads((run / LOG).read_text())
        lengths = log.get(LENGTHS)  # the run's own training data (a continued log is the checkpoint's otherwise)
        model, _ = load_checkpoint(run)
        if a.continues:
            base_dir = Path(a.continues)
            base = json.loads((base_dir / LOG).read_text())
            offset = completed(base)[-1]["epoch"] if completed(base) else 0
            log = continued(base, log)
            history = out / "attention_history.next.npz"  # np.savez names end in .npz
            out.mkdir(parents=True, exist_ok=True)
            continued_history(base_dir / HISTORY, run / HISTORY, offset, history)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"error: {e}")
    if completed(log)[-1:] and log["epochs"][-1].get("paused_at_group"):
        print("note: the run is paused mid-epoch; its model.pt then holds the paused weights", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for name in (WEIGHTS, TOKENIZER) + (() if a.continues else (LOG, HISTORY)):
        if (run / name).exists():
            shutil.copy2(run / name, out / name)
    if a.continues:
        (out / LOG).write_text(json.dumps(log, indent=1))
        history.replace(out / HISTORY)
    data = a.data or log.get("data", "") or ("Tatoeba's training part (transformer.train.corpus) + Multi30k train x"
                                              f"{log.get('args', {}).get('multi30k_upsample', 2)}")
    metrics = update_metrics(out, {**metrics_of(log, model.num_parameters(), data, a.device),
                                   **({LENGTHS: lengths} if lengths else {})})
    print(json.dumps({k: metrics[k] for k in ("weights", "val_bleu", "epochs", "epochs_planned", "in_training")}))


if __name__ == "__main__":
    main()
