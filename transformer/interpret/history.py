"""The one owner of attention_history.npz: cross-attention of fixed example sentences, once per epoch.

File format (unchanged since the first checkpoints; one compressed npz):
  sentences            (N,) str      the example sentences
  epochs               (E,) float    the epochs recorded, ascending: 0 = before training, 0.1 = a tenth of
                                     the way through epoch 1, 1 = after epoch 1 (older files hold ints)
  src_{i}              (S,) str      source pieces of sentence i, ending with </s>
  tgt_{i}_e{epoch:g}   (T,) str      greedy output pieces after that epoch: <s> ... (</s>)
  cross_{i}_e{epoch:g} (L, H, T, S)  cross-attention (stored as float16)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HISTORY = "attention_history.npz"


def epoch_key(epoch) -> str:
    """'e3' for epoch 3, 'e0.25' for a quarter of the way through epoch 1."""
    return f"e{float(epoch):g}"


def as_epoch(epoch):
    """An int where the epoch is whole (1.0 -> 1), else the float."""
    epoch = float(epoch)
    return int(epoch) if epoch.is_integer() else epoch


def epoch_point(epoch) -> tuple[int, float | None]:
    """A recorded point as (whole epochs done, % into the next or None): 0.02 -> (0, 2.0), 3 -> (3, None)."""
    e = float(epoch)
    return int(e), (None if e.is_integer() else round((e - int(e)) * 100, 1))


def describe_epoch(epoch) -> str:
    """A recorded point in words: 'before training' (0), '2 % into epoch 1' (0.02), 'after epoch 3' (3)."""
    whole, percent = epoch_point(epoch)
    if percent is None:
        return f"after epoch {whole}" if whole else "before training"
    return f"{percent:g} % into epoch {whole + 1}"


def save_history(path, sentences: list[str], tokenizer, history: list[dict]) -> None:
    """history: [{"epoch": float, "snap": [(tgt_ids, cross (L, H, T, S)) per sentence]}], epochs ascending."""
    arrays = {"sentences": np.array(list(sentences), dtype=str),
              "epochs": np.array([float(h["epoch"]) for h in history], dtype=np.float64)}
    for i, text in enumerate(sentences):
        arrays[f"src_{i}"] = np.array(tokenizer.pieces(tokenizer.encode(text)) + ["</s>"])
        for h in history:
            tgt, cross = h["snap"][i]
            arrays[f"tgt_{i}_{epoch_key(h['epoch'])}"] = np.array(tokenizer.pieces(tgt))
            arrays[f"cross_{i}_{epoch_key(h['epoch'])}"] = cross
    np.savez_compressed(path, **arrays)


class AttentionHistory:
    """A loaded attention_history.npz (read fully into memory; the file is small)."""

    def __init__(self, arrays: dict, where: str = "attention history"):
        self._z = arrays
        self._where = where
        try:
            self.sentences: list[str] = [str(s) for s in arrays["sentences"]]
            self.epochs: list = [as_epoch(e) for e in arrays["epochs"]]
        except KeyError as e:
            raise ValueError(f"{where}: not an attention history (no {e.args[0]!r} array)") from None
        names = [[f"src_{i}"] + [f"{kind}_{i}_{epoch_key(e)}" for e in self.epochs for kind in ("tgt", "cross")]
                 for i in range(len(self.sentences))]
        missing = [k for ks in names for k in ks if k not in arrays]
        if missing:
            raise ValueError(f"{where}: incomplete attention history (missing {missing[:3]})")

    @classmethod
    def load(cls, path) -> AttentionHistory:
        """Raises FileNotFoundError if the file is missing, ValueError if it is not a readable history."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no attention history")
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"{path}: not a readable attention history ({str(e)[:200]})") from None
        return cls(arrays, str(path))

    def _index(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(self.sentences):
            raise ValueError(f"{self._where}: sentence index must be 0..{len(self.sentences) - 1}, got {i!r}")
        return int(i)

    def _epoch(self, epoch) -> str:
        """The key suffix of a recorded epoch (int or float)."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, float, np.integer, np.floating)) \
                or epoch not in self.epochs:
            raise ValueError(f"{self._where}: epoch {epoch!r} was not recorded (recorded: {self.epochs})")
        return epoch_key(epoch)

    def source(self, i: int) -> list[str]:
        """Source pieces of sentence i, ending with </s>."""
        return [str(p) for p in self._z[f"src_{self._index(i)}"]]

    def target(self, i: int, epoch: int) -> list[str]:
        """Greedy output pieces of sentence i after `epoch`, starting with <s>."""
        return [str(p) for p in self._z[f"tgt_{self._index(i)}_{self._epoch(epoch)}"]]

    def cross(self, i: int, epoch: int) -> np.ndarray:
        """Cross-attention of sentence i after `epoch`: (L, H, T, S) float32."""
        return self._z[f"cross_{self._index(i)}_{self._epoch(epoch)}"].astype(np.float32)

    def snapshots(self, tokenizer, epoch: int) -> list[tuple[list[int], np.ndarray]]:
        """One epoch's `snap` as save_history takes it (target ids, cross as stored), for train --resume."""
        key = self._epoch(epoch)
        return [([tokenizer.piece_id(p) for p in self.target(i, epoch)], self._z[f"cross_{i}_{key}"])
                for i in range(len(self.sentences))]
