"""python -m transformer.average --checkpoint checkpoints/de-en [--search] [--epochs 14 18]

Averages the weights of saved epoch checkpoints (CHECKPOINT/epochs/epoch_NNN.pt) and writes the result
as the checkpoint's model.pt. With --search, the average of the last k epochs is scored on the validation
sets for every k and the best k is kept: selection never looks at the test set. The score is the one training
logs: greedy sacreBLEU on Multi30k val and on Tatoeba's validation part (transformer.train.corpus), averaged over the
two domains (--tatoeba none: Multi30k val alone).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import torch

from ..model.checkpoint import TOKENIZER, build_model, save_checkpoint
from ..model.config import ModelConfig
from ..model.metrics import update_metrics
from ..model.tokenizer import Tokenizer
from . import corpus as C
from . import data as D
from .evaluate import translate_bleu


def average_weights(paths) -> dict:
    """Element-wise mean (float32) of the state_dicts saved in `paths` (save_weights files)."""
    avg = None
    for p in paths:
        sd = torch.load(p, map_location="cpu", weights_only=True)["state_dict"]
        if avg is None:
            avg = {k: v.float().clone() for k, v in sd.items()}
        else:
            for k in avg:
                avg[k] += sd[k].float()
    return {k: v / len(paths) for k, v in avg.items()}


def epoch_files(ckpt: Path) -> dict[int, Path]:
    return {int(re.search(r"(\d+)", p.stem).group(1)): p for p in sorted((ckpt / "epochs").glob("epoch_*.pt"))}


def score(paths: list[Path], tok: Tokenizer, val_sets: dict, device) -> tuple[dict, torch.nn.Module]:
    """Validation BLEU of the average of `paths`, as transformer.train.train scores an epoch (mean over the domains)."""
    config = ModelConfig.from_dict(torch.load(paths[0], map_location="cpu", weights_only=True)["config"])
    model = build_model(config, average_weights(paths), "average")
    return translate_bleu(model, tok, val_sets, device), model


def validation_sets(data_dir, tatoeba: str, src: str = "de", tgt: str = "en") -> dict:
    """{domain: validation pairs} in the direction src -> tgt, as training scored them: Multi30k val, and
    Tatoeba's validation part unless `tatoeba` is 'none'."""
    sets = {"multi30k": D.load_pairs(data_dir, "val", src, tgt)}
    if tatoeba != "none":
        sets["tatoeba"] = C.oriented(C.tatoeba_split(tatoeba, data_dir), src).val
    return sets


def direction(files: dict[int, Path]) -> tuple[str, str]:
    """(source, target) language of the saved epochs (their config; older ones: de -> en)."""
    config = ModelConfig.from_dict(torch.load(next(iter(files.values())), map_location="cpu",
                                              weights_only=True)["config"])
    return config.src_lang, config.tgt_lang


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="checkpoints/de-en")
    p.add_argument("--epochs", type=int, nargs=2, metavar=("FIRST", "LAST"), help="average this range")
    p.add_argument("--search", action="store_true", help="try the last k epochs for every k; keep the best on val")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA), help="the Tatoeba file; 'none': Multi30k val only")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    ckpt = Path(a.checkpoint)
    files = epoch_files(ckpt)
    if not files:
        sys.exit(f"error: no epoch checkpoints in {ckpt / 'epochs'} (train with --keep-epochs N)")
    tok = Tokenizer.load(ckpt / TOKENIZER)
    try:
        val_sets = validation_sets(a.data_dir, a.tatoeba, *direction(files))  # in the model's own direction
    except D.DataError as e:
        sys.exit(f"error: {e}")
    epochs = sorted(files)
    if a.search:
        last = epochs[-1]
        windows = [(i, last) for i in reversed(epochs) if all(e in files for e in range(i, last + 1))]
    elif a.epochs:
        windows = [tuple(a.epochs)]
    else:
        windows = [(epochs[0], epochs[-1])]
    best = None
    for i, j in windows:
        s, model = score([files[e] for e in range(i, j + 1)], tok, val_sets, a.device)
        domains = ", ".join(f"{d} {s[f'bleu_{d}']:.2f}" for d in val_sets)
        print(f"epochs {i:3d}..{j:3d}: val BLEU {s['bleu']:.2f} (lowercased {s['bleu_lc']:.2f}; {domains})",
              flush=True)
        if best is None or s["bleu"] > best[0]["bleu"]:
            best = (s, model, (i, j))
    s, model, (i, j) = best
    save_checkpoint(ckpt, model, tok)
    by_domain = {k: v for k, v in s.items() if k.startswith("bleu_") and not k.startswith("bleu_lc")}
    weights = f"epoch {i}" if i == j else f"average of epochs {i:03d}..{j:03d}"  # a window of one: that epoch
    update_metrics(ckpt, {"weights": weights, "val_bleu": s["bleu"],
                          "val_bleu_lc": s["bleu_lc"], "val_by_domain": by_domain},
                   drop=("test",))  # test scores were of other weights
    print(f"kept: {weights}, val BLEU {s['bleu']:.2f} (lowercased {s['bleu_lc']:.2f})")


if __name__ == "__main__":
    main()
