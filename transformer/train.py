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
import math
import random
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import corpus as C
from . import data as D
from . import distributed
from .average import average_weights
from .checkpoint import LOG, TOKENIZER, save_checkpoint, save_weights
from .config import ModelConfig
from .decoding import Translator, attend_ids
from .device import describe
from .history import HISTORY, AttentionHistory, save_history
from .metrics import bleu, update_metrics
from .model import Transformer
from .tokenizer import Tokenizer

STATE = "train_state.pt"
N_EXAMPLES = 4  # example sentences whose cross-attention is recorded every epoch
EARLY_SNAPSHOTS = (0.02, 0.05, 0.1, 0.25, 0.5)  # also recorded inside epoch 1 (and 0: before training)
AMP = {"off": None, "bf16": torch.bfloat16}


def lr_at(step: int, peak: float, warmup: int, total: int, floor: float = 0.02) -> float:
    """Linear warm-up to `peak`, then cosine decay to floor*peak at `total` steps."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def encode_pairs(tok: Tokenizer, pairs, max_len: int):
    srcs = tok.encode_batch([s for s, _ in pairs])
    tgts = tok.encode_batch([t for _, t in pairs])
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


def tiny_corpus(dirpath: Path) -> Path:
    """A small synthetic de/en corpus for --dry-run and tests."""
    import gzip
    words = [("Hund", "dog"), ("Katze", "cat"), ("Mann", "man"), ("Frau", "woman"), ("Kind", "child")]
    verbs = [("rennt", "runs"), ("schläft", "sleeps"), ("springt", "jumps"), ("sitzt", "sits")]
    pairs = [(f"Ein {w} {v}.", f"A {e} {f}.") for w, e in words for v, f in verbs]
    for split in D.SPLITS:
        for k, lang in enumerate(("de", "en")):
            with gzip.open(dirpath / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(p[k] for p in pairs) + "\n")
    return dirpath


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


def translate_bleu(model, tok, val_sets: dict, device) -> dict:
    """Greedy-translate each domain's validation sources with the current weights; BLEU against their targets.
    {"bleu", "bleu_lc"}: the mean over the domains (what averaging and the log compare), plus each domain's
    as "bleu_<domain>" / "bleu_lc_<domain>"."""
    tr = Translator(model.eval(), tok, device)
    out = {}
    for name, pairs in val_sets.items():
        b = bleu(tr.translate_batch([s for s, _ in pairs], batch_size=128), [t for _, t in pairs])
        out[f"bleu_{name}"], out[f"bleu_lc_{name}"] = b["bleu"], b["bleu_lc"]
    for key in ("bleu", "bleu_lc"):
        out[key] = round(sum(out[f"{key}_{n}"] for n in val_sets) / len(val_sets), 2)
    return out


def parse_args(argv=None):
    m = {f.name: f.default for f in fields(ModelConfig)}
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR), help="the Multi30k task-1 folder")
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA),
                   help="Tatoeba German<TAB>English pairs (.tsv[.gz]), split by transformer.corpus; 'none': captions only")
    p.add_argument("--multi30k-upsample", type=int, default=2,
                   help="Multi30k's training pairs appear this many times per epoch beside Tatoeba's once")
    p.add_argument("--out", default="checkpoints/de-en")
    p.add_argument("--src", default="de", choices=("de", "en"), help="source language (de: German, en: English)")
    p.add_argument("--tgt", default="en", choices=("de", "en"), help="target language")
    p.add_argument("--tokenizer", default="",
                   help="reuse this SentencePiece model (e.g. the joint one of checkpoints/de-en) instead of training one")
    p.add_argument("--vocab-size", type=int, default=m["vocab_size"])
    p.add_argument("--d-model", type=int, default=m["d_model"])
    p.add_argument("--heads", type=int, default=m["n_heads"])
    p.add_argument("--enc-layers", type=int, default=m["n_encoder_layers"])
    p.add_argument("--dec-layers", type=int, default=m["n_decoder_layers"])
    p.add_argument("--d-ff", type=int, default=m["d_ff"])
    p.add_argument("--dropout", type=float, default=m["dropout"])
    p.add_argument("--attn-dropout", type=float, default=m["attn_dropout"])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--max-tokens", type=int, default=3500,
                   help="tokens per batch (padded, longer side), per process")
    p.add_argument("--lr", type=float, default=1.2e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=500, help="warm-up steps")
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--amp", choices=tuple(AMP), default="off",
                   help="mixed precision: bf16 autocast for forward/backward (off: float32)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="auto", help="auto|cpu|cuda (under torchrun: cuda:LOCAL_RANK)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--average-last", type=int, default=5, help="average the last N epochs' weights (1: off)")
    p.add_argument("--keep-epochs", type=int, default=0,
                   help="epoch checkpoints kept in OUT/epochs for transformer.average (default: --average-last)")
    p.add_argument("--resume", action="store_true", help=f"continue from OUT/{STATE}")
    p.add_argument("--dry-run", action="store_true", help="a few steps on a tiny synthetic corpus")
    p.add_argument("--atlas", action="store_true",
                   help="at the end, write the head atlas of the final weights on the val split (transformer.atlas)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--stop-after-minutes", type=float, default=0,
                   help="pause this process after N minutes of training: validate, save the state mid-epoch and "
                        "exit; --resume continues at the next batch (the schedule is unchanged)")
    p.add_argument("--stop-after-steps", type=int, default=0,
                   help="pause after N steps of this process, like --stop-after-minutes")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.src == a.tgt:
        p.error(f"--src and --tgt are both {a.src!r}")
    return a


def apply_dry_run(a) -> None:
    """Shrink the model and the schedule for --dry-run (the tiny synthetic corpus is made by load_data)."""
    a.vocab_size, a.d_model, a.heads, a.d_ff = min(a.vocab_size, 60), 32, 2, 64
    a.enc_layers = a.dec_layers = 1
    a.epochs, a.warmup, a.average_last = min(a.epochs, 3), 5, min(a.average_last, 2)
    a.max_tokens = min(a.max_tokens, 128)
    a.data_dir = "(dry run: tiny synthetic corpus)"


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


def corpora(a, data_dir, tatoeba) -> tuple[list, dict, list]:
    m_train, m_val = D.load_pairs(data_dir, "train", a.src, a.tgt), D.load_pairs(data_dir, "val", a.src, a.tgt)
    if tatoeba is None:
        return m_train, {"multi30k": m_val}, m_train
    sp = C.oriented(C.tatoeba_split(tatoeba, data_dir), a.src)  # the same split either way round
    train = C.mix(m_train, sp.train, a.multi30k_upsample)
    return train, {"multi30k": m_val, "tatoeba": sp.val}, m_train + sp.train


def tiny_tatoeba(dirpath: Path) -> Path:
    """A small synthetic everyday-sentence corpus (German<TAB>English) for --dry-run and tests."""
    subjects = [("Ich", "I", "bin"), ("Du", "You", "bist"), ("Er", "He", "ist"), ("Sie", "She", "ist")]
    states = [("müde", "tired"), ("hier", "here"), ("glücklich", "happy"), ("zu Hause", "at home"), ("krank", "ill")]
    en_be = {"I": "am", "You": "are", "He": "is", "She": "is"}
    lines = [f"{d} {v} {s}.\t{e} {en_be[e]} {t}." for d, e, v in subjects for s, t in states]
    path = dirpath / "tatoeba.tsv"
    path.write_text("\n".join(lines * 2) + "\n", encoding="utf-8")
    return path


def get_tokenizer(a, out: Path, train_pairs, dist: distributed.Dist) -> Tokenizer:
    """OUT's tokenizer when resuming, else one trained on the training pairs; made by process 0 only."""
    proto = None
    if dist.is_main:
        if a.resume and (out / TOKENIZER).exists():
            proto = (out / TOKENIZER).read_bytes()
        elif a.tokenizer:
            proto = Path(a.tokenizer).read_bytes()
            print(f"tokenizer: {len(Tokenizer(proto))} pieces from {a.tokenizer}", flush=True)
        else:
            t0 = time.time()
            proto = Tokenizer.train([s for p in train_pairs for s in p], a.vocab_size).proto
            print(f"tokenizer: {len(Tokenizer(proto))} pieces in {time.time() - t0:.1f}s", flush=True)
    return Tokenizer(dist.broadcast(proto))


