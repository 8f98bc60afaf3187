"""Open a `transformers` encoder-decoder as a Translator: a folder written by save_pretrained, or `hf:owner/name`
from the Hugging Face hub (where the machine reaches it)."""
from __future__ import annotations

import re
from pathlib import Path

from ..decode.decoding import Translator
from ..model.config import ModelConfig

HF_PREFIX = "hf:"
LANGS = re.compile(r"(?:^|[-_/])([a-z]{2})[-_]([a-z]{2})$")  # opus-mt-de-en, .../my-model-fr-en


def is_hf_checkpoint(path) -> bool:
    """`hf:owner/name`, or a folder holding a `transformers` config.json (and no model.pt of ours)."""
    if isinstance(path, str) and path.startswith(HF_PREFIX):
        return True
    p = Path(path)
    return (p / "config.json").is_file() and not (p / "model.pt").is_file()


def languages(tokenizer, name: str) -> tuple[str, str]:
    """(source, target) two-letter codes: the tokenizer's own (MarianMT's source_lang/target_lang), else the
    model's name ending in -xx-yy."""
    src, tgt = getattr(tokenizer, "source_lang", None), getattr(tokenizer, "target_lang", None)
    if all(isinstance(x, str) and re.fullmatch("[a-z]{2}", x) for x in (src, tgt)):
        return src, tgt
    m = LANGS.search(name.rstrip("/").lower())
    if m:
        return m.group(1), m.group(2)
    raise ValueError(f"{name}: cannot tell which languages the model translates; its tokenizer names none and its "
                     "name does not end in -xx-yy (two-letter codes, e.g. my-model-de-en)")


def model_config(hf_config, tokenizer, src: str, tgt: str) -> ModelConfig:
    c = hf_config
    heads = {c.encoder_attention_heads, c.decoder_attention_heads}
    if len(heads) != 1:
        raise ValueError(f"encoder and decoder have different head counts {sorted(heads)}: not supported")
    start = c.decoder_start_token_id
    return ModelConfig(vocab_size=c.vocab_size, d_model=c.d_model, n_heads=heads.pop(),
                       n_encoder_layers=c.encoder_layers, n_decoder_layers=c.decoder_layers,
                       d_ff=c.encoder_ffn_dim, dropout=0.0, attn_dropout=0.0, max_len=c.max_position_embeddings,
                       pad_id=c.pad_token_id, unk_id=tokenizer.unk_token_id, bos_id=start, eos_id=c.eos_token_id,
                       src_lang=src, tgt_lang=tgt)


def suppressed_ids(generation_config) -> list[int]:
    """The single pieces `generate` never chooses: bad_words_ids of length one."""
    bad = getattr(generation_config, "bad_words_ids", None) or []
    return [int(w[0]) for w in bad if len(w) == 1]


def load_hf(source, device="auto") -> Translator:
    """A Translator over a `transformers` encoder-decoder: `source` a save_pretrained folder or "hf:owner/name".
    `translator.origin` says where it came from."""
    try:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    except ImportError:
        raise ImportError("opening a Hugging Face model needs transformers: pip install 'attention-lens[hf]'") from None
    from .model import HFEncoderDecoder
    from .tokenizer import HFTokenizer
    hub = isinstance(source, str) and source.startswith(HF_PREFIX)
    name = source[len(HF_PREFIX):] if hub else str(Path(source))
    if not hub and not (Path(name) / "config.json").is_file():
        raise ValueError(f"{name}: no config.json (not a folder written by save_pretrained)")
    hf = AutoModelForSeq2SeqLM.from_pretrained(name, attn_implementation="eager", dtype="float32")
    tok = AutoTokenizer.from_pretrained(name)
    src, tgt = languages(tok, name)
    config = model_config(hf.config, tok, src, tgt)
    model = HFEncoderDecoder(hf, config, suppressed_ids(hf.generation_config))
    tr = Translator(model, HFTokenizer(tok, config.bos_id), device, None if hub else Path(name))
    tr.origin = source if hub else str(Path(name).resolve())
    tr.name = re.sub(r"[^a-z0-9._-]+", "-", Path(name).name.lower()).strip("-") or "model"
    tr.architecture = hf.config.model_type
    return tr

