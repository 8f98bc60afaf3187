"""The Attention being learned tab's handlers: plain functions of (translator, inputs) -> outputs; bad input raises
gr.Error."""
from __future__ import annotations

import gradio as gr
import numpy as np

from attention_lens.learned import help as learned_help
from attention_lens.shell.figures import figure_words, with_separators
from attention_lens.shell.inputs import choice_index
from attention_lens.shell.texts import LANGS, each, number, page_lang, said
from transformer.interpret import figures
from transformer.interpret.history import AttentionHistory, describe_epoch, epoch_point


def learned(history: AttentionHistory | None, example, epoch, layer: str = "all layers",
            head: str = "mean of heads"):
    """Cross-attention of one example sentence at one recorded epoch (0, a fraction of epoch 1, or a whole
    epoch), and its greedy translation then."""
    if history is None or not history.epochs:
        raise gr.Error("this checkpoint has no attention history", print_exception=False)
    if isinstance(example, float) and example.is_integer():
        example = int(example)
    if isinstance(epoch, float) and epoch.is_integer():
        epoch = int(epoch)
    try:
        cross, src, tgt = history.cross(example, epoch), history.source(example), history.target(example, epoch)
    except (ValueError, KeyError, TypeError) as e:
        raise gr.Error(f"pick one of the example sentences and an epoch from {history.epochs[0]} to "
                       f"{history.epochs[-1]} ({e})", print_exception=False) from None
    L, H = cross.shape[:2]
    ls = range(L) if layer in (None, "all layers") else [choice_index(layer, "layer", L)]
    hs = range(H) if head in (None, "mean of heads") else [choice_index(head, "head", H)]
    w = cross[list(ls)][:, list(hs)].mean(axis=(0, 1))  # (T, S)
    # the plot's words and numbers in the user's page's language (attention_lens/shell/texts.py); its title names the
    # point as
    # the page's line above it does by default, plainly (passes over the data: the German page said "Runden" above a
    # title "nach Epoche 7"); the detailed line beside it still says the epoch
    lang = page_lang()
    words = figure_words(lang)
    rows = figures.row_labels(tgt, None, words)[:w.shape[0]]
    fig = with_separators(figures.heatmap(w, [figures.label(p) for p in src], rows,
                                          said("learned_title", lang, when=epoch_words(epoch, "plain", lang)),
                                          zmax=1.0, words=words), lang)
    text = "".join(p for p in tgt if p not in ("<s>", "</s>")).replace("▁", " ").strip()
    return fig, text



def learned_at(history: AttentionHistory | None, example, point, layer: str = "all layers",
               head: str = "mean of heads"):
    """`learned` at the slider's snapshot `point` (1 = history.epochs[0]), and what that point is."""
    if history is None or not history.epochs:
        raise gr.Error("this checkpoint has no attention history", print_exception=False)
    if isinstance(point, float) and point.is_integer():
        point = int(point)
    n = len(history.epochs)
    if isinstance(point, bool) or not isinstance(point, int) or not 1 <= point <= n:
        raise gr.Error(f"snapshot must be 1..{n}, got {str(point)[:40]!r}", print_exception=False)
    epoch = history.epochs[point - 1]
    fig, text = learned(history, example, epoch, layer, head)
    z = np.asarray(fig.data[0].z, dtype=float)
    ex = int(example) if isinstance(example, float) else example
    told = {(mode, lang): learned_help.explain(history, ex, epoch, z, mode, lang)
            for mode in ("plain", "detail") for lang in LANGS}
    e = float(epoch)
    what = ("learned_what_before" if e == 0 else "learned_what_one" if e == 1 else
            "learned_what_whole" if e.is_integer() else "learned_what_into")

    def line(mode, lang):
        why = told[mode, lang][1] if told[mode, lang] else ""
        head = said("snapshot", lang, point=point, n=n, when=epoch_words(epoch, mode, lang))
        head = (f"**{head}.**" if mode == "plain" else
                f"**{head}** ({said(what, lang, n=int(e), next=int(e) + 1)}).")
        return head + (" " + why if why else "")
    shown = told["detail", page_lang()]
    return fig, shown[0] if shown else text, each(line)


def epoch_words(epoch, mode: str = "plain", lang: str = "en") -> str:
    """A recorded point in words of `lang`: plainly in passes over the data, in detail in epochs."""
    if lang == "en":
        return learned_help.plain_epoch(epoch) if mode == "plain" else describe_epoch(epoch)
    whole, percent = epoch_point(epoch)
    key = "before" if not whole and percent is None else "after" if percent is None else "into"
    p = percent or 0  # 2 % or 12,5 % (epoch_point rounds to one decimal)
    return said(f"epoch_{key}_{mode}", lang, n=whole, next=whole + 1,
                pct=number(p, 0 if float(p).is_integer() else 1, lang))
