"""The training corpora: Tatoeba's everyday pairs beside Multi30k's picture captions.

Tatoeba has no official split, and one sentence often has several translations, so a random split of pairs
leaks: a test sentence would be seen in training through another of its pairs. `split_tatoeba` therefore
groups pairs into connected components (two pairs are connected when they share a German or an English
sentence, compared after `norm`) and puts whole components into validation, test or training. Components
that share a sentence with any Multi30k split stay in training, and Tatoeba training pairs that share a
sentence with Multi30k's val or test split are dropped, so no evaluation sentence of either corpus is ever
trained on. The split is a pure function of the pairs and the seed.

Split names used by the tools: Multi30k's `train`, `val`, `test_2016_flickr`; Tatoeba's `tatoeba_train`,
`tatoeba_val`, `tatoeba_test`; `mixed_val` = Multi30k val + Tatoeba val (both domains, for the head atlas).
"""
from __future__ import annotations

import gzip
import random
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from . import data as D

DEFAULT_TATOEBA = D.DEFAULT_DATA_DIR.parent / "tatoeba" / "deu_eng.tsv.gz"
ATTRIBUTION = ("Sentence pairs from the Tatoeba Project (tatoeba.org), via www.manythings.org/anki, CC-BY 2.0")
VAL_PAIRS, TEST_PAIRS = 2500, 5000
MAX_COMPONENT = 8  # larger components (hub sentences such as "Hi.") always stay in training
SPLIT_SEED = 20261201
TATOEBA_SPLITS = ("tatoeba_train", "tatoeba_val", "tatoeba_test")
ALL_SPLITS = D.SPLITS + TATOEBA_SPLITS + ("mixed_val",)


def norm(text: str) -> str:
    """The key two sentences are compared by: NFC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def read_tatoeba(path: str | Path = DEFAULT_TATOEBA) -> list[tuple[str, str]]:
    """German<TAB>English lines (gzipped or plain) -> [(de, en)]; blank or malformed lines are skipped."""
    path = Path(path)
    if not path.exists():
        raise D.DataError(f"no Tatoeba file at {path}; pass --tatoeba PATH (German<TAB>English lines, .tsv or "
                          f".tsv.gz) or --tatoeba none")
    opener = gzip.open if path.suffix == ".gz" else open
    pairs = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 2 and cols[0].strip() and cols[1].strip():
                pairs.append((cols[0].strip(), cols[1].strip()))
    return pairs


def components(pairs: list[tuple[str, str]]) -> list[list[int]]:
    """Indices of `pairs` grouped so that pairs sharing a (normalised) German or English side are together."""
    parent = list(range(len(pairs)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple[int, str], int] = {}
    for i, (de, en) in enumerate(pairs):
        for side, text in ((0, de), (1, en)):
            j = first.setdefault((side, norm(text)), i)
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(len(pairs)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


@dataclass
class TatoebaSplit:
    train: list[tuple[str, str]]
    val: list[tuple[str, str]]
    test: list[tuple[str, str]]
    dropped: int  # training pairs removed because a side occurs in Multi30k's val or test split


def split_tatoeba(pairs, val_n: int = VAL_PAIRS, test_n: int = TEST_PAIRS, seed: int = SPLIT_SEED,
                  avoid: set[str] = frozenset(), forbid_in_train: set[str] = frozenset()) -> TatoebaSplit:
    """Whole components to val (about val_n pairs) and test (about test_n), the rest to train.

    `avoid`: normalised sentences (e.g. all of Multi30k) that a val/test component may not contain.
    `forbid_in_train`: normalised sentences (Multi30k val/test) whose pairs are dropped from training."""
    val_n, test_n = min(val_n, len(pairs) // 10), min(test_n, len(pairs) // 10)  # tiny corpora keep a train part
    comps = components(pairs)
    rng = random.Random(seed)
    order = list(range(len(comps)))
    rng.shuffle(order)
    val, test, train = [], [], []
    for c in order:
        idx = comps[c]
        eligible = len(idx) <= MAX_COMPONENT and not any(
            norm(pairs[i][0]) in avoid or norm(pairs[i][1]) in avoid for i in idx)
        if eligible and len(val) < val_n:
            val.extend(idx)
        elif eligible and len(test) < test_n:
            test.extend(idx)
        else:
            train.extend(idx)
    kept = [i for i in sorted(train)
            if norm(pairs[i][0]) not in forbid_in_train and norm(pairs[i][1]) not in forbid_in_train]
    return TatoebaSplit([pairs[i] for i in kept], [pairs[i] for i in sorted(val)], [pairs[i] for i in sorted(test)],
                        len(train) - len(kept))


def multi30k_keys(data_dir, splits) -> set[str]:
    keys = set()
    for split in splits:
        for de, en in D.load_pairs(data_dir, split):
            keys.update((norm(de), norm(en)))
    return keys


def tatoeba_split(tatoeba=DEFAULT_TATOEBA, data_dir=D.DEFAULT_DATA_DIR, seed: int = SPLIT_SEED) -> TatoebaSplit:
    """The project's Tatoeba split, made the same way by training, evaluation and the atlas."""
    return split_tatoeba(read_tatoeba(tatoeba), seed=seed, avoid=multi30k_keys(data_dir, D.SPLITS),
                         forbid_in_train=multi30k_keys(data_dir, ("val", "test_2016_flickr")))


