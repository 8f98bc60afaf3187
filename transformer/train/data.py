"""Multi30k task 1 corpus: reading (gzipped or plain), downloading, token-based batching, example sentences."""
from __future__ import annotations

import argparse
import gzip
import random
import sys
import urllib.error
import urllib.request
from pathlib import Path

from ..model.shipped import shipped

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k"
DEFAULT_BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
SPLITS = ("train", "val", "test_2016_flickr")
LANGS = ("de", "en", "fr")
# the app's example sentences, in assets/: the checkout's, or those a wheel installed (transformer/model/shipped.py)
ASSETS = shipped("assets")
EXAMPLES = ASSETS / "examples_de.txt"


def examples_path(lang: str) -> Path:
    """assets/examples_<lang>.txt: the example sentences in a model's source language."""
    return ASSETS / f"examples_{lang}.txt"


class DataError(RuntimeError):
    pass


def split_path(data_dir: str | Path, split: str, lang: str) -> Path:
    data_dir = Path(data_dir)
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).exists():
            return data_dir / name
    raise DataError(f"no {split}.{lang}(.gz) in {data_dir}; pass --data-dir, or fetch the corpus with "
                    f"`python -m transformer.data --download --data-dir {data_dir}`")


def read_lines(data_dir: str | Path, split: str, lang: str) -> list[str]:
    path = split_path(data_dir, split, lang)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").strip() for line in f]


def load_pairs(data_dir: str | Path, split: str, src: str = "de", tgt: str = "en") -> list[tuple[str, str]]:
    s, t = read_lines(data_dir, split, src), read_lines(data_dir, split, tgt)
    if len(s) != len(t):
        raise DataError(f"{split}: {len(s)} {src} lines but {len(t)} {tgt} lines")
    return list(zip(s, t))


def read_examples(path: str | Path = EXAMPLES) -> list[str]:
    """The example source sentences (stripped, non-empty lines; a gloss after a tab is left out);
    [] when the file is missing."""
    return [src for src, _ in read_glossed_examples(path)]


def read_glossed_examples(path: str | Path = EXAMPLES) -> list[tuple[str, str]]:
    """[(sentence, gloss)]: lines 'sentence<TAB>its translation' (the gloss may be missing: '')."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        src, _, gloss = line.partition("\t")
        if src.strip():
            out.append((src.strip(), gloss.strip()))
    return out


def download(dest: str | Path, base_url: str = DEFAULT_BASE_URL, splits=SPLITS, langs=("de", "en"),
             timeout: float = 30.0) -> list[Path]:
    """Fetch {split}.{lang}.gz from the Multi30k repository (or any base URL, file:// included)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for split in splits:
        for lang in langs:
            name = f"{split}.{lang}.gz"
            url = f"{base_url.rstrip('/')}/{name}"
            try:
                with urllib.request.urlopen(url, timeout=timeout) as r:
                    payload = r.read()
            except (urllib.error.URLError, OSError) as e:
                raise DataError(f"could not download {url}: {getattr(e, 'reason', e)}. Are you offline? "
                                f"Copy the Multi30k task-1 raw files into {dest} by hand instead.") from None
            try:
                gzip.decompress(payload)
            except OSError:
                raise DataError(f"{url} did not return a gzip file") from None
            (dest / name).write_bytes(payload)
            written.append(dest / name)
    return written


def make_batches(lengths: list[tuple[int, int]], max_tokens: int, shuffle: bool = True,
                 seed: int = 0) -> list[list[int]]:
    """Group example indices so that n * max(len) <= max_tokens for both sides; similar lengths together."""
    rng = random.Random(seed)
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i][0] + (rng.random() if shuffle else 0),
                                                       lengths[i][1]))
    batches, cur, longest = [], [], 0
    for i in order:
        m = max(lengths[i])
        if cur and max(longest, m) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, m)
    if cur:
        batches.append(cur)
    if shuffle:
        rng.shuffle(batches)
    return batches


def main(argv=None):
    p = argparse.ArgumentParser(description="Multi30k task-1 data: check what is on disk or download it.")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--download", action="store_true", help="fetch the raw de/en files into --data-dir")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL)
    a = p.parse_args(argv)
    try:
        if a.download:
            for path in download(a.data_dir, a.base_url):
                print("wrote", path)
        for split in SPLITS:
            print(split, len(load_pairs(a.data_dir, split)), "pairs")
    except DataError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()

