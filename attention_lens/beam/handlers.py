"""The Beam search tab's handlers: plain functions of (translator, inputs) -> outputs; bad input raises
gr.Error."""
from __future__ import annotations

import re

import gradio as gr

from attention_lens.beam.figures import beam_tree_figure
from attention_lens.shell.figures import figure
from attention_lens.shell.inputs import fail, need_session
from attention_lens.shell.texts import number, page_lang, said
from attention_lens.translate import payload as P
from transformer.decode.beam import beam_search, check_beam_size
from transformer.decode.decoding import Translator, attend_ids


def beam(tr: Translator, text: str, size):
    """Beam search of `text` (the API's /beam): the tree, the hypotheses, and the attention of the best one."""
    try:
        source_ids = tr.source_ids(text)
    except ValueError as e:
        fail(e)
    return beam_ids(tr, source_ids, size)


def beam_started(tr: Translator, session, size):
    """Beam search of the sentence started in the Translate tab (the tab's button), as every tab uses it."""
    return beam_ids(tr, need_session(session).source_ids, size)


def beam_ids(tr: Translator, source_ids: list[int], size):
    """The tree, the hypotheses, and the attention of the best one."""
    try:
        size = check_beam_size(int(size) if isinstance(size, float) and size.is_integer() else size)
        result = beam_search(tr.model, source_ids, size)
    except ValueError as e:
        fail(e)
    # the ranking score: log-probability per piece (beam_search's default length_penalty 1), said in the page's
    # language (English for a program); each starts with its number, which is what beam_pick reads
    lang = page_lang()
    pieces = lambda n: said("beam_pieces_1", lang) if n == 1 else said("beam_pieces_n", lang, n=n)
    choices = [said("beam_choice", lang, i=i + 1, text=tr.tokenizer.decode(h.ids), score=number(h.score, 2, lang),
                    pieces=pieces(len(h.ids)), per=number(h.normalized, 3, lang),
                    unfinished="" if h.finished else said("beam_unfinished", lang))
               for i, h in enumerate(result.hypotheses)]
    state = {"source_ids": result.source_ids, "hyps": [h.ids for h in result.hypotheses],
             "paths": [h.path for h in result.hypotheses], "tree": result.tree, "model": tr.key}
    fig = beam_tree_figure(result.tree, tr.tokenizer.piece, highlight_path=result.hypotheses[0].path)
    return state, figure(fig), gr.update(choices=choices, value=choices[0]), beam_payload(tr, state, 0)


def beam_payload(tr: Translator, state: dict, i: int) -> dict:
    tgt = [tr.config.bos_id] + list(state["hyps"][i])
    maps = attend_ids(tr.model, state["source_ids"], tgt)
    return P.attention_payload(maps, tr.tokenizer.pieces(state["source_ids"]), tr.tokenizer.pieces(tgt),
                               cursor=len(tgt) - 1, done=True, mode="beam", doc=f"beam {i + 1}")  # which one


def beam_pick(tr: Translator, state, choice):
    if not isinstance(state, dict) or not state.get("hyps"):
        raise gr.Error("Run the beam search first.", print_exception=False)
    m = re.match(r"^(\d+)\.", choice if isinstance(choice, str) else "")
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < len(state["hyps"]):
        raise gr.Error("pick one of the listed hypotheses", print_exception=False)
    fig = beam_tree_figure(state["tree"], tr.tokenizer.piece, highlight_path=state["paths"][i])
    return figure(fig), beam_payload(tr, state, i)
