"""Pause and resume: OUT/train_state.pt, and every random generator that training draws from.

train_state.pt holds the model, the optimizer, the step, the epoch (with the next batch group when the run paused
mid-epoch), the training seconds, and the random generators of every process:

  "rngs"        [{"cpu": the CPU generator's state, "device": the accelerator's (the CUDA generator of the
                process's device; absent on the CPU)} for each process, in rank order]
  "world_size"  how many processes wrote it
  "rng"         process 0's CPU state: what files written before "rngs" hold alone (still written, so that
                older code reads a newer file)

The generators are read after the last step before a save, before validation, and validation leaves them as it
found them, so a run paused and resumed draws the dropout masks an uninterrupted one draws: on the CPU, on CUDA
(dropout draws from the device's own generator, which `steps.new_model` reseeds on every start) and under
torchrun (each process its own masks, from its own generators).

A state without "rngs" (written before they were saved), or one written by another number of processes, is
resumed as before: a single process gets process 0's CPU state back; several processes are reseeded from
(seed, rank, epoch), as a fresh start seeds them.
"""
from __future__ import annotations

import json

import torch

from ..interpret.history import HISTORY, AttentionHistory
from ..model.checkpoint import LOG
from ..model.device import is_accelerator, manual_seed, rng_state, set_rng_state

STATE = "train_state.pt"


def capture_rng(device) -> dict:
    """This process's generators: {"cpu": state, "device": state (an accelerator's only)}."""
    out = {"cpu": torch.get_rng_state()}
    if is_accelerator(device):
        out["device"] = rng_state(device)
    return out


def restore_rng(state: dict, device) -> None:
    """Put back what `capture_rng` read (the device's part only on an accelerator)."""
    torch.set_rng_state(state["cpu"])
    if state.get("device") is not None and is_accelerator(device):
        set_rng_state(device, state["device"])


def process_rngs(dist) -> list[dict]:
    """Every process's `capture_rng`, in rank order (a collective: every process calls it)."""
    return dist.gather(capture_rng(dist.device))


def save_state(run, epoch: int, next_group: int, rngs: list[dict]) -> None:
    """Process 0: write OUT/train_state.pt (next_group > 0: paused mid-epoch, to continue at that batch group)."""
    torch.save({"model": run.model.state_dict(), "optim": run.opt.state_dict(), "step": run.step, "epoch": epoch,
                "next_group": next_group, "train_seconds": run.train_seconds, "rng": rngs[0]["cpu"],
                "rngs": rngs, "world_size": len(rngs)}, run.out / STATE)


def resume(run) -> dict | None:
    """Load OUT/train_state.pt (read by process 0, sent to the others), the log and the attention history into
    `run`; -> the state (None when OUT has none), whose generators `start_rng` puts back."""
    path = run.out / STATE
    st = None
    if run.dist.is_main and path.exists():
        st = torch.load(path, map_location="cpu", weights_only=True)
        st["log"] = json.loads((run.out / LOG).read_text())
    st = run.dist.broadcast(st)
    if st is None:
        return None
    run.model.load_state_dict(st["model"])
    run.opt.load_state_dict(st["optim"])
    run.step, run.start_epoch, run.train_seconds = st["step"], st["epoch"] + 1, st["train_seconds"]
    if st.get("next_group"):  # paused mid-epoch: the same epoch again, from the next batch
        run.start_epoch, run.start_group = st["epoch"], st["next_group"]
    run.log = {**st["log"], "world_size": run.dist.world_size, "amp": run.a.amp}
    run.say(f"resumed at epoch {run.start_epoch}, batch group {run.start_group} (step {run.step})")
    if run.dist.is_main and (run.out / HISTORY).exists():
        past = AttentionHistory.load(run.out / HISTORY)
        run.examples = past.sentences  # keep recording the same sentences
        run.history = [{"epoch": e, "snap": past.snapshots(run.tok, e)} for e in past.epochs
                       if e < 1 or any(x["epoch"] == e and "paused_at_group" not in x for x in run.log["epochs"])]
    return st


def start_rng(run, st: dict | None) -> str:
    """Set this process's generators for the first step: the saved ones of this process when resuming `st`;
    else, with several processes, seeded from (seed, rank, epoch) so that each draws its own dropout masks;
    else (a fresh single process) as `new_model` left them. -> what was done, for the log line."""
    a, dist = run.a, run.dist
    rngs = (st or {}).get("rngs")
    if rngs is not None and len(rngs) == dist.world_size:
        restore_rng(rngs[dist.rank], dist.device)
        return "restored"
    if dist.active:  # different dropout masks on each process, the same model everywhere (DDP broadcasts it)
        manual_seed(a.seed + 7919 * dist.rank + 104729 * run.start_epoch)
        return "seeded"
    if st is not None:  # a state written before the generators were saved per process: the CPU's, as then
        torch.set_rng_state(st["rng"])
        return "cpu only"
    return "fresh"