def model_config(a, vocab_size: int) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, d_model=a.d_model, n_heads=a.heads, n_encoder_layers=a.enc_layers,
                       n_decoder_layers=a.dec_layers, d_ff=a.d_ff, dropout=a.dropout, attn_dropout=a.attn_dropout,
                       src_lang=a.src, tgt_lang=a.tgt)


def new_model(config: ModelConfig, seed: int, device) -> Transformer:
    torch.manual_seed(seed)
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
    started: float = field(default_factory=time.time)
    steps_this_process: int = 0

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
    opt = new_optimizer(model, a)
    log = {"args": vars(a), "config": config.to_dict(), "world_size": dist.world_size, "amp": a.amp, "epochs": []}
    run = Run(a, out, dist, tok, config, train, val, val_sets, model, model, opt, total_steps, steps_per_epoch,
              log, examples=D.read_examples(D.examples_path(a.src))[:N_EXAMPLES], data_note=(
                  f"{len(train_pairs):,} training pairs an epoch: " + (
                      f"Tatoeba's training part (transformer.corpus) + Multi30k train x{a.multi30k_upsample}"
                      if a.tatoeba != "none" else "Multi30k train")))
    if a.resume:
        resume(run)
    elif dist.is_main and run.examples:  # the maps before any training: where the alignment emerges from
        run.history.append({"epoch": 0, "snap": snapshot_attention(model, tok, run.examples, config.max_len)})
    run.log.setdefault("starts", []).append(  # every start and resume with its flags: how the run was made
        {"step": run.step, "epoch": run.start_epoch, "args": vars(a)})
    if dist.active:  # different dropout masks on each process, the same model everywhere (DDP broadcasts it)
        torch.manual_seed(a.seed + 7919 * dist.rank + 104729 * run.start_epoch)
        run.net = dist.wrap(model)
    run.say(f"model: {model.num_parameters():,} parameters; {len(train)} train / {len(val)} val pairs; "
            f"{steps_per_epoch} steps/epoch; device {describe(dist.device)}"
            + (f" x {dist.world_size} processes" if dist.active else "") + f"; amp {a.amp}")
    return run