def oriented(split: TatoebaSplit, src: str) -> TatoebaSplit:
    """The split with each pair as (source, target): Tatoeba is German<TAB>English, so src 'en' swaps the
    columns. The components, and so which pairs are held out, are the same for both directions."""
    if src == "de":
        return split
    swap = lambda pairs: [(b, a) for a, b in pairs]
    return TatoebaSplit(swap(split.train), swap(split.val), swap(split.test), split.dropped)


def load_split(name: str, data_dir=D.DEFAULT_DATA_DIR, tatoeba=DEFAULT_TATOEBA, src: str = "de",
               tgt: str = "en") -> list[tuple[str, str]]:
    """Pairs (source, target) of any split in ALL_SPLITS, for a model that reads `src` and writes `tgt`."""
    if name in D.SPLITS:
        return D.load_pairs(data_dir, name, src, tgt)
    if name not in ALL_SPLITS:
        raise D.DataError(f"unknown split {name!r}; one of {', '.join(ALL_SPLITS)}")
    sp = oriented(tatoeba_split(tatoeba, data_dir), src)
    if name == "mixed_val":
        return D.load_pairs(data_dir, "val", src, tgt) + sp.val
    return {"tatoeba_train": sp.train, "tatoeba_val": sp.val, "tatoeba_test": sp.test}[name]


def mix(multi30k_train, tatoeba_train, multi30k_upsample: int) -> list[tuple[str, str]]:
    """The training pairs: Tatoeba's once, Multi30k's `multi30k_upsample` times (0 leaves captions out)."""
    return list(tatoeba_train) + list(multi30k_train) * multi30k_upsample


def long_pairs(pairs, words: int, times: int) -> list[tuple[str, str]]:
    """The pairs whose source has `words` words or more, `times` times over (0: none)."""
    return [p for p in pairs if len(p[0].split()) >= words] * max(times, 0)


def concatenations(pairs, n: int, seed: int, sizes=(2, 3)) -> list[tuple[str, str]]:
    """`n` pairs each made of 2 or 3 (`sizes`) distinct random pairs of `pairs`, sources joined with a space and
    targets joined likewise, in the same order: longer inputs than the corpus has, whose translation is the
    translations one after another (training on them helps a model with inputs longer than it saw)."""
    if n <= 0 or len(pairs) < max(sizes):
        return []
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        chosen = rng.sample(range(len(pairs)), rng.choice(sizes))
        out.append((" ".join(pairs[i][0] for i in chosen), " ".join(pairs[i][1] for i in chosen)))
    return out


def corpora(a, data_dir, tatoeba) -> tuple[list, dict, list]:
    """(training pairs as mixed, {domain: validation pairs}, the tokenizer's sentences) for transformer.train.train's
    arguments `a` (src, tgt, multi30k_upsample, long_upsample, long_words, concat, seed); `tatoeba` None: the
    captions alone."""
    m_train, m_val = D.load_pairs(data_dir, "train", a.src, a.tgt), D.load_pairs(data_dir, "val", a.src, a.tgt)
    if tatoeba is None:
        return m_train, {"multi30k": m_val}, m_train
    sp = oriented(tatoeba_split(tatoeba, data_dir), a.src)  # the same split either way round
    train = mix(m_train, sp.train, a.multi30k_upsample)
    train += long_pairs(sp.train, getattr(a, "long_words", 13), getattr(a, "long_upsample", 0))
    # joined everyday pairs (Tatoeba's training part only: three captions in a row are no sentence anyone types)
    train += concatenations(sp.train, round(getattr(a, "concat", 0.0) * len(train)), a.seed)
    return train, {"multi30k": m_val, "tatoeba": sp.val}, m_train + sp.train
