"""attention-lens: an encoder-decoder Transformer written from scratch, and tools to watch it translate."""
from .model.config import ModelConfig
from .model.model import Transformer
from .decode.decoding import Translator
from .interpret.capture import AttentionMaps, AttentionRecorder

__all__ = ["ModelConfig", "Transformer", "Translator", "AttentionMaps", "AttentionRecorder"]
