"""The Attention being learned tab's words for a snapshot whose greedy output is not yet a translation (issue 26,
item 6): before training, and early in it, a model repeats one piece (or ends at once), and its map's rows are that
output; the words say so, and what the model learns to say instead."""
from __future__ import annotations

import numpy as np

from transformer.history import epoch_point

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
    passes over the data' (transformer.history.describe_epoch says it with epochs)."""
    whole, percent = epoch_point(epoch)
    if percent is None:
        return f"after {whole} pass{'es' if whole > 1 else ''} over the data" if whole else "before training"
    return f"{percent:g} % into pass {whole + 1} over the data"


def explain(history, example, epoch, cross: np.ndarray | None = None,
            mode: str = "detail") -> tuple[str, str] | None:
    """(the text box's words, sentences for the snapshot's line, plainly or in detail) when the output is one piece
    repeated or nothing at all; None when it is a translation to read. `cross`: the map drawn (T, S), to say how
    spread its rows are."""
    plain = mode == "plain"
    pieces, ended = output_of(history.target(example, epoch))
    p, n = longest_run(pieces)
    rest = pieces[next(i for i in range(len(pieces)) if pieces[i:i + n] == [p] * n) + n:] if n else []
    end = (f"then {' '.join(rest + ['</s>'] * ended)}" if rest else
           "then </s>" if ended else "until the length limit, never </s>")
    code = lambda t: t.replace("</s>", "`</s>`")  # noqa: E731 (Markdown would read <s> as a tag)
    if n >= 3 and 2 * n >= len(pieces):
        said = words(pieces)
        text = f"{said + ' ' if said else ''}(no translation yet: {p} repeated {n} times, {end})"
        if plain and float(epoch) == 0:
            why = [f"The untrained model writes the piece it has just read: `{p}` after `{p}`, {n} times, "
                   f"{code(end)}. Its numbers are random, but reading a piece and writing one share the same "
                   "list of numbers, so that piece wins; fed back in, it repeats"]
        elif plain:
            why = [f"The same piece over and over (`{p}`, {n} times, {code(end)}): the model has learned that it is "
                   "a common piece, not yet how to follow the sentence"]
        elif float(epoch) == 0:
            why = [f"The untrained model predicts the piece it has just read: `{p}` after `{p}`, {n} times, "
                   f"{code(end)}. Its weights are random, but its output and input embeddings are the same matrix "
                   "(tied) and the residual connections carry the piece read up to the output, so that piece scores "
                   "highest against itself; fed back in, it repeats"]
        else:
            why = [f"The same piece over and over (`{p}`, {n} times, {code(end)}): the model has learned that it is "
                   "a common piece, not yet how to follow the sentence"]
        why.append("Each row of the map is one of those steps" + ("" if plain else
                                                                   " (a row reads “query → the piece it predicts”)"))
    elif not pieces:
        text = "(no translation yet: its first prediction is already </s>, the end of the sentence)"
        why = ["It ends at once: the only row is `<s>` → `</s>`, the model reading the start and "
               + ("writing the end" if plain else "predicting the end")]
    else:
        return None
    if cross is not None and cross.size and float(cross.max(axis=-1).mean()) < 2.0 / cross.shape[-1]:
        why[-1] += (", and it looks at every word of the sentence about the same: it does not yet know which words "
                    "go together" if plain else ", and its attention is spread almost evenly over the source: no "
                                                  "alignment yet")
    out = ". ".join(why) + "."
    last = history.epochs[-1]
    final = words(history.target(example, last)) if float(last) != float(epoch) else ""
    return text, out + (f" After training it says “{final}”" if final else "")
