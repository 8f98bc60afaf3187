"""Every evaluation set named in words where a number is shown (issue 26, item 5), so that the Head atlas's BLEU and
the Model tab's can be traced to the sentences they were measured on. Sizes are counted, never typed: a split's size
from the checkpoint's metrics.json (what `transformer.evaluate --save` recorded), and the head atlas's mix of
captions and everyday sentences from its own fields, picked from `mixed_val` (Multi30k val, then Tatoeba val:
transformer.corpus) the way the atlas picks them (transformer.atlas.spread)."""
from __future__ import annotations

from transformer.metrics import read_metrics

# split -> (its name, what its sentences are)
SETS = {"val": ("Multi30k val", "picture captions"),
        "test_2016_flickr": ("Multi30k test_2016_flickr", "picture captions"),
        "tatoeba_val": ("Tatoeba val", "everyday sentences"), "tatoeba_test": ("Tatoeba test", "everyday sentences")}
MIXED = ("val", "tatoeba_val")  # mixed_val's parts, in its order (transformer.corpus.load_split)


def size(metrics: dict, split: str) -> int | None:
    """How many sentences `split` has, as metrics.json's evaluations of it recorded (greedy first)."""
    tests = metrics.get("test") or {}
    for key in [f"{split}/greedy"] + sorted(k for k in tests if k.startswith(f"{split}/")):
        n = (tests.get(key) or {}).get("sentences")
        if isinstance(n, int) and n > 0:
            return n
    return None


def words(metrics: dict, split: str) -> str:
    """'1,014 picture captions (Multi30k val)'; without a recorded size 'picture captions (Multi30k val)'."""
    name, what = SETS.get(split, (split, "sentences"))
    n = size(metrics, split)
    return f"{n:,} {what} ({name})" if n else f"{what} ({name})"


def mixed_counts(atlas: dict, metrics: dict) -> tuple[int, int] | None:
    """(captions, everyday sentences) among the atlas's sentences when it was built on mixed_val, else None."""
    from transformer.atlas import spread
    sizes = [size(metrics, s) for s in MIXED]
    n = atlas.get("sentences")
    if atlas.get("split") != "mixed_val" or None in sizes or not isinstance(n, int) or n > sum(sizes):
        return None
    picked = spread([0] * sizes[0] + [1] * sizes[1], n)
    return picked.count(0), picked.count(1)


def atlas_words(atlas: dict | None, tr=None, metrics: dict | None = None) -> str:
    """The head atlas's sentences in words: '400 validation sentences: 116 picture captions (Multi30k val) and 284
    everyday sentences (Tatoeba val)'."""
    atlas = atlas or {}
    if metrics is None:
        metrics = read_metrics(tr.checkpoint_dir) if tr is not None and tr.checkpoint_dir else {}
    n, split = atlas.get("sentences"), atlas.get("split", "val")
    kind = "test" if "test" in str(split) else "validation"
    head = f"{n} {kind} sentences" if isinstance(n, int) else f"the {kind} sentences"
    if split == "mixed_val":
        counts = mixed_counts(atlas, metrics)
        if counts is None:
            return f"{head}: picture captions (Multi30k val) and everyday sentences (Tatoeba val)"
        return (f"{head}: {counts[0]} picture captions (Multi30k val) and {counts[1]} everyday sentences "
                f"(Tatoeba val)")
    name, what = SETS.get(split, (split, "sentences"))
    return f"{head}: {what} ({name})"


def atlas_row(atlas: dict | None, tr) -> list[tuple[str, str]]:
    """The Model tab's row for the head atlas's intact BLEU: the number the Head atlas tab shows, and its set."""
    if not atlas or atlas.get("bleu") is None:
        return []
    return [("Head atlas, intact model (greedy)",
             f"BLEU {atlas['bleu']} on {atlas_words(atlas, tr)}, scored as one set (the Head atlas tab's number)")]
