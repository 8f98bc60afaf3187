"""TEMPORARY stand-in (replaced by the training developer's module at merge)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

HISTORY = "attention_history.npz"


class AttentionHistory:
    def __init__(self, z):
        self.z = z
        self.sentences = [str(x) for x in z["sentences"]]
        self.epochs = [int(e) for e in z["epochs"]]

    @classmethod
    def load(cls, path):
        if not Path(path).exists():
            raise FileNotFoundError(path)
        return cls(np.load(path))

    def _check(self, i, epoch=None):
        if not isinstance(i, int) or not 0 <= i < len(self.sentences):
            raise ValueError("unknown sentence")
        if epoch is not None and epoch not in self.epochs:
            raise ValueError(f"epoch must be one of {self.epochs[0]}..{self.epochs[-1]}")

    def source(self, i):
        self._check(i)
        return [str(p) for p in self.z[f"src_{i}"]]

    def target(self, i, epoch):
        self._check(i, epoch)
        return [str(p) for p in self.z[f"tgt_{i}_e{epoch}"]]

    def cross(self, i, epoch):
        self._check(i, epoch)
        return self.z[f"cross_{i}_e{epoch}"].astype(np.float32)
