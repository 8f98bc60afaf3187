"""The Head ablation tab: switch off heads for one request and compare with the intact model."""
from __future__ import annotations

import gradio as gr

from transformer.interpret.capture import layers_of
from ui.ablation import handlers as ablation_handlers
from ui.ablation import help as A
from ui.shell import controls as drawn
from ui.shell import page_state
from ui.shell.components import CONC, Ctx, api_only, lens_view, live_position, started_sentence
from ui.shell.models import of_session
from ui.shell.texts import both, explained, label, page_lang, said
from ui.shell.texts import words as said_words

PRESS = label("ablation_press")  # in the page's language (gr.I18n: the note is a Textbox's value)
UNSTARTED = "un_ablation"  # ui/texts [label], said by page_state.unstarted in the user's language
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
    with gr.Column() as view_box:  # hidden while it would show another sentence's maps (ui/shell/page_state.py)
        view = lens_view(ctx, "attention_ablated")

    # at the step the Translate view shows (ctx.view, read live by the js); the page's Compare also shows the
    # maps' box in the same answer (a view drawn while hidden has no map to read); /ablate for programs as before
    inputs, outs = [ctx.state, enc, dec, cross, ctx.k, ctx.view], [intact, ablated, probs, topk, view, note]
    ablate = of_session(ablation_handlers.ablate_at)

    def compare(session, *rest):  # without a started sentence (a model picked, a reload): said in the note
        if not page_state.started(session):
            return [gr.skip()] * 5 + [page_state.unstarted(UNSTARTED, words=said_words(page_lang())), gr.skip()]
        out = list(ablate(session, *rest))  # the tables' heads in the user's page's language (not gr.I18n's)
        out[2:4] = [{"headers": [said(k) for k in keys], "data": rows} for keys, rows in zip(HEADS, out[2:4])]
        return (*out, page_state.hidden(False))

    b_ablate.click(compare, inputs, outs + [view_box], js=live_position(6, 5), api_visibility="private", **CONC)
    api_only(ctx).click(ablate, inputs, outs, js=live_position(6, 5), api_name="ablate", **CONC)
    b_clear.click(None, None, [enc, dec, cross], js=A.CLEAR_JS)
    models = ctx.models

    def suggest(i):
        def ticks(session, key=""):  # the started sentence's model, else the picker's
            return A.ticks(session.translator if hasattr(session, "translator") else models.get(key), i)
        return ticks

    for i, b in enumerate(b_suggest):  # one click: tick the atlas's pick and compare
        b.click(suggest(i), [ctx.state, ctx.model], [enc, dec, cross], **page_state.QUIET).success(
            compare, inputs, outs + [view_box], js=live_position(6, 5), api_visibility="private", **CONC)

    def new(key="", note=PRESS):  # a new sentence or model: nothing of the old one stays; the picks are the model's
        m = models.get(key) if models is not None else tr
        ps = A.suggestions(m)
        return (["", "", None, None, None, note, page_state.hidden()]
                + [gr.update(value=ps[i]["label"] if i < len(ps) else "", visible=i < len(ps))
                   for i in range(A.N_SUGGESTIONS)] + [A.suggestions_note(m)])

    page_state.on_new(ctx, [intact, ablated, probs, topk, view, note, view_box] + b_suggest + [suggest_note], new,
                 idle=lambda key="": new(key, ""))  # a model picked, no sentence: the sentence line says so


def whole_buttons(tr, kind: str, group: gr.CheckboxGroup) -> None:
    """Under a kind's checkboxes: switch off the whole kind, or one whole layer of it (added to the ticks; in the
    browser, no request)."""
    layers = range(layers_of(tr.model, kind))
    sets = {"all": A.kind_labels(tr, kind)} | {f"layer {n + 1}": A.layer_labels(tr, kind, n) for n in layers}
    row = drawn.buttons([(f"ablate_all_{kind}", "all", f"tick all {len(sets['all'])}")]
                        + [(f"ablate_layer_{kind}_{n + 1}", f"layer {n + 1}", f"tick layer {n + 1}") for n in layers],
                        shown={"all": both("tick_all", n=len(sets["all"]))}
                        | {f"layer {n + 1}": both("tick_layer", n=n + 1) for n in layers},
                        elem_id=f"ablate_whole_{kind}")
    row.click(None, [row, group], [group], js=A.add_js_of(sets))
