"""The Head ablation tab's handlers: plain functions of (translator, inputs) -> outputs; bad input raises
gr.Error."""
from __future__ import annotations

import gradio as gr

from attention_lens.ablation import help as A
from attention_lens.shell.inputs import TOPK, check_k, fail, need_session, parse_head_labels
from attention_lens.shell.texts import labels, page_lang
from attention_lens.translate import payload as P
from attention_lens.translate.handlers import at_position
from transformer.decode.decoding import Translator
from transformer.interpret.capture import layers_of


def head_choices(tr: Translator, kind: str) -> list[str]:
    layers = layers_of(tr.model, kind)
    return [f"L{l + 1} H{h + 1}" for l in range(layers) for h in range(tr.config.n_heads)]


def ablate(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK):
    """Intact vs heads-switched-off on the sequence the view shows (forced pieces kept on both sides): translations,
    top-k at the step shown (at the end: the last that predicts a piece), chosen-token probabilities, maps."""
    s = need_session(session)
    k = check_k(k)
    heads = (parse_head_labels("encoder_self", enc_heads) + parse_head_labels("decoder_self", dec_heads)
             + parse_head_labels("cross", cross_heads))
    w = labels(page_lang())  # the user's page's language; English for programs (attention_lens/texts [label])
    if not heads:
        raise gr.Error(w["err_tick_head"], print_exception=False)
    plan = A.forced_plan(s)  # the sequence the view shows, forced pieces included, decoded by both models
    try:
        intact_run, ablated_run, a = A.replays(tr, s, plan, heads)  # in one batch
    except ValueError as e:
        fail(e)
    ids = intact_run.target_ids
    p0, p1 = tr.token_probs(s.source_ids, ids), tr.token_probs(s.source_ids, ids, heads)
    pieces = tr.tokenizer.pieces(ids)
    probs = [[i + 1, pieces[i + 1], round(float(x), 4), round(float(y), 4), round(float(y - x), 4)]
             for i, (x, y) in enumerate(zip(p0, p1))]
    step = A.topk_step(tr, s)  # at the end: the last step that predicts a piece
    ti, ta = s.topk(k, position=step), a.topk(k, position=step)
    topk = [[r + 1, ti[r][0], round(ti[r][1], 4), ta[r][0], round(ta[r][1], 4)] for r in range(k)
            if max(round(ti[r][1], 4), round(ta[r][1], 4)) > 0]  # a row reading p 0 on both sides says nothing
    summary = A.summary(tr, len(heads), s, step, plan, intact_run.translation == ablated_run.translation)
    if len(topk) < k:
        summary += w["ablation_topk_short"].format(n=len(topk), k=k)
    return (intact_run.translation, ablated_run.translation, probs, topk, P.session_payload(a.view(), mode="ablated"),
            summary)


def ablate_at(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK, position=None):
    """ablate at the position the browser shows (at_position)."""
    return ablate(tr, at_position(tr, session, position), enc_heads, dec_heads, cross_heads, k)