def resume(run: Run) -> None:
    """Load OUT/train_state.pt (read by process 0, sent to the others), the log and the attention history."""
    path = run.out / STATE
    st = None
    if run.dist.is_main and path.exists():
        st = torch.load(path, map_location="cpu", weights_only=True)
        st["log"] = json.loads((run.out / LOG).read_text())
    st = run.dist.broadcast(st)
    if st is None:
        return
    run.model.load_state_dict(st["model"])
    run.opt.load_state_dict(st["optim"])
    run.step, run.start_epoch, run.train_seconds = st["step"], st["epoch"] + 1, st["train_seconds"]
    if st.get("next_group"):  # paused mid-epoch: the same epoch again, from the next batch
        run.start_epoch, run.start_group = st["epoch"], st["next_group"]
    torch.set_rng_state(st["rng"])
    run.log = {**st["log"], "world_size": run.dist.world_size, "amp": run.a.amp}
    run.say(f"resumed at epoch {run.start_epoch}, batch group {run.start_group} (step {run.step})")
    if run.dist.is_main and (run.out / HISTORY).exists():
        past = AttentionHistory.load(run.out / HISTORY)
        run.examples = past.sentences  # keep recording the same sentences
        run.history = [{"epoch": e, "snap": past.snapshots(run.tok, e)} for e in past.epochs
                       if e < 1 or any(x["epoch"] == e and "paused_at_group" not in x for x in run.log["epochs"])]


def train_epoch(run: Run, epoch: int) -> dict:
    """Train one epoch (or up to --max-steps); returns the epoch's totals over all processes."""
    from tqdm import tqdm
    a, c, dist = run.a, run.config, run.dist
    run.net.train()
    groups = step_groups(run.lengths, a.max_tokens, a.seed * 1000 + epoch, dist.world_size)
    first = run.start_group if epoch == run.start_epoch else 0
    bar = tqdm(groups, desc=f"epoch {epoch}", disable=a.no_progress or not dist.is_main, mininterval=5,
               file=sys.stdout, initial=first)
    t0, ep_tokens, ep_loss, ep_n, norms, done = time.time(), 0, 0.0, 0, [], first
    for group in groups[first:]:
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


def end_of_epoch(run: Run, epoch: int, stats: dict) -> None:
    """Process 0: validation loss and BLEU, attention snapshot, log line, checkpoints, state for --resume."""
    a, c, out, model = run.a, run.config, run.out, run.model
    rng = torch.get_rng_state()  # before validation's decoding, so that a resumed run draws the same dropout
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
    torch.save({"model": model.state_dict(), "optim": run.opt.state_dict(), "step": run.step, "epoch": epoch,
                "next_group": stats["next_group"] if run.paused else 0,
                "train_seconds": run.train_seconds, "rng": rng}, out / STATE)


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
               "tokens_per_s": round(sum(e["tokens_per_s"] for e in epochs) / len(epochs))}
    update_metrics(out, metrics)
    (out / LOG).write_text(json.dumps(run.log, indent=1))  # this start too (one that only finished the run)
    if a.atlas:
        write_atlas(run)
    print("done:", json.dumps(metrics), flush=True)
    return metrics


def write_atlas(run: Run) -> None:
    """The head atlas of the saved checkpoint on the validation pairs (python -m transformer.atlas does the same)."""
    from . import atlas
    from .checkpoint import load_checkpoint
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
            if a.max_steps and run.step >= a.max_steps:
                break
            stats = train_epoch(run, epoch)
            if dist.is_main:
                end_of_epoch(run, epoch, stats)
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
