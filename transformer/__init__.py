"""attention-lens: an encoder-decoder Transformer written from scratch, and tools to watch it translate."""
from .decode.decoding import Translator
from .interpret.capture import AttentionMaps, AttentionRecorder
from .model.config import ModelConfig
from .model.model import Transformer

__all__ = ["AttentionMaps", "AttentionRecorder", "ModelConfig", "Transformer", "Translator"]
