"""The one owner of attention_history.npz: cross-attention of fixed example sentences, once per epoch.

File format (unchanged since the first checkpoints; one compressed npz):
  sentences            (N,) str      the example sentences
  epochs               (E,) int      the epochs recorded, ascending
  src_{i}              (S,) str      source pieces of sentence i, ending with </s>
  tgt_{i}_e{epoch}     (T,) str      greedy output pieces after that epoch: <s> ... (</s>)
  cross_{i}_e{epoch}   (L, H, T, S)  cross-attention (stored as float16)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HISTORY = "attention_history.npz"


def save_history(path, sentences: list[str], tokenizer, history: list[dict]) -> None:
    """history: [{"epoch": int, "snap": [(tgt_ids, cross (L, H, T, S)) per sentence]}], epochs ascending."""
    arrays = {"sentences": np.array(list(sentences), dtype=str),
              "epochs": np.array([int(h["epoch"]) for h in history], dtype=np.int64)}
    for i, text in enumerate(sentences):
        arrays[f"src_{i}"] = np.array(tokenizer.pieces(tokenizer.encode(text)) + ["</s>"])
        for h in history:
            tgt, cross = h["snap"][i]
            arrays[f"tgt_{i}_e{h['epoch']}"] = np.array(tokenizer.pieces(tgt))
            arrays[f"cross_{i}_e{h['epoch']}"] = cross
    np.savez_compressed(path, **arrays)


class AttentionHistory:
    """A loaded attention_history.npz (read fully into memory; the file is small)."""

    def __init__(self, arrays: dict, where: str = "attention history"):
        self._z = arrays
        self._where = where
        try:
            self.sentences: list[str] = [str(s) for s in arrays["sentences"]]
            self.epochs: list[int] = [int(e) for e in arrays["epochs"]]
        except KeyError as e:
            raise ValueError(f"{where}: not an attention history (no {e.args[0]!r} array)") from None
        missing = [k for i in range(len(self.sentences))
                   for k in [f"src_{i}"] + [f"{kind}_{i}_e{e}" for e in self.epochs for kind in ("tgt", "cross")]
                   if k not in arrays]
        if missing:
            raise ValueError(f"{where}: incomplete attention history (missing {missing[:3]})")

    @classmethod
    def load(cls, path) -> "AttentionHistory":
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

    def _epoch(self, epoch: int) -> int:
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch not in self.epochs:
            raise ValueError(f"{self._where}: epoch {epoch!r} was not recorded (recorded: {self.epochs})")
        return int(epoch)

    def source(self, i: int) -> list[str]:
        """Source pieces of sentence i, ending with </s>."""
        return [str(p) for p in self._z[f"src_{self._index(i)}"]]

    def target(self, i: int, epoch: int) -> list[str]:
        """Greedy output pieces of sentence i after `epoch`, starting with <s>."""
        return [str(p) for p in self._z[f"tgt_{self._index(i)}_e{self._epoch(epoch)}"]]

    def cross(self, i: int, epoch: int) -> np.ndarray:
        """Cross-attention of sentence i after `epoch`: (L, H, T, S) float32."""
        return self._z[f"cross_{self._index(i)}_e{self._epoch(epoch)}"].astype(np.float32)

    def snapshots(self, tokenizer, epoch: int) -> list[tuple[list[int], np.ndarray]]:
        """One epoch's `snap` as save_history takes it (target ids, cross as stored), for train --resume."""
        epoch = self._epoch(epoch)
        return [([tokenizer.piece_id(p) for p in self.target(i, epoch)], self._z[f"cross_{i}_e{epoch}"])
                for i in range(len(self.sentences))]
