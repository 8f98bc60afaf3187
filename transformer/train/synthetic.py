"""Small synthetic corpora, for `python -m transformer.train --dry-run` and for the tests.

`tiny_corpus(dir)`: a Multi30k-style folder ({split}.de.gz, {split}.en.gz for every split of data.SPLITS, the
same 20 caption-like pairs in each); `tiny_tatoeba(dir)`: a Tatoeba-style German<TAB>English file of everyday
sentences. Both are pure functions of nothing but the folder: the same bytes on every run.
"""
from __future__ import annotations

import gzip
from pathlib import Path

from . import data as D


def tiny_corpus(dirpath: Path) -> Path:
    """A small synthetic de/en corpus for --dry-run and tests."""
    words = [("Hund", "dog"), ("Katze", "cat"), ("Mann", "man"), ("Frau", "woman"), ("Kind", "child")]
    verbs = [("rennt", "runs"), ("schläft", "sleeps"), ("springt", "jumps"), ("sitzt", "sits")]
    pairs = [(f"Ein {w} {v}.", f"A {e} {f}.") for w, e in words for v, f in verbs]
    dirpath = Path(dirpath)
    for split in D.SPLITS:
        for k, lang in enumerate(("de", "en")):
            with gzip.open(dirpath / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(p[k] for p in pairs) + "\n")
    return dirpath


def tiny_tatoeba(dirpath: Path) -> Path:
    """A small synthetic everyday-sentence corpus (German<TAB>English) for --dry-run and tests."""
    subjects = [("Ich", "I", "bin"), ("Du", "You", "bist"), ("Er", "He", "ist"), ("Sie", "She", "ist")]
    states = [("müde", "tired"), ("hier", "here"), ("glücklich", "happy"), ("zu Hause", "at home"), ("krank", "ill")]
    en_be = {"I": "am", "You": "are", "He": "is", "She": "is"}
    lines = [f"{d} {v} {s}.\t{e} {en_be[e]} {t}." for d, e, v in subjects for s, t in states]
    path = Path(dirpath) / "tatoeba.tsv"
    path.write_text("\n".join(lines * 2) + "\n", encoding="utf-8")
    return path
