"""Every evaluation set named in words where a number is shown, so that the Head atlas's BLEU and
the Model tab's can be traced to the sentences they were measured on. Sizes are counted, never typed: a split's size
from the checkpoint's metrics.json (what `transformer.train.evaluate --save` recorded), and the head atlas's mix of
captions and everyday sentences from its own fields, picked from `mixed_val` (Multi30k val, then Tatoeba val:
transformer.train.corpus) the way the atlas picks them (transformer.train.atlas.spread)."""
from __future__ import annotations

from attention_lens.shell.texts import number
from attention_lens.shell.texts import words as said_words
from transformer.model.metrics import read_metrics

# split -> (its name, what its sentences are)
SETS = {"val": ("Multi30k val", "picture captions"),
        "test_2016_flickr": ("Multi30k test_2016_flickr", "picture captions"),
        "tatoeba_val": ("Tatoeba val", "everyday sentences"), "tatoeba_test": ("Tatoeba test", "everyday sentences")}
MIXED = ("val", "tatoeba_val")  # mixed_val's parts, in its order (transformer.train.corpus.load_split)


def size(metrics: dict, split: str) -> int | None:
    """How many sentences `split` has, as metrics.json's evaluations of it recorded (greedy first)."""
    tests = metrics.get("test") or {}
    for key in [f"{split}/greedy"] + sorted(k for k in tests if k.startswith(f"{split}/")):
        n = (tests.get(key) or {}).get("sentences")
        if isinstance(n, int) and n > 0:
            return n
    return None


def count(n: int, lang: str = "en") -> str:
    """1,014 in English, 1.014 in German."""
    return f"{n:,}" if lang == "en" else f"{n:,}".replace(",", ".")


def words(metrics: dict, split: str, lang: str = "en") -> str:
    """'1,014 picture captions (Multi30k val)'; without a recorded size 'picture captions (Multi30k val)'. In another
    language the catalogue's set words ([label] set_<what>: German's read after 'auf', in the dative)."""
    name, what = SETS.get(split, (split, "sentences"))
    n, what = size(metrics, split), set_named(what, lang)
    return f"{count(n, lang)} {what} ({name})" if n else f"{what} ({name})"


def set_named(what: str, lang: str) -> str:
    """What a set holds ('picture captions') in `lang`: the catalogue's set_<what> beyond English."""
    return what if lang == "en" else said_words(lang).get(f"set_{what.split()[0]}", what)


def mixed_counts(atlas: dict, metrics: dict) -> tuple[int, int] | None:
    """(captions, everyday sentences) among the atlas's sentences when it was built on mixed_val, else None."""
    from transformer.train.atlas import spread
    sizes = [size(metrics, s) for s in MIXED]
    n = atlas.get("sentences")
    if atlas.get("split") != "mixed_val" or None in sizes or not isinstance(n, int) or n > sum(sizes):
        return None
    picked = spread([0] * sizes[0] + [1] * sizes[1], n)
    return picked.count(0), picked.count(1)


def atlas_words(atlas: dict | None, tr=None, metrics: dict | None = None, lang: str = "en") -> str:
    """The head atlas's sentences in words: '400 validation sentences: 116 picture captions (Multi30k val) and 284
    everyday sentences (Tatoeba val)' ([said] atlas_sents_*, atlas_mix*; German's read after 'auf')."""
    atlas, w = atlas or {}, said_words(lang)
    if metrics is None:
        metrics = read_metrics(tr.checkpoint_dir) if tr is not None and tr.checkpoint_dir else {}
    n, split = atlas.get("sentences"), atlas.get("split", "val")
    kind = "test" if "test" in str(split) else "val"
    head = w[f"atlas_sents_{kind}"].format(n=n) if isinstance(n, int) else w[f"atlas_sents_{kind}_any"]
    if split == "mixed_val":
        counts = mixed_counts(atlas, metrics)
        if counts is None:
            return w["atlas_mix_any"].format(head=head)
        return w["atlas_mix"].format(head=head, a=counts[0], b=counts[1])
    name, what = SETS.get(split, (split, "sentences"))
    return f"{head}: {set_named(what, lang)} ({name})"


def atlas_row(atlas: dict | None, tr, lang: str = "en") -> list[tuple[str, str]]:
    """The Model tab's row for the head atlas's intact BLEU: the number the Head atlas tab shows, and its set."""
    if not atlas or atlas.get("bleu") is None:
        return []
    w = said_words(lang)
    return [(w["card_atlas_detail"], w["card_atlas_detail_value"].format(bleu=number(atlas["bleu"], None, lang),
                                                                          on=atlas_words(atlas, tr, lang=lang)))]
