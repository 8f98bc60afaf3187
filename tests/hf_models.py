"""Tiny Hugging Face translation models built here, without the hub: a MarianMT and a T5 of small configs with
random weights and their own SentencePiece vocabulary, trained in a second from the sentences below, saved with
save_pretrained (and the tokenizer's files) into a folder, as `--checkpoint DIR` opens it. Needs `transformers`
(the `hf` extra). Used by tests/test_hf_parity.py, the browser test and `python -m benchmarks.decode --checkpoint`.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

SENTENCES = [
    "Der Hund schläft im Garten.", "The dog sleeps in the garden.",
    "Ich trinke morgens gern einen Kaffee.", "I like to drink a coffee in the morning.",
    "Meine Schwester wohnt in einer kleinen Stadt am Meer.", "My sister lives in a small town by the sea.",
    "Wir fahren am Wochenende mit dem Zug nach Berlin.", "We are taking the train to Berlin at the weekend.",
    "Das Buch liegt auf dem Tisch neben der Lampe.", "The book is on the table next to the lamp.",
    "Kannst du mir bitte das Salz geben?", "Can you pass me the salt, please?",
    "Heute regnet es, aber morgen scheint die Sonne.", "It is raining today, but tomorrow the sun will shine.",
    "Die Kinder spielen nach der Schule Fußball.", "The children play football after school.",
    "Er hat gestern einen langen Brief geschrieben.", "He wrote a long letter yesterday.",
    "Unser Lehrer erklärt die Aufgabe noch einmal.", "Our teacher explains the task once more.",
]


def need_transformers(why: str = ""):
    """Skip the calling test module where `transformers` is not installed, except in CI (CI=true), which installs the
    hf extra: there a missing transformers fails. Call it at module level, before anything imports transformers."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        import pytest
        pytest.skip(f"transformers is not installed (pip install '.[hf]'){why}", allow_module_level=True)


def spm_model(vocab_size: int = 120, eos_id: int = 0, unk_id: int = 1, pad_id: int = -1) -> bytes:
    """A SentencePiece unigram model of the sentences. Its special pieces are Marian's by default (</s> 0, <unk> 1;
    <pad> is added last by marian_folder), T5's with eos_id=1, unk_id=2, pad_id=0."""
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(SENTENCES), model_writer=buf, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, eos_id=eos_id, unk_id=unk_id,
                                   bos_id=-1, pad_id=pad_id, hard_vocab_limit=False, minloglevel=2, num_threads=1)
    return buf.getvalue()


def marian_folder(folder, d_model: int = 32, heads: int = 4, layers: tuple[int, int] = (2, 2), ffn: int = 64,
                  seed: int = 0, vocab_size: int = 120, entries: int = 0, max_len: int = 128) -> Path:
    """A MarianMT (German -> English) with random weights saved into `folder`; returns the folder. `entries`: a
    vocabulary of that many entries (unused ones after the SentencePiece model's), e.g. OPUS-MT's 58101."""
    import sentencepiece as spm
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    proto = spm_model(vocab_size)
    for name in ("source.spm", "target.spm"):
        (folder / name).write_bytes(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]  # </s>, <unk>, then the pieces
    vocab = {p: i for i, p in enumerate(pieces)}
    vocab.update({f"<unused{i}>": len(vocab) + i for i in range(max(0, entries - len(vocab) - 1))})
    pad = vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    tok = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
                          source_lang="de", target_lang="en")
    tok.save_pretrained(folder)
    config = MarianConfig(vocab_size=len(vocab), decoder_vocab_size=len(vocab), d_model=d_model,
                          encoder_layers=layers[0], decoder_layers=layers[1], encoder_attention_heads=heads,
                          decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
                          max_position_embeddings=max_len, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                          forced_eos_token_id=None, scale_embedding=True, dropout=0.0, attention_dropout=0.0,
                          activation_dropout=0.0)
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():  # random weights large enough that the pieces differ from step to step
        for name, p in model.named_parameters():
            if p.dim() > 1 and "embed_positions" not in name:
                p.normal_(0.0, 0.3)
        model.final_logits_bias.normal_(0.0, 0.5)
    model.generation_config = GenerationConfig(decoder_start_token_id=pad, eos_token_id=0, pad_token_id=pad,
                                               bad_words_ids=[[pad]], max_length=max_len, num_beams=1)
    model.save_pretrained(folder)
    return folder


def t5_folder(folder, d_model: int = 32, heads: int = 4, layers: tuple[int, int] = (2, 2), ffn: int = 64,
              seed: int = 0, vocab_size: int = 120) -> Path:
    """A T5 (relative position biases, unscaled q·kᵀ, RMS norms, one embedding shared by encoder, decoder and output,
    the decoder starting from <pad>) with random weights saved into `folder`; returns the folder. Its languages are
    its name's: call the folder ...-de-en."""
    import sentencepiece as spm
    import torch
    from transformers import GenerationConfig, T5Config, T5ForConditionalGeneration, T5Tokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sp = spm.SentencePieceProcessor(model_proto=spm_model(vocab_size, eos_id=1, unk_id=2, pad_id=0))
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]  # <pad>, </s>, <unk>, ...
    T5Tokenizer(vocab=vocab, extra_ids=0).save_pretrained(folder)
    config = T5Config(vocab_size=len(vocab), d_model=d_model, d_kv=d_model // heads, num_heads=heads,
                      num_layers=layers[0], num_decoder_layers=layers[1], d_ff=ffn, dropout_rate=0.0,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16, pad_token_id=0,
                      eos_token_id=1, decoder_start_token_id=0)
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config).eval()
    with torch.no_grad():  # random weights: the pieces differ from step to step, the position biases matter, and
        for name, p in model.named_parameters():  # q, k small enough (T5 does not scale q·kᵀ) that no softmax saturates
            if "layer_norm" in name:
                p.uniform_(0.5, 1.5)
            elif p.dim() > 1 and "shared" not in name:
                p.normal_(0.0, 3.0 if "relative_attention_bias" in name else
                          0.1 if name.endswith((".q.weight", ".k.weight")) else 0.4)
    model.generation_config = GenerationConfig(decoder_start_token_id=0, eos_token_id=1, pad_token_id=0,
                                               bad_words_ids=[[0]], max_length=128, num_beams=1)
    model.save_pretrained(folder)
    return folder
