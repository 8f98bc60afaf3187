"""One training step and what it is made of: pairs to padded tensors, the batches of an epoch's steps, the loss,
the learning-rate schedule, the model and optimizer as training makes them, and the validation loss.

transformer.train.train runs these in its loop; the tests and benchmarks call them directly (one process stepping on
the union of several processes' batches is the reference the data-parallel tests compare with).
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F

from ..model.config import ModelConfig
from ..model.device import manual_seed
from ..model.model import Transformer
from ..model.tokenizer import Tokenizer
from . import data as D
from . import distributed


def lr_at(step: int, peak: float, warmup: int, total: int, floor: float = 0.02) -> float:
    """Linear warm-up to `peak`, then cosine decay to floor*peak at `total` steps."""
    return lr_at_time(step, peak, warmup, (step - warmup) / max(1, total - warmup), floor)


def lr_at_time(step: int, peak: float, warmup: int, spent: float, floor: float = 0.02) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to floor*peak as `spent` (the share of the schedule
    used, 0..1: of the steps after warm-up, or of --minutes' time budget) reaches 1."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, max(0.0, spent))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def encode_pairs(tok: Tokenizer, pairs, max_len: int, alpha: float = 0.0, seed: int = 0):
    """(source ids + </s>, target ids) per pair, cut to max_len; alpha > 0: sampled segmentations (from seed)."""
    srcs = tok.encode_batch([s for s, _ in pairs], alpha, seed)
    tgts = tok.encode_batch([t for _, t in pairs], alpha, seed + 1)
    out = []
    for s, t in zip(srcs, tgts):
        if not s or not t:
            continue
        out.append((s[:max_len - 1] + [tok.eos_id], t[:max_len - 1]))
    return out


def make_tensors(examples, idx, pad, bos, eos, device):
    src = [examples[i][0] for i in idx]
    tgt = [examples[i][1] for i in idx]
    S, T = max(map(len, src)), max(map(len, tgt)) + 1
    s = torch.full((len(idx), S), pad, dtype=torch.long)
    ti = torch.full((len(idx), T), pad, dtype=torch.long)
    to = torch.full((len(idx), T), pad, dtype=torch.long)
    for j, (a, b) in enumerate(zip(src, tgt)):
        s[j, :len(a)] = torch.tensor(a)
        ti[j, :len(b) + 1] = torch.tensor([bos] + b)
        to[j, :len(b) + 1] = torch.tensor(b + [eos])
    return s.to(device), ti.to(device), to.to(device)  # (B, S), (B, T), (B, T)


def loss_fn(logits, target, pad, smoothing):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=pad,
                           label_smoothing=smoothing, reduction="sum")


@torch.no_grad()
def validate(model, examples, batches, pad, bos, eos, device) -> float:
    model.eval()
    total, n = 0.0, 0
    for idx in batches:
        s, ti, to = make_tensors(examples, idx, pad, bos, eos, device)
        total += loss_fn(model(s, ti), to, pad, 0.0).item()
        n += int((to != pad).sum())
    return total / max(1, n)


def new_model(config: ModelConfig, seed: int, device) -> Transformer:
    """The model, initialised from `seed` (every generator is seeded: the CPU's, and the accelerator's)."""
    manual_seed(seed)
    return Transformer(config).to(device)


def new_optimizer(model, a) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=a.weight_decay)


def set_lr(opt, lr: float) -> None:
    for g in opt.param_groups:
        g["lr"] = lr


def step_groups(lengths, max_tokens: int, seed: int, world_size: int = 1) -> list[list[list[int]]]:
    """One epoch's steps: the shuffled batch list (the same on every process) cut into groups of
    world_size consecutive batches; process r trains on batch r of each group. A tail of fewer than
    world_size batches is dropped so that every process does the same number of steps."""
    batches = D.make_batches(lengths, max_tokens, seed=seed)
    n = len(batches) // world_size
    return [batches[k * world_size:(k + 1) * world_size] for k in range(n)]


def train_step(net, opt, batches, pad: int, smoothing: float, clip: float, amp=None,
               dist: distributed.Dist | None = None) -> tuple[float, int, float]:
    """One optimizer step on this process's `batches` [(src, tgt_in, tgt_out)].

    Returns the summed loss and the target tokens of those batches, and the gradient norm before clipping.
    The loss is normalised by the target tokens of the whole step (all processes, one all-reduce) and
    DDP's mean over processes is scaled back to a sum, so the update is exactly that of one process
    stepping on the union of all processes' batches -- which is what passing several batches here does.
    `amp`: None (float32) or the autocast dtype (torch.bfloat16)."""
    dist = dist or distributed.Dist()
    n_local = sum(int((to != pad).sum()) for _, _, to in batches)
    n_global = dist.all_sum([n_local])[0] if dist.active else n_local
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for k, (s, ti, to) in enumerate(batches):
        accumulate = k < len(batches) - 1 and hasattr(net, "no_sync")
        with net.no_sync() if accumulate else nullcontext():
            with torch.autocast(s.device.type, dtype=amp or torch.bfloat16, enabled=amp is not None):
                logits = net(s, ti)
            loss = loss_fn(logits.float(), to, pad, smoothing)
            (loss * dist.world_size / n_global).backward()
        total += loss.item()
    norm = torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
    opt.step()
    return total, n_local, norm.item()
