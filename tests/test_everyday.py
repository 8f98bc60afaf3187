"""The shipped model understands everyday German and still describes pictures (#19). Run against whatever
checkpoints/de-en holds: a model that regresses to caption-speak fails here."""
import re
from pathlib import Path

import pytest

from tests.conftest import DEVICE
from transformer.decode.decoding import Translator
from transformer.model.checkpoint import DEFAULT_CHECKPOINT
from transformer.train import corpus as C
from transformer.train import data as D

ROOT = Path(__file__).resolve().parent.parent
UNSEEN_HEADING = "### Ten everyday sentences it never saw"

# Short everyday sentences: one right answer, so the translation must match exactly.
EXACT = {
    "Ich habe Hunger.": "I'm hungry.",
    "Ich liebe dich.": "I love you.",
    "Ich bin müde.": "I'm tired.",
    "Ich verstehe die Frage nicht.": "I don't understand the question.",
    "Ich habe heute keine Zeit.": "I don't have time today.",  # in no corpus
    "Das Wetter ist heute schön.": "The weather is nice today.",  # in no corpus (the 7.6M model: "beautiful")
}

# Picture captions (Multi30k's domain): the words that carry the scene must be there.
CAPTIONS = {  # German: the English words (any of each group) the translation must contain
    "Ein Hund rennt durch den Schnee.": (("dog",), ("run",), ("snow",)),
    "Zwei Kinder spielen am Strand mit einem großen Ball.": (("two",), ("children", "kids"), ("beach",),
                                                              ("ball",)),
    "Ein Mann fährt mit dem Fahrrad über eine Brücke.": (("man",), ("bicycle", "bike"), ("bridge",)),
    "Eine Frau liest ein Buch im Park.": (("woman",), ("read",), ("book",), ("park",)),
}


@pytest.fixture(scope="module")
def shipped():
    return Translator.load(DEFAULT_CHECKPOINT, device=DEVICE)


def unseen_table() -> list[tuple[str, str]]:
    """The (German, the shipped model's English) rows under UNSEEN_HEADING in docs/training.md."""
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert UNSEEN_HEADING in text
    section = text.split(UNSEEN_HEADING, 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    return [(de, en) for de, en in rows if de != "German" and not de.startswith("---")]


def test_short_everyday_sentences_come_out_exactly(shipped):
    got = {de: shipped.translate(de) for de in EXACT}
    assert got == EXACT


def test_captions_still_name_what_the_picture_shows(shipped):
    for de, words in CAPTIONS.items():
        en = shipped.translate(de).lower()
        assert all(any(w in en for w in group) for group in words), (de, en)


def test_the_docs_unseen_sentences_are_what_the_shipped_model_says(shipped):
    rows = unseen_table()
    assert len(rows) == 10
    assert [shipped.translate(de) for de, _ in rows] == [en.strip("`") for _, en in rows]


@pytest.mark.skipif(not C.DEFAULT_TATOEBA.exists() or not (D.DEFAULT_DATA_DIR / "train.de.gz").exists(),
                    reason="needs ../shared/data (Tatoeba and Multi30k), which is never committed")
def test_the_docs_unseen_sentences_occur_nowhere_in_the_corpora():
    """Not in training, and not in Tatoeba at all: 'never saw' means never."""
    seen = ({C.norm(de) for de, _ in C.read_tatoeba()}
            | {C.norm(de) for de, _ in D.load_pairs(D.DEFAULT_DATA_DIR, "train")})
    assert [de for de, _ in unseen_table() if C.norm(de) in seen] == []
