"""ModelConfig: the one description of a model's shape, stored inside every checkpoint."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 8000
    d_model: int = 256
    n_heads: int = 4
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.15
    attn_dropout: float = 0.1
    max_len: int = 256  # positions; longer inputs are truncated by the Translator
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    src_lang: str = "de"  # ISO 639-1 codes of what the model reads and writes (older checkpoints: de -> en)
    tgt_lang: str = "en"

    def __post_init__(self):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        for name in ("vocab_size", "d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ModelConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("src_lang", "tgt_lang"):
            code = getattr(self, name)
            if not (isinstance(code, str) and len(code) == 2 and code.isalpha() and code.islower()):
                raise ValueError(f"ModelConfig.{name} must be a two-letter language code, got {code!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def direction(self) -> str:
        """'de-en': the checkpoint folder's name and the picker's key."""
        return f"{self.src_lang}-{self.tgt_lang}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        if not isinstance(d, dict):
            raise ValueError(f"model config must be a mapping, got {type(d).__name__}")  # noqa: TRY004 (bad input: ValueError)
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        return cls(**d)
