"""The command line of transformer.train.train: its flags (every default of the model's from ModelConfig), what
--dry-run shrinks, and the ModelConfig the flags make."""
from __future__ import annotations

import argparse
from dataclasses import fields

import torch

from ..model.config import ModelConfig
from . import corpus as C
from . import data as D
from .train_state import STATE

AMP = {"off": None, "bf16": torch.bfloat16}


def parse_args(argv=None, description: str | None = None):
    """transformer.train.train's arguments; `description` heads --help (transformer.train.train passes its
    docstring)."""
    m = {f.name: f.default for f in fields(ModelConfig)}
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR), help="the Multi30k task-1 folder")
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA),
                   help="Tatoeba German<TAB>English pairs (.tsv[.gz]), split by transformer.train.corpus; "
                        "'none': captions only")
    p.add_argument("--multi30k-upsample", type=int, default=2,
                   help="Multi30k's training pairs appear this many times per epoch beside Tatoeba's once")
    p.add_argument("--concat", type=float, default=0.0,
                   help="also train on concatenations of 2-3 random training pairs (sources joined, targets joined): "
                        "this many per training pair (e.g. 0.1: 10%% more pairs an epoch), drawn once from --seed; "
                        "longer inputs than the corpus has (a known remedy for length generalisation)")
    p.add_argument("--long-upsample", type=int, default=0, metavar="K",
                   help="Tatoeba training pairs of --long-words source words or more appear K more times per epoch "
                        "(natural long everyday sentences are rare: about 3%% have 13+ words)")
    p.add_argument("--long-words", type=int, default=13, metavar="W", help="what --long-upsample counts as long")
    p.add_argument("--sample-alpha", type=float, default=0.0, metavar="A",
                   help="subword regularisation: each epoch segments every training pair anew, sampled by the "
                        "SentencePiece model with smoothing A (e.g. 0.1; 0: off, the best segmentation always)")
    p.add_argument("--init", default="",
                   help="start from this checkpoint's weights (fine-tuning: its tokenizer, a fresh optimizer and "
                        "schedule); the model flags must give its shapes")
    p.add_argument("--out", default="checkpoints/de-en")
    p.add_argument("--src", default="de", choices=("de", "en"), help="source language (de: German, en: English)")
    p.add_argument("--tgt", default="en", choices=("de", "en"), help="target language")
    p.add_argument("--tokenizer", default="",
                   help="reuse this SentencePiece model (e.g. the joint one of checkpoints/de-en) instead of training "
                        "one")
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
                   help="epoch checkpoints kept in OUT/epochs for transformer.train.average (default: --average-last)")
    p.add_argument("--resume", action="store_true", help=f"continue from OUT/{STATE}")
    p.add_argument("--dry-run", action="store_true", help="a few steps on a tiny synthetic corpus")
    p.add_argument("--atlas", action="store_true",
                   help="at the end, write the head atlas of the final weights on the val split "
                        "(transformer.train.atlas)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--minutes", type=float, default=0,
                   help="a time budget: the cosine decays over N minutes of training steps (validation not counted) "
                        "instead of over --epochs, and the run ends when they are spent (its last epoch partial); "
                        "--epochs is then an upper bound. For a lent accelerator of fixed time (0: off)")
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


def model_config(a, vocab_size: int) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, d_model=a.d_model, n_heads=a.heads, n_encoder_layers=a.enc_layers,
                       n_decoder_layers=a.dec_layers, d_ff=a.d_ff, dropout=a.dropout, attn_dropout=a.attn_dropout,
                       src_lang=a.src, tgt_lang=a.tgt)
