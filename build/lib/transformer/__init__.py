"""attention-lens: an encoder-decoder Transformer written from scratch, and tools to watch it translate."""
from .config import ModelConfig
from .model import Transformer
from .decoding import Translator
from .capture import AttentionMaps, AttentionRecorder

__all__ = ["ModelConfig", "Transformer", "Translator", "AttentionMaps", "AttentionRecorder"]
