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


def model_config(hf_config, generation_config, tokenizer, src: str, tgt: str) -> ModelConfig:
    """The model's shape in ModelConfig's fields, from a MarianMT/BART config (encoder_layers, d_model, ...) or a
    T5 config (num_layers, num_heads, d_kv; no position limit: the tokenizer's model_max_length, else 512). The
    decoder's first piece: the generation config's decoder_start_token_id, else the model config's, else <pad>."""
    c = hf_config
    if c.model_type == "t5":
        if c.d_kv * c.num_heads != c.d_model:
            raise ValueError(f"T5 with d_kv {c.d_kv} x {c.num_heads} heads != d_model {c.d_model}: not supported")
        heads, layers, d_ff = {c.num_heads}, (c.num_layers, c.num_decoder_layers), c.d_ff
        limit = getattr(tokenizer, "model_max_length", 0)
        max_len = limit if 0 < limit <= 100_000 else 512  # "no limit" reads as a huge number
    else:
        heads = {c.encoder_attention_heads, c.decoder_attention_heads}
        layers, d_ff, max_len = (c.encoder_layers, c.decoder_layers), c.encoder_ffn_dim, c.max_position_embeddings
    if len(heads) != 1:
        raise ValueError(f"encoder and decoder have different head counts {sorted(heads)}: not supported")
    start = next(s for s in (getattr(generation_config, "decoder_start_token_id", None),
                              getattr(c, "decoder_start_token_id", None), c.pad_token_id) if s is not None)
    return ModelConfig(vocab_size=c.vocab_size, d_model=c.d_model, n_heads=heads.pop(), n_encoder_layers=layers[0],
                       n_decoder_layers=layers[1], d_ff=d_ff, dropout=0.0, attn_dropout=0.0, max_len=max_len,
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
    from .model import HFEncoderDecoder, T5EncoderDecoder
    from .tokenizer import HFTokenizer
    hub = isinstance(source, str) and source.startswith(HF_PREFIX)
    name = source[len(HF_PREFIX):] if hub else str(Path(source))
    if not hub and not (Path(name) / "config.json").is_file():
        raise ValueError(f"{name}: no config.json (not a folder written by save_pretrained)")
    hf = AutoModelForSeq2SeqLM.from_pretrained(name, attn_implementation="eager", dtype="float32")
    tok = AutoTokenizer.from_pretrained(name)
    src, tgt = languages(tok, name)
    config = model_config(hf.config, hf.generation_config, tok, src, tgt)
    adapter = T5EncoderDecoder if hf.config.model_type == "t5" else HFEncoderDecoder
    model = adapter(hf, config, suppressed_ids(hf.generation_config))
    tr = Translator(model, HFTokenizer(tok, config.bos_id), device, None if hub else Path(name))
    tr.origin = source if hub else str(Path(name).resolve())
    tr.name = re.sub(r"[^a-z0-9._-]+", "-", Path(name).name.lower()).strip("-") or "model"
    tr.architecture = hf.config.model_type
    return tr

