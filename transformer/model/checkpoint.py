"""Checkpoints: a directory with model.pt (config + weights, tensors only), tokenizer.model, logs.

Loading uses torch.load(weights_only=True): no arbitrary object is ever unpickled.
"""
from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import torch

from .config import ModelConfig
from .metrics import METRICS  # noqa: F401  (re-exported; the name is defined in metrics.py)
from .model import Transformer
from .shipped import shipped
from .tokenizer import Tokenizer

FORMAT = "attention-lens/1"
WEIGHTS, TOKENIZER, LOG = "model.pt", "tokenizer.model", "training_log.json"


# the shipped models, checkpoints/de-en and checkpoints/en-de: the checkout's, or those a wheel installed (shipped.py)
SHIPPED = shipped("checkpoints")
DEFAULT_CHECKPOINT = SHIPPED / "de-en"


class CheckpointError(ValueError):
    pass


def resolve_checkpoint(path=None) -> Path:
    """A checkpoint directory from a path, or from a shipped model's name ('de-en', 'en-de': checkpoints/NAME);
    None: the first shipped model."""
    if path is None:
        return DEFAULT_CHECKPOINT
    p = Path(path)
    if not p.exists() and isinstance(path, str) and "/" not in path and (SHIPPED / path).is_dir():
        return SHIPPED / path
    return p


def find_checkpoints(paths=None) -> list[Path]:
    """Every checkpoint named: each path is a checkpoint directory (it holds model.pt) or a folder whose
    sub-directories are checkpoints (sorted by name). None: every shipped model (checkpoints/*)."""
    out: list[Path] = []
    for path in ([SHIPPED] if not paths else paths):
        p = resolve_checkpoint(path)
        if (p / WEIGHTS).is_file() or not p.is_dir():
            out.append(p)  # a checkpoint, or a path load_checkpoint will explain
            continue
        found = sorted(d for d in p.iterdir() if (d / WEIGHTS).is_file())
        if not found:
            raise CheckpointError(f"{p}: neither a checkpoint ({WEIGHTS}) nor a folder of checkpoints")
        out.extend(found)
    return out


def save_weights(path: str | Path, model: Transformer, half: bool = True, extra: dict | None = None) -> None:
    state = {k: (v.half() if half and v.is_floating_point() else v).detach().cpu().contiguous()
             for k, v in model.state_dict().items()}
    torch.save({"format": FORMAT, "config": model.config.to_dict(), "state_dict": state, **(extra or {})}, path)


def read_weights(path: str | Path) -> tuple[ModelConfig, dict]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: weights file not found")
    try:
        # mmap: the tensors are read from the page cache, not copied into the heap first (build_model then copies
        # each into its parameter once and the mapping goes with `state`): loading costs the weights, no more
        blob = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{path}: refused to load: it holds objects other than tensors and plain "
                              f"data, which could run code ({str(e).splitlines()[0][:200]})") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable PyTorch file, truncated or corrupt "
                              f"({str(e).splitlines()[0][:200]})") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an attention-lens checkpoint (expected format {FORMAT!r})")
    try:
        config = ModelConfig.from_dict(blob["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid model config: {e}") from None
    state = blob.get("state_dict")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: state_dict missing or not a mapping of tensors")
    return config, state


def build_model(config: ModelConfig, state: dict, where: str = "checkpoint") -> Transformer:
    model = Transformer(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(expected) & set(state) if expected[k].shape != state[k].shape)
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}")
        if unexpected:
            parts.append(f"unexpected {unexpected[:3]}{'...' if len(unexpected) > 3 else ''}")
        if wrong:
            k = wrong[0]
            parts.append(f"shape of {k} is {tuple(state[k].shape)} but the config gives {tuple(expected[k].shape)}")
        raise CheckpointError(f"{where}: config does not match the weights: " + "; ".join(parts))
    model.load_state_dict(state)  # copies each tensor into its float32 parameter (half weights cast on the way)
    return model.eval()


def load_tokenizer(ckpt_dir: Path) -> Tokenizer:
    path = ckpt_dir / TOKENIZER
    if not path.is_file():
        raise CheckpointError(f"{ckpt_dir}: tokenizer missing (expected {TOKENIZER})")
    try:
        return Tokenizer.shared(path)  # one object for checkpoints with the same file
    except ValueError as e:
        raise CheckpointError(f"{path}: bad tokenizer: {e}") from None


def load_checkpoint(ckpt_dir: str | Path | None = None) -> tuple[Transformer, Tokenizer]:
    ckpt_dir = resolve_checkpoint(ckpt_dir)
    if not ckpt_dir.is_dir():
        raise CheckpointError(f"{ckpt_dir}: checkpoint directory not found")
    config, state = read_weights(ckpt_dir / WEIGHTS)
    tokenizer = load_tokenizer(ckpt_dir)
    if len(tokenizer) != config.vocab_size:
        raise CheckpointError(f"{ckpt_dir}: tokenizer has {len(tokenizer)} pieces but the model "
                              f"expects vocab_size={config.vocab_size}")
    return build_model(config, state, str(ckpt_dir / WEIGHTS)), tokenizer


def save_checkpoint(ckpt_dir: str | Path, model: Transformer, tokenizer: Tokenizer, half: bool = True) -> None:
    ckpt_dir = Path(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    save_weights(ckpt_dir / WEIGHTS, model, half=half)
    tokenizer.save(ckpt_dir / TOKENIZER)


def read_json(path: Path, default=None):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return default
