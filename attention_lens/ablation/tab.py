"""The Head ablation tab: switch off heads for one request and compare with the intact model."""
from __future__ import annotations

import gradio as gr

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.ablation import help as A
from attention_lens.shell import page_state
from attention_lens.shell.components import CONC, Ctx, api_only, lens_view, live_position, started_sentence
from attention_lens.shell.models import of_session
from attention_lens.shell.texts import explained, label, page_lang, said, shown_table
from attention_lens.shell.texts import words as said_words
from transformer.interpret.capture import layers_of

UNSTARTED = "un_ablation"  # attention_lens/texts [label], said by page_state.unstarted in the user's language
HEADS = (("th_position", "th_piece", "th_p_intact", "th_p_ablated", "th_change"),  # the tables' heads: [label]
         ("th_rank", "th_intact", "th_p", "th_ablated", "th_p"))


def build(ctx: Ctx) -> None:
    tr = ctx.tr
    gr.Markdown(explained("ablation.intro"), elem_id="ablate_intro")
    started_sentence(ctx, "ablate_sentence")
    groups = {}
    with gr.Row():
        for kind, title, elem in (("encoder_self", label("enc_heads"), "ablate_enc"),
                                  ("decoder_self", label("dec_heads"), "ablate_dec"),
                                  ("cross", label("cross_heads"), "ablate_cross")):
            with gr.Column(min_width=300):
                groups[kind] = gr.CheckboxGroup(ablation_handlers.head_choices(tr, kind), label=title, elem_id=elem)
                whole_buttons(tr, kind, groups[kind])
    enc, dec, cross = groups["encoder_self"], groups["decoder_self"], groups["cross"]
    picks = A.suggestions(tr)
    with gr.Row(equal_height=True, elem_id="ablate_tools"):
        b_clear = gr.Button(label("clear_ticks"), size="sm", scale=0, min_width=100, elem_id="ablate_clear")
        b_suggest = [gr.Button(picks[i]["label"] if i < len(picks) else "", size="sm", visible=i < len(picks),
                               elem_id=f"ablate_suggest_{i + 1}") for i in range(A.N_SUGGESTIONS)]
    suggest_note = gr.Markdown(A.suggestions_note(tr), elem_id="ablate_suggest_note")
    gr.Markdown(explained("ablation.why"), elem_id="ablate_why")
    b_ablate = gr.Button(label("compare"), variant="primary", elem_id="ablate_run")
    # drawn for the sentence and model it was computed for (attention_lens/shell/page_state.py)
    with page_state.results() as box:
        note = gr.Textbox(label="", show_label=False, interactive=False, elem_id="ablate_note")
        with gr.Row():
            intact = gr.Textbox(label=label("intact"), interactive=False,
                                elem_id="intact_translation")
            ablated = gr.Textbox(label=label("ablated"), interactive=False,
                                 elem_id="ablated_translation")
        with gr.Row():
            probs = gr.Dataframe(headers=[said_words()[k] for k in HEADS[0]],
                                 label=label("probs"), interactive=False,
                                 elem_id="ablate_probs")
            topk = gr.Dataframe(headers=[said_words()[k] for k in HEADS[1]], label=label("topk_step"),
                                interactive=False, elem_id="ablate_topk")
        view = lens_view(ctx, "attention_ablated")

    # at the step the Translate view shows (ctx.view, read live by the js); the page's Compare also draws the box
    # for the page's mark in the same answer (a view drawn while hidden has no map to read); /ablate for programs
    inputs, outs = [ctx.state, enc, dec, cross, ctx.k, ctx.view], [intact, ablated, probs, topk, view, note]
    page_inputs = [ctx.page.started] + inputs  # the mark of what is started: the answer is drawn for it
    ablate = of_session(ablation_handlers.ablate_at)

    def compare(mark, session, *rest):  # without a started sentence (a model picked, a reload): said in the note
        if not page_state.started(session):
            return {note: page_state.unstarted(UNSTARTED, words=said_words(page_lang())),
                    box: page_state.drawn_for(mark)}
        was, now, p_rows, k_rows, payload, told = ablate(session, *rest)  # /ablate's answer (handlers.ablate)
        # the tables' heads in the user's page's language (not gr.I18n's)
        heads = {t: {"headers": [said(k) for k in keys], "data": rows, "metadata": shown_table(rows)}
                 for t, keys, rows in ((probs, HEADS[0], p_rows), (topk, HEADS[1], k_rows))}
        return {intact: was, ablated: now, view: payload, note: told, box: page_state.drawn_for(mark)} | heads

    b_ablate.click(compare, page_inputs, outs + [box], js=live_position(7, 6), api_visibility="private", **CONC)
    api_only(ctx).click(ablate, inputs, outs, js=live_position(6, 5), api_name="ablate", **CONC)
    b_clear.click(None, None, [enc, dec, cross], js=A.CLEAR_JS)
    models = ctx.models

    def suggest(i):
        def ticks(session, key=""):  # the started sentence's model, else the picker's
            tr_ = session.translator if hasattr(session, "translator") else models.get(key)
            e, d, x = A.ticks(tr_, i)
            return {enc: e, dec: d, cross: x}
        return ticks

    for i, b in enumerate(b_suggest):  # one click: tick the atlas's pick and compare
        b.click(suggest(i), [ctx.state, ctx.model], [enc, dec, cross], **page_state.QUIET).success(
            compare, page_inputs, outs + [box], js=live_position(7, 6), api_visibility="private", **CONC)

    def model_picks(key=""):  # the picks are the model's: they follow the picker (a link's model too)
        m = models.get(key) if models is not None else tr
        ps = A.suggestions(m)
        return {b: gr.update(value=ps[i]["label"] if i < len(ps) else "", visible=i < len(ps))
                for i, b in enumerate(b_suggest)} | {suggest_note: A.suggestions_note(m)}

    if ctx.model is not None:
        ctx.model.change(model_picks, [ctx.model], b_suggest + [suggest_note], **page_state.QUIET)


def whole_buttons(tr, kind: str, group: gr.CheckboxGroup) -> None:
    """Under a kind's checkboxes: switch off the whole kind, or one whole layer of it (added to the ticks; in the
    browser, no request)."""
    layers = range(layers_of(tr.model, kind))
    sets = {"all": A.kind_labels(tr, kind)} | {f"layer {n + 1}": A.layer_labels(tr, kind, n) for n in layers}
    with gr.Row(elem_id=f"ablate_whole_{kind}", elem_classes=["al-small-buttons"]):
        for value, elem_id, shown in ([("all", f"ablate_all_{kind}", f"{label('tick_all')} {len(sets['all'])}")]
                                      + [(f"layer {n + 1}", f"ablate_layer_{kind}_{n + 1}",
                                          f"{label('tick_layer')} {n + 1}") for n in layers]):
            b = gr.Button(shown, elem_id=elem_id, size="sm", scale=0, min_width=0)
            b.click(None, [group], [group], js=A.add_js_of(sets, value), show_progress="hidden")
