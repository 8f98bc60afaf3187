"""A Hugging Face `transformers` encoder-decoder (MarianMT, BART, M2M100/NLLB: models whose attention modules have
q/k/v/out projections; T5, whose attention adds relative position biases) as a model of the library's protocol
(transformer/model/protocol.py), so that every view steps, hooks and ablates it as it does our own Transformer. Needs
the optional extra: pip install '.[hf]'.

    from transformer.hf import load_hf
    tr = load_hf("hf:Helsinki-NLP/opus-mt-de-en")   # or a folder written by save_pretrained
    tr.start("Der Hund schläft.").step()

Nothing outside this package imports `transformers`, and importing this package does not either (`load_hf` does):
the app asks `is_hf_checkpoint` without it. The adapter is transformer.hf.model.HFEncoderDecoder.
"""
from .load import HF_PREFIX, is_hf_checkpoint, load_hf  # noqa: F401
