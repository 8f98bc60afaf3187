"""Training CLI: python -m transformer.train --out checkpoints/de-en [...]

Teacher forcing with BOS/EOS, label smoothing, linear warm-up then cosine decay, token-based
batches, gradient clipping, validation loss + BLEU each epoch, resume, averaging of the last epochs,
and a per-epoch snapshot of cross-attention on fixed example sentences (attention_history.npz).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import data as D
from .average import average_weights
from .checkpoint import LOG, TOKENIZER, save_checkpoint, save_weights
from .config import ModelConfig
from .decoding import Translator, attend_ids
from .device import describe, resolve_device
from .history import HISTORY, AttentionHistory, save_history
from .metrics import bleu, update_metrics
from .model import Transformer
from .tokenizer import Tokenizer


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


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--out", default="checkpoints/de-en")
    p.add_argument("--src", default="de")
    p.add_argument("--tgt", default="en")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--enc-layers", type=int, default=3)
    p.add_argument("--dec-layers", type=int, default=3)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--dropout", type=float, default=0.15)
    p.add_argument("--attn-dropout", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=19)
    p.add_argument("--max-tokens", type=int, default=3500, help="tokens per batch (padded, longer side)")
    p.add_argument("--lr", type=float, default=1.2e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=500, help="warm-up steps")
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="auto", help="auto|cpu|cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--average-last", type=int, default=5, help="average the last N epochs' weights (1: off)")
    p.add_argument("--keep-epochs", type=int, default=0,
                   help="epoch checkpoints kept in OUT/epochs for transformer.average (default: --average-last)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/train_state.pt")
    p.add_argument("--dry-run", action="store_true", help="a few steps on a tiny synthetic corpus")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.dry_run:
        tmp = tempfile.mkdtemp(prefix="attnlens-dry-")
        a.data_dir = str(tiny_corpus(Path(tmp)))
        a.vocab_size, a.d_model, a.heads, a.d_ff = min(a.vocab_size, 60), 32, 2, 64
        a.enc_layers = a.dec_layers = 1
        a.epochs, a.warmup, a.max_tokens, a.average_last = min(a.epochs, 3), 5, 128, min(a.average_last, 2)
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    device = resolve_device(a.device)
    out = Path(a.out)
    (out / "epochs").mkdir(parents=True, exist_ok=True)
    state_path = out / "train_state.pt"

    try:
        train_pairs = D.load_pairs(a.data_dir, "train", a.src, a.tgt)
        val_pairs = D.load_pairs(a.data_dir, "val", a.src, a.tgt)
    except D.DataError as e:
        sys.exit(f"error: {e}")

    if a.resume and (out / TOKENIZER).exists():
        tok = Tokenizer.load(out / TOKENIZER)
    else:
        t0 = time.time()
        tok = Tokenizer.train([s for p in train_pairs for s in p], a.vocab_size)
        print(f"tokenizer: {len(tok)} pieces in {time.time() - t0:.1f}s", flush=True)
    config = ModelConfig(vocab_size=len(tok), d_model=a.d_model, n_heads=a.heads, n_encoder_layers=a.enc_layers,
                         n_decoder_layers=a.dec_layers, d_ff=a.d_ff, dropout=a.dropout, attn_dropout=a.attn_dropout)
    train = encode_pairs(tok, train_pairs, config.max_len)
    val = encode_pairs(tok, val_pairs, config.max_len)
    lengths = [(len(s), len(t) + 1) for s, t in train]
    val_batches = D.make_batches([(len(s), len(t) + 1) for s, t in val], a.max_tokens, shuffle=False)
    steps_per_epoch = len(D.make_batches(lengths, a.max_tokens, seed=a.seed))
    total_steps = steps_per_epoch * a.epochs
    if a.max_steps:
        total_steps = min(total_steps, a.max_steps)

    model = Transformer(config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=a.weight_decay)
    log = {"args": vars(a), "config": config.to_dict(), "epochs": []}
    history, step, start_epoch, train_seconds = [], 0, 1, 0.0
    if a.resume and state_path.exists():
        st = torch.load(state_path, map_location="cpu", weights_only=True)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optim"])
        step, start_epoch, train_seconds = st["step"], st["epoch"] + 1, st["train_seconds"]
        log = json.loads((out / LOG).read_text())
        torch.set_rng_state(st["rng"])
        print(f"resumed after epoch {st['epoch']} (step {step})", flush=True)
        history = [{"epoch": e["epoch"], "snap": None} for e in log["epochs"]]
    examples_de = D.read_examples()[:4]
    if a.resume and (out / HISTORY).exists():
        past = AttentionHistory.load(out / HISTORY)
        for h in history:
            h["snap"] = past.snapshots(tok, h["epoch"])
    print(f"model: {model.num_parameters():,} parameters; {len(train)} train / {len(val)} val pairs; "
          f"{steps_per_epoch} steps/epoch; device {describe(device)}", flush=True)

    from tqdm import tqdm
    pad, bos, eos = config.pad_id, config.bos_id, config.eos_id
    for epoch in range(start_epoch, a.epochs + 1):
        if a.max_steps and step >= a.max_steps:
            break
        model.train()
        batches = D.make_batches(lengths, a.max_tokens, seed=a.seed * 1000 + epoch)
        bar = tqdm(batches, desc=f"epoch {epoch}", disable=a.no_progress, mininterval=5, file=sys.stdout)
        t0, ep_tokens, ep_loss, ep_n = time.time(), 0, 0.0, 0
        for idx in bar:
            for g in opt.param_groups:
                g["lr"] = lr_at(step, a.lr, a.warmup, total_steps)
            s, ti, to = make_tensors(train, idx, pad, bos, eos, device)
            n_tok = int((to != pad).sum())
            loss = loss_fn(model(s, ti), to, pad, a.label_smoothing) / n_tok
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            opt.step()
            step += 1
            ep_tokens += n_tok + int((s != pad).sum())
            ep_loss += loss.item() * n_tok
            ep_n += n_tok
            bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{ep_tokens / (time.time() - t0):.0f}",
                            lr=f"{opt.param_groups[0]['lr']:.2e}")
            if a.max_steps and step >= a.max_steps:
                break
        secs = time.time() - t0
        train_seconds += secs
        val_loss = validate(model, val, val_batches, pad, bos, eos, device)
        tr = Translator(model.eval(), tok, device)
        hyps = tr.translate_batch([s for s, _ in val_pairs], batch_size=128)
        scores = bleu(hyps, [t for _, t in val_pairs])
        snap = snapshot_attention(model, tok, examples_de, config.max_len) if examples_de else []
        history.append({"epoch": epoch, "snap": snap})
        entry = {"epoch": epoch, "step": step, "train_loss": round(ep_loss / max(1, ep_n), 4),
                 "val_loss": round(val_loss, 4), "val_bleu": scores["bleu"], "val_bleu_lc": scores["bleu_lc"],
                 "lr": opt.param_groups[0]["lr"], "epoch_seconds": round(secs, 1),
                 "tokens_per_s": round(ep_tokens / secs), "elapsed_seconds": round(train_seconds, 1)}
        log["epochs"].append(entry)
        print(json.dumps(entry), flush=True)
        save_weights(out / "epochs" / f"epoch_{epoch:03d}.pt", model, half=False)
        for old in sorted((out / "epochs").glob("epoch_*.pt"))[:-max(a.keep_epochs or a.average_last, 1)]:
            old.unlink()
        save_checkpoint(out, model, tok)
        (out / LOG).write_text(json.dumps(log, indent=1))
        if examples_de:
            save_history(out / HISTORY, examples_de, tok, history)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step, "epoch": epoch,
                    "train_seconds": train_seconds, "rng": torch.get_rng_state()}, state_path)

    # Average the last epochs; keep whichever of last/averaged is better on validation BLEU.
    last = log["epochs"][-1]
    final = {"source": f"epoch {last['epoch']}", "val_bleu": last["val_bleu"], "val_bleu_lc": last["val_bleu_lc"]}
    paths = sorted((out / "epochs").glob("epoch_*.pt"))[-a.average_last:]
    if a.average_last > 1 and len(paths) > 1:
        model.load_state_dict(average_weights(paths))
        tr = Translator(model.eval(), tok, device)
        scores = bleu(tr.translate_batch([s for s, _ in val_pairs], batch_size=128), [t for _, t in val_pairs])
        print(f"average of {len(paths)} epochs: val BLEU {scores['bleu']} (last epoch {last['val_bleu']})", flush=True)
        if scores["bleu"] >= last["val_bleu"]:
            final = {"source": f"average of epochs {paths[0].stem[6:]}..{paths[-1].stem[6:]}",
                     "val_bleu": scores["bleu"], "val_bleu_lc": scores["bleu_lc"]}
            save_checkpoint(out, model, tok)
    metrics = {"parameters": model.num_parameters(), "weights": final["source"], "val_bleu": final["val_bleu"],
               "val_bleu_lc": final["val_bleu_lc"], "epochs": last["epoch"], "steps": step,
               "train_seconds": round(train_seconds), "device": describe(device),
               "tokens_per_s": round(sum(e["tokens_per_s"] for e in log["epochs"]) / len(log["epochs"]))}
    update_metrics(out, metrics)
    print("done:", json.dumps(metrics), flush=True)
    return metrics


if __name__ == "__main__":
    main()
