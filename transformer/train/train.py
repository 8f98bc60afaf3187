"""Training CLI: python -m transformer.train --out checkpoints/de-en [...]

Teacher forcing with BOS/EOS, label smoothing, linear warm-up then cosine decay, token-based
batches, gradient clipping, validation loss + BLEU each epoch, resume, averaging of the last epochs,
and a per-epoch snapshot of cross-attention on fixed example sentences (attention_history.npz).

Several processes (data parallel): torchrun --nproc_per_node N -m transformer.train [...]
Each step then takes N batches of the epoch's shuffled batch list, one per process; the loss is
normalised by the target tokens of all N, so a step is the same update as one process training on
their union. --max-tokens is per process. Process 0 alone validates and writes OUT.
Mixed precision: --amp bf16 runs forward and backward under bfloat16 autocast (weights, optimizer
state and validation stay float32).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..decode.decoding import Translator, attend_ids
from ..interpret.history import HISTORY, save_history
from ..model.checkpoint import LOG, TOKENIZER, WEIGHTS, build_model, read_weights, save_checkpoint, save_weights
from ..model.config import ModelConfig
from ..model.device import describe
from ..model.metrics import update_metrics
from ..model.model import Transformer
from ..model.tokenizer import Tokenizer
from . import data as D
from . import distributed, lengths, train_args
from .average import average_weights
from .corpus import corpora
from .evaluate import translate_bleu
from .steps import (  # noqa: F401
    encode_pairs,
    loss_fn,
    lr_at,
    lr_at_time,
    make_tensors,
    new_model,
    new_optimizer,
    set_lr,
    step_groups,
    train_step,
    validate,
)
from .synthetic import tiny_corpus, tiny_tatoeba
from .train_args import AMP, apply_dry_run, model_config
from .train_state import STATE, process_rngs, restore_rng, resume, save_state, start_rng  # noqa: F401

# The arguments are transformer.train.train_args, one step and its pieces transformer.train.steps, pause/resume
# transformer.train.train_state, the synthetic corpora transformer.train.synthetic: their names stay importable from
# here.
N_EXAMPLES = 4  # example sentences whose cross-attention is recorded every epoch
EARLY_SNAPSHOTS = (0.02, 0.05, 0.1, 0.25, 0.5)  # also recorded inside epoch 1 (and 0: before training)


def parse_args(argv=None):
    """The command line (transformer.train.train_args), with this module's docstring as --help's description."""
    return train_args.parse_args(argv, __doc__)


def snapshot_attention(model, tok, sentences, max_len):
    """Greedy translation + cross-attention of each example sentence under the current weights."""
    tr = Translator(model, tok, next(model.parameters()).device)
    out = []
    for text in sentences:
        src = tr.source_ids(text)
        tgt = [tok.bos_id] + tr.translate_ids([src])[0]
        maps = attend_ids(model, src, tgt)
        out.append((tgt, maps.cross.astype(np.float16)))
    return out


def load_data(a) -> tuple[list, dict, list]:
    """(training pairs as mixed, {domain: validation pairs}, the tokenizer's sentences) of --data-dir and
    --tatoeba, or of a throw-away tiny corpus under --dry-run."""
    try:
        if a.dry_run:
            with tempfile.TemporaryDirectory(prefix="attnlens-dry-") as tmp:
                return corpora(a, tiny_corpus(Path(tmp)), tiny_tatoeba(Path(tmp)) if a.tatoeba != "none" else None)
        return corpora(a, a.data_dir, None if a.tatoeba == "none" else a.tatoeba)
    except D.DataError as e:
        sys.exit(f"error: {e}")


def get_tokenizer(a, out: Path, train_pairs, dist: distributed.Dist) -> Tokenizer:
    """OUT's tokenizer when resuming, else one trained on the training pairs; made by process 0 only."""
    proto = None
    if dist.is_main:
        if a.resume and (out / TOKENIZER).exists():
            proto = (out / TOKENIZER).read_bytes()
        elif a.tokenizer or a.init:
            proto = Path(a.tokenizer or Path(a.init) / TOKENIZER).read_bytes()
            print(f"tokenizer: {len(Tokenizer(proto))} pieces from {a.tokenizer or a.init}", flush=True)
        else:
            t0 = time.time()
            proto = Tokenizer.train([s for p in train_pairs for s in p], a.vocab_size).proto
            print(f"tokenizer: {len(Tokenizer(proto))} pieces in {time.time() - t0:.1f}s", flush=True)
    return Tokenizer(dist.broadcast(proto))


@dataclass
class Run:
    """Everything one training run holds; `net` is what the steps call (the model, or DDP around it)."""
    a: argparse.Namespace
    out: Path
    dist: distributed.Dist
    tok: Tokenizer
    config: ModelConfig
    train: list
    val: list
    val_sets: dict  # {domain: validation pairs}
    model: Transformer
    net: torch.nn.Module
    opt: torch.optim.Optimizer
    total_steps: int
    steps_per_epoch: int
    log: dict
    examples: list[str] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    step: int = 0
    start_epoch: int = 1
    start_group: int = 0  # the first batch group of start_epoch (> 0 when resuming a paused epoch)
    train_seconds: float = 0.0
    data_note: str = ""
    paused: bool = False  # --stop-after-*: the run stopped mid-epoch and saved its state
    spent: bool = False  # --minutes: the time budget is used up; this epoch is the last
    started: float = field(default_factory=time.time)
    steps_this_process: int = 0
    train_pairs: list = field(default_factory=list)  # the text pairs, re-segmented each epoch under --sample-alpha

    @property
    def device(self) -> torch.device:
        return self.dist.device

    @property
    def lengths(self) -> list[tuple[int, int]]:
        return [(len(s), len(t) + 1) for s, t in self.train]

    def say(self, *args) -> None:
        if self.dist.is_main:
            print(*args, flush=True)


def setup(a, dist: distributed.Dist) -> Run:
    """Data, tokenizer, model, optimizer and schedule; the state of OUT/train_state.pt under --resume."""
    out = Path(a.out)
    if dist.is_main:
        (out / "epochs").mkdir(parents=True, exist_ok=True)
    train_pairs, val_sets, tok_sentences = load_data(a)
    tok = get_tokenizer(a, out, tok_sentences, dist)
    config = model_config(a, len(tok))
    val_pairs = [p for pairs in val_sets.values() for p in pairs]
    train, val = encode_pairs(tok, train_pairs, config.max_len), encode_pairs(tok, val_pairs, config.max_len)
    steps_per_epoch = len(step_groups([(len(s), len(t) + 1) for s, t in train], a.max_tokens, a.seed,
                                      dist.world_size))
    total_steps = steps_per_epoch * a.epochs
    if a.max_steps:
        total_steps = min(total_steps, a.max_steps)
    model = new_model(config, a.seed, dist.device)
    if a.init and not a.resume:  # fine-tuning: the checkpoint's weights (build_model checks its shapes)
        model.load_state_dict(build_model(config, read_weights(Path(a.init) / WEIGHTS)[1], a.init).state_dict())
    opt = new_optimizer(model, a)
    log = {"args": vars(a), "config": config.to_dict(), "world_size": dist.world_size, "amp": a.amp, "epochs": [],
           lengths.KEY: lengths.source_lengths([s for s, _ in train_pairs],  # what it learns from, joined pairs too
                                               [len(ids) for ids in tok.encode_batch([s for s, _ in train_pairs])])}
    run = Run(a, out, dist, tok, config, train, val, val_sets, model, model, opt, total_steps, steps_per_epoch,
              log, train_pairs=train_pairs, examples=D.read_examples(D.examples_path(a.src))[:N_EXAMPLES], data_note=(
                  f"{len(train_pairs):,} training pairs an epoch: " + (
                      f"Tatoeba's training part (transformer.train.corpus) + Multi30k train x{a.multi30k_upsample}"
                      if a.tatoeba != "none" else "Multi30k train")
                  + (f", Tatoeba pairs of {a.long_words}+ source words {a.long_upsample} more times"
                     if a.long_upsample else "")
                  + (f", with {a.concat:g} joined Tatoeba pairs (2-3 each) per pair" if a.concat else "")
                  + (f"; pieces sampled each epoch (alpha {a.sample_alpha:g})" if a.sample_alpha > 0 else "")
                  + (f"; fine-tuned from {a.init}" if a.init else "")))
    state = None
    if a.resume:
        state = resume(run)
    elif dist.is_main and run.examples:  # the maps before any training: where the alignment emerges from
        run.history.append({"epoch": 0, "snap": snapshot_attention(model, tok, run.examples, config.max_len)})
    run.log.setdefault("starts", []).append(  # every start and resume with its flags: how the run was made
        {"step": run.step, "epoch": run.start_epoch, "args": vars(a)})
    start_rng(run, state)  # the generators as the next step finds them in an uninterrupted run (train_state)
    if dist.active:  # the same model everywhere (DDP broadcasts it)
        run.net = dist.wrap(model)
    run.say(f"model: {model.num_parameters():,} parameters; {len(train)} train / {len(val)} val pairs; "
            f"{steps_per_epoch} steps/epoch; device {describe(dist.device)}"
            + (f" x {dist.world_size} processes" if dist.active else "") + f"; amp {a.amp}")
    return run


def train_epoch(run: Run, epoch: int) -> dict:
    """Train one epoch (or up to --max-steps); returns the epoch's totals over all processes."""
    from tqdm import tqdm
    a, c, dist = run.a, run.config, run.dist
    run.net.train()
    if a.sample_alpha > 0:  # this epoch's segmentations: the same on resume (seeded by epoch) and in every process
        run.train = encode_pairs(run.tok, run.train_pairs, c.max_len, a.sample_alpha, a.seed * 1000 + epoch)
    groups = step_groups(run.lengths, a.max_tokens, a.seed * 1000 + epoch, dist.world_size)
    first = run.start_group if epoch == run.start_epoch else 0
    bar = tqdm(groups, desc=f"epoch {epoch}", disable=a.no_progress or not dist.is_main, mininterval=5,
               file=sys.stdout, initial=first)
    t0, ep_tokens, ep_loss, ep_n, norms, done = time.time(), 0, 0.0, 0, [], first
    for group in groups[first:]:
        if a.minutes:  # the share of the budget used, as process 0 measures it (every process sets the same lr)
            share = (run.train_seconds + time.time() - t0) / (60 * a.minutes)
            share = dist.broadcast(share) if dist.active else share
            if share >= 1:
                run.spent = True
                break
            set_lr(run.opt, lr_at_time(run.step, a.lr, a.warmup, share))
        else:
            set_lr(run.opt, lr_at(run.step, a.lr, a.warmup, run.total_steps))
        s, ti, to = make_tensors(run.train, group[dist.rank], c.pad_id, c.bos_id, c.eos_id, run.device)
        loss, n_tok, norm = train_step(run.net, run.opt, [(s, ti, to)], c.pad_id, a.label_smoothing, a.clip,
                                       AMP[a.amp], dist)
        run.step += 1
        run.steps_this_process += 1
        done += 1
        bar.update(1)
        if epoch == 1 and dist.is_main and run.examples:
            early_snapshot(run, done, len(groups))
        ep_tokens += n_tok + int((s != c.pad_id).sum())
        ep_loss += loss
        ep_n += n_tok
        norms.append(norm)
        bar.set_postfix(loss=f"{loss / max(1, n_tok):.3f}", tok_s=f"{ep_tokens / (time.time() - t0):.0f}",
                        lr=f"{run.opt.param_groups[0]['lr']:.2e}")
        if a.max_steps and run.step >= a.max_steps:
            break
        if should_pause(run) and done < len(groups):
            run.paused = True
            break
    bar.close()
    secs = time.time() - t0
    ep_loss, ep_n, ep_tokens = dist.all_sum([ep_loss, ep_n, ep_tokens])
    return {"loss": ep_loss / max(1, ep_n), "tokens": ep_tokens, "seconds": secs, "next_group": done,
            "steps": done - first,
            "grad_norm": sum(norms) / max(1, len(norms))}  # the same on every process


def early_snapshot(run: Run, done: int, n_groups: int) -> None:
    """Inside epoch 1: record the example sentences' cross-attention at the EARLY_SNAPSHOTS fractions, so the
    history shows alignment emerging. The model goes back to training mode, and the RNG is untouched
    (greedy decoding in eval mode draws nothing)."""
    for frac in EARLY_SNAPSHOTS:
        if done == max(1, round(frac * n_groups)):
            run.history.append({"epoch": frac, "snap": snapshot_attention(run.model, run.tok, run.examples,
                                                                          run.config.max_len)})
            run.net.train()


def should_pause(run: Run) -> bool:
    """--stop-after-steps / --stop-after-minutes reached (process 0 decides, so all processes pause together)."""
    a = run.a
    stop = bool((a.stop_after_steps and run.steps_this_process >= a.stop_after_steps)
                or (a.stop_after_minutes and time.time() - run.started >= 60 * a.stop_after_minutes))
    return bool(run.dist.broadcast(stop)) if run.dist.active else stop


def end_of_epoch(run: Run, epoch: int, stats: dict, rngs: list[dict]) -> None:
    """Process 0: validation loss and BLEU, attention snapshot, log line, checkpoints, state for --resume.
    `rngs`: every process's generators after the last step (train_state.process_rngs), saved with the state;
    process 0's are put back after validation, so that validation never shifts the dropout that follows."""
    a, c, out, model = run.a, run.config, run.out, run.model
    run.train_seconds += stats["seconds"]
    val_batches = D.make_batches([(len(s), len(t) + 1) for s, t in run.val], a.max_tokens, shuffle=False)
    val_loss = validate(model, run.val, val_batches, c.pad_id, c.bos_id, c.eos_id, run.device)
    scores = translate_bleu(model, run.tok, run.val_sets, run.device)
    if run.examples and not run.paused:
        run.history.append({"epoch": epoch, "snap": snapshot_attention(model, run.tok, run.examples, c.max_len)})
    entry = {"epoch": epoch, **({"paused_at_group": stats["next_group"]} if run.paused else {}),
             "step": run.step, "train_loss": round(stats["loss"], 4),
             "grad_norm": round(stats["grad_norm"], 4), "val_loss": round(val_loss, 4),
             "val_bleu": scores["bleu"], "val_bleu_lc": scores["bleu_lc"],
             **{f"val_{k}": v for k, v in scores.items() if k.startswith("bleu_") and not k.startswith("bleu_lc")},
             "lr": run.opt.param_groups[0]["lr"], "epoch_seconds": round(stats["seconds"], 1),
             "tokens_per_s": round(stats["tokens"] / stats["seconds"]),
             "elapsed_seconds": round(run.train_seconds, 1)}
    run.log["epochs"].append(entry)
    print(json.dumps(entry), flush=True)
    if not run.paused:
        save_weights(out / "epochs" / f"epoch_{epoch:03d}.pt", model, half=False)
        for old in sorted((out / "epochs").glob("epoch_*.pt"))[:-max(a.keep_epochs or a.average_last, 1)]:
            old.unlink()
    save_checkpoint(out, model, run.tok)
    (out / LOG).write_text(json.dumps(run.log, indent=1))
    if run.examples:
        save_history(out / HISTORY, run.examples, run.tok, run.history)
    save_state(run, epoch, stats["next_group"] if run.paused else 0, rngs)
    restore_rng(rngs[0], run.device)


def finish(run: Run) -> dict:
    """Process 0: average the last epochs, keep whichever of last/averaged is better on validation BLEU,
    and record the run in metrics.json."""
    a, out, model = run.a, run.out, run.model
    last = run.log["epochs"][-1]
    final = {"source": f"epoch {last['epoch']}", "val_bleu": last["val_bleu"], "val_bleu_lc": last["val_bleu_lc"],
             "val_by_domain": {k[4:]: v for k, v in last.items() if k.startswith("val_bleu_") and k != "val_bleu_lc"}}
    paths = sorted((out / "epochs").glob("epoch_*.pt"))[-a.average_last:]
    if a.average_last > 1 and len(paths) > 1:
        model.load_state_dict(average_weights(paths))
        scores = translate_bleu(model, run.tok, run.val_sets, run.device)
        print(f"average of {len(paths)} epochs: val BLEU {scores['bleu']} (last epoch {last['val_bleu']})",
              flush=True)
        if scores["bleu"] >= last["val_bleu"]:
            final = {"source": f"average of epochs {paths[0].stem[6:]}..{paths[-1].stem[6:]}",
                     "val_bleu": scores["bleu"], "val_bleu_lc": scores["bleu_lc"],
                     "val_by_domain": {k: v for k, v in scores.items() if k.startswith("bleu_") and
                                       not k.startswith("bleu_lc")}}
            save_checkpoint(out, model, run.tok)
    epochs = run.log["epochs"]
    metrics = {"parameters": model.num_parameters(), "weights": final["source"], "val_bleu": final["val_bleu"],
               "val_bleu_lc": final["val_bleu_lc"], "val_by_domain": final["val_by_domain"],
               "data": run.data_note, "epochs": last["epoch"], "steps": run.step,
               "train_seconds": round(run.train_seconds), "device": describe(run.device),
               "world_size": run.dist.world_size, "amp": a.amp,
               "tokens_per_s": round(sum(e["tokens_per_s"] for e in epochs) / len(epochs)),
               **({lengths.KEY: run.log[lengths.KEY]} if lengths.KEY in run.log else {})}
    update_metrics(out, metrics)
    (out / LOG).write_text(json.dumps(run.log, indent=1))  # this start too (one that only finished the run)
    if a.atlas:
        write_atlas(run)
    print("done:", json.dumps(metrics), flush=True)
    return metrics


def write_atlas(run: Run) -> None:
    """The head atlas of the saved checkpoint on the validation pairs (python -m transformer.atlas does the same)."""
    from ..model.checkpoint import load_checkpoint
    from . import atlas
    model, tok = load_checkpoint(run.out)  # the weights kept (last or averaged), as the app loads them
    result = atlas.build_atlas(Translator(model, tok, run.device), [p for v in run.val_sets.values() for p in v],
                                batch_size=128, split="mixed_val" if len(run.val_sets) > 1 else "val")
    atlas.write_json(run.out / atlas.ATLAS, result)
    print(f"head atlas: {run.out / atlas.ATLAS}", flush=True)


def main(argv=None):
    a = parse_args(argv)
    if a.dry_run:
        apply_dry_run(a)
    if a.threads:
        torch.set_num_threads(a.threads)
    random.seed(a.seed)
    dist = distributed.init(a.device)
    try:
        run = setup(a, dist)
        for epoch in range(run.start_epoch, a.epochs + 1):
            if (a.max_steps and run.step >= a.max_steps) or run.spent:
                break
            stats = train_epoch(run, epoch)
            if not stats["steps"]:  # --minutes ran out at the epoch's start: nothing new to validate or save
                break
            rngs = process_rngs(dist)  # every process's generators, before validation draws anything
            if dist.is_main:
                end_of_epoch(run, epoch, stats, rngs)
            dist.barrier()
            if run.paused:
                run.say(f"paused in epoch {epoch} after batch group {stats['next_group']}: "
                        f"continue with the same command and --resume")
                return None
        metrics = finish(run) if dist.is_main and run.log["epochs"] else None
        dist.barrier()
        return metrics
    finally:
        dist.close()


if __name__ == "__main__":
    main()
