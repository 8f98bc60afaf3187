"""Tiny Hugging Face translation models built here, without the hub: a MarianMT of a small config with random
weights and its own SentencePiece vocabulary, trained in a second from the sentences below, saved with
save_pretrained (and its tokenizer's files) into a folder, as `--checkpoint DIR` opens it. Needs `transformers`
(the `hf` extra). Used by tests/test_hf_parity.py, the browser test and `python -m benchmarks.decode --checkpoint`.
"""
from __future__ import annotations

import io
import json
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


def spm_model(vocab_size: int = 120) -> bytes:
    """A SentencePiece unigram model of the sentences, with Marian's special pieces: </s> 0, <unk> 1, <pad> last."""
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(SENTENCES), model_writer=buf, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=1.0, eos_id=0, unk_id=1, bos_id=-1,
                                   pad_id=-1, hard_vocab_limit=False, minloglevel=2, num_threads=1)
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
