"""SentencePiece wrapper: one joint German+English vocabulary, ids <-> pieces <-> text."""
from __future__ import annotations

import io
import weakref
from collections.abc import Iterable
from pathlib import Path

import sentencepiece as spm

PAD, UNK, BOS, EOS = 0, 1, 2, 3
PAD_PIECE, UNK_PIECE, BOS_PIECE, EOS_PIECE = "<pad>", "<unk>", "<s>", "</s>"
SPECIAL_PIECES = (BOS_PIECE, EOS_PIECE, PAD_PIECE, UNK_PIECE)  # each a word of its own when merging
BOUNDARY_PIECES = (BOS_PIECE, EOS_PIECE, PAD_PIECE)  # carry no content: the view can hide their columns
WORD_START = "\u2581"  # '▁', SentencePiece's word-boundary marker


class Tokenizer:
    def __init__(self, model_proto: bytes):
        self.proto = bytes(model_proto)
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(self.proto)
        except Exception as e:  # noqa: BLE001 (sentencepiece raises RuntimeError/OSError with C++ text)
            raise ValueError(f"not a SentencePiece model ({e})") from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (PAD, UNK, BOS, EOS):
            raise ValueError("SentencePiece model must use pad=0, unk=1, bos=2, eos=3")

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS

    @classmethod
    def train(cls, sentences: Iterable[str], vocab_size: int = 8000, model_type: str = "unigram") -> Tokenizer:
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=buf, vocab_size=vocab_size, model_type=model_type,
            character_coverage=1.0, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
            pad_piece=PAD_PIECE, unk_piece=UNK_PIECE, bos_piece=BOS_PIECE, eos_piece=EOS_PIECE,
            hard_vocab_limit=False, minloglevel=2, num_threads=2)
        return cls(buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        return cls(Path(path).read_bytes())

    @classmethod
    def shared(cls, path: str | Path) -> Tokenizer:
        """The file's tokenizer, one object for every checkpoint whose file has the same bytes while any of them
        is loaded (en-de reuses de-en's joint vocabulary: a second model then costs no second SentencePiece
        processor, 2.4 MB). Read-only use only: patch a copy (`Tokenizer(t.proto)`), never the shared one."""
        proto = Path(path).read_bytes()
        tok = _SHARED.get(proto)
        if tok is None:
            tok = _SHARED[proto] = cls(proto)
        return tok

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.proto)

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    @property
    def vocab_size(self) -> int:
        return len(self)

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text, out_type=int)

    def encode_batch(self, texts: list[str], alpha: float = 0.0, seed: int = 0) -> list[list[int]]:
        """Each text's pieces; `alpha` > 0: one segmentation sampled per text (subword regularisation, Kudo 2018:
        lower alpha, flatter sampling), reproducible from `seed` (one thread, so the draws keep their order)."""
        if alpha <= 0:
            return self.sp.encode(texts, out_type=int)
        spm.set_random_generator_seed(seed)
        return self.sp.encode(texts, out_type=int, enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1)

    def decode(self, ids: Iterable[int]) -> str:
        ids = [int(i) for i in ids if int(i) not in (PAD, BOS, EOS)]
        return self.sp.decode(ids)

    def piece(self, i: int) -> str:
        return self.sp.id_to_piece(int(i))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_id(self, piece: str) -> int:
        """Id of an exact piece; raises ValueError for a piece not in the vocabulary."""
        try:
            piece.encode("utf-8")
            i = self.sp.piece_to_id(piece)
        except (UnicodeEncodeError, TypeError):
            raise ValueError(f"{piece!r} is not a piece of the vocabulary") from None
        if i == UNK and piece != UNK_PIECE:
            raise ValueError(f"{piece!r} is not a piece of the vocabulary")
        return i

    def encode_pieces(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)


_SHARED: weakref.WeakValueDictionary[bytes, Tokenizer] = weakref.WeakValueDictionary()  # Tokenizer.shared
