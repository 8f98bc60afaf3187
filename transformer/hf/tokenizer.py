"""A `transformers` tokenizer behind the interface of transformer/model/tokenizer.py's Tokenizer: ids <-> pieces <->
text, the source's pieces without the special pieces decoding adds itself (</s>)."""
from __future__ import annotations

from collections.abc import Iterable


class HFTokenizer:
    def __init__(self, tokenizer, bos_id: int):
        self.tok = tokenizer
        self.pad_id, self.unk_id, self.eos_id = tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.eos_token_id
        self.bos_id = bos_id  # the piece the decoder starts from (MarianMT: <pad>)
        self.vocab = tokenizer.get_vocab()  # piece -> id
        self.special = {i for i in (self.pad_id, self.eos_id, bos_id) if i is not None}
        self.sp = None  # no SentencePiece scores: the head atlas's piece statistics do not apply

    def __len__(self) -> int:
        return len(self.tok)

    @property
    def vocab_size(self) -> int:
        return len(self)

    def encode(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def encode_batch(self, texts: list[str], alpha: float = 0.0, seed: int = 0) -> list[list[int]]:
        if alpha > 0:
            raise ValueError("subword sampling needs our own SentencePiece tokenizer")
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return self.tok.decode([int(i) for i in ids if int(i) not in self.special], skip_special_tokens=True)

    def piece(self, i: int) -> str:
        return self.tok.convert_ids_to_tokens(int(i))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_id(self, piece: str) -> int:
        """Id of an exact piece; raises ValueError for a piece not in the vocabulary."""
        if not isinstance(piece, str) or piece not in self.vocab:
            raise ValueError(f"{piece!r} is not a piece of the vocabulary")
        return self.vocab[piece]

    def encode_pieces(self, text: str) -> list[str]:
        return self.pieces(self.encode(text))
