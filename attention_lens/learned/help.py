"""The Attention being learned tab's words for a snapshot whose greedy output is not yet a translation:
before training, and early in it, a model repeats one piece (or ends at once), and its map's rows are that
output; the words say so, and what the model learns to say instead."""
from __future__ import annotations

import numpy as np

from attention_lens.shell.texts import words as said_words
from transformer.interpret.history import epoch_point

SPECIAL = ("<s>", "</s>")


def words(pieces: list[str]) -> str:
    return "".join(p for p in pieces if p not in SPECIAL).replace("▁", " ").strip()


def output_of(target: list[str]) -> tuple[list[str], bool]:
    """(the pieces generated after the first <s>, up to </s>; whether it ended with </s>)."""
    out = list(target[1:])
    ended = bool(out) and out[-1] == "</s>"
    return (out[:-1] if ended else out), ended


def longest_run(pieces: list[str]) -> tuple[str, int]:
    """The piece repeated most often in a row, and how often."""
    best, n, run = "", 0, 0
    for i, p in enumerate(pieces):
        run = run + 1 if i and pieces[i - 1] == p else 1
        if run > n:
            best, n = p, run
    return best, n


def plain_epoch(epoch) -> str:
    """A recorded point in everyday words: 'before training', '2 % into the first pass over the data', 'after 3
    passes over the data' (transformer.interpret.history.describe_epoch says it with epochs)."""
    whole, percent = epoch_point(epoch)
    if percent is None:
        return f"after {whole} pass{'es' if whole > 1 else ''} over the data" if whole else "before training"
    return f"{percent:g} % into pass {whole + 1} over the data"


def explain(history, example, epoch, cross: np.ndarray | None = None,
            mode: str = "detail", lang: str = "en") -> tuple[str, str] | None:
    """(the text box's words, sentences for the snapshot's line, plainly or in detail, in `lang`: attention_lens/texts
    [label]
    lh_*) when the output is one piece repeated or nothing at all; None when it is a translation to read. `cross`:
    the map drawn (T, S), to say how spread its rows are."""
    plain, w = mode == "plain", said_words(lang)
    pieces, ended = output_of(history.target(example, epoch))
    p, n = longest_run(pieces)
    rest = pieces[next(i for i in range(len(pieces)) if pieces[i:i + n] == [p] * n) + n:] if n else []
    end = (w["lh_then"].format(rest=" ".join(rest + ["</s>"] * ended)) if rest else
           w["lh_then_end"] if ended else w["lh_never_end"])
    code = lambda t: t.replace("</s>", "`</s>`")
    if n >= 3 and 2 * n >= len(pieces):
        said = words(pieces)
        text = f"{said + ' ' if said else ''}{w['lh_repeated'].format(p=p, n=n, end=end)}"
        first = "lh_common" if float(epoch) != 0 else "lh_untrained_plain" if plain else "lh_untrained_detail"
        why = [w[first].format(p=p, n=n, end=code(end)), w["lh_rows_plain" if plain else "lh_rows_detail"]]
    elif not pieces:
        text = w["lh_nothing"]
        why = [w["lh_ends_plain" if plain else "lh_ends_detail"]]
    else:
        return None
    if cross is not None and cross.size and float(cross.max(axis=-1).mean()) < 2.0 / cross.shape[-1]:
        why[-1] += w["lh_even_plain" if plain else "lh_even_detail"]
    out = ". ".join(why) + "."
    last = history.epochs[-1]
    final = words(history.target(example, last)) if float(last) != float(epoch) else ""
    return text, out + (w["lh_after"].format(final=final) if final else "")
