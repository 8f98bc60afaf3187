"""The Across layers tab: encoder attention rollout and the source-target alignment."""
from __future__ import annotations

import gradio as gr

from attention_lens.layers import alignment_panel
from attention_lens.layers import handlers as layers_handlers
from attention_lens.layers.figures import upright_alignment
from attention_lens.shell import page_state
from attention_lens.shell.components import CONC, Ctx, api_only, live_position, started_sentence
from attention_lens.shell.figures import for_width, in_box, width_input, with_width
from attention_lens.shell.models import of_session
from attention_lens.shell.texts import explained, label, page_lang
from attention_lens.shell.texts import words as said_words
from transformer.interpret.capture import layers_of

UNSTARTED = "un_layers"  # attention_lens/texts [label], said by page_state.unstarted in the user's language


def build(ctx: Ctx, tab: gr.Tab | None = None) -> None:
    """Show computes on demand (and is the API's /layers); the tab also follows the Translate view by itself:
    when it is selected, when the view's step changes while it is shown (lens_player.js fires the view's "select"
    event then), and when the layer or threshold changes."""
    L = layers_of(ctx.tr.model, "cross")
    gr.Markdown(explained("layers.intro"), elem_id="layers_intro")
    started_sentence(ctx, "layers_sentence")
    with gr.Row():
        # the names in the page's language (gr.I18n), the values as the handlers and the API take them
        layer = gr.Dropdown([(label("all_layers"), "all layers")]
                            + [(f"{label('layer_cap')} {i + 1}", f"layer {i + 1}") for i in range(L)],
                            value="all layers", label=label("cross_layer"), elem_id="align_layer")
        threshold = gr.Slider(0.05, 1.0, value=0.15, step=0.05, label=label("draw_links"),
                              elem_id="align_threshold")
        b_show = gr.Button(label("show"), variant="primary", elem_id="layers_run")
    # drawn for the sentence and model it was computed for (attention_lens/shell/page_state.py)
    with page_state.results() as box:
        note = gr.Markdown("", elem_id="layers_note")  # why Show showed nothing (no sentence started)
        lines = gr.Plot(label=label("alignment"), elem_id="align_lines")
        with gr.Row():
            matrix = gr.Plot(label=label("alignment_matrix"), elem_id="align_matrix")
            rollout = gr.Plot(label=label("rollout"), elem_id="rollout")

    # the page's width: on a phone the figures are drawn for it (attention_lens/shell/figures.py for_width)
    width = width_input()

    def drawn(figs, page_width, mark) -> dict:  # (rollout, lines, matrix) for the page's width: the lines across it,
        # the two heatmaps side by side (their titles wrapped to their half on a wide page), drawn for the page's mark
        shares = (0.5, 1.0, 0.5)
        out = {o: in_box(for_width(f, page_width, upright_alignment), page_width, s)
               for o, f, s in zip((rollout, lines, matrix), figs, shares, strict=True)}
        return out | {note: "", box: page_state.drawn_for(mark)}

    inputs, outs = [ctx.state, layer, threshold, ctx.view], [rollout, lines, matrix]
    page_inputs = [ctx.page.started] + inputs + [width]  # the mark of what is started: the answer is drawn for it
    at = of_session(layers_handlers.across_layers_at)

    def show(mark, session, chosen, cut, position, page_width=0):  # the page's Show: says so in its note before Start
        if not page_state.started(session):
            return {note: page_state.unstarted(UNSTARTED, words=said_words(page_lang())),
                    box: page_state.drawn_for(mark)}
        return drawn(at(session, chosen, cut, position), page_width, mark)

    page_js = with_width(live_position(5, 4), 6)
    b_show.click(show, page_inputs, outs + [note, box], js=page_js, api_visibility="private", **CONC)
    api_only(ctx).click(at, inputs, outs, js=live_position(4, 3), api_name="layers", **CONC)  # gr.Error for programs
    follow = dict(CONC, js=page_js, api_visibility="private", show_progress="hidden", trigger_mode="always_last")
    follow_at = of_session(layers_handlers.across_layers_follow)

    def across_layers_follow(mark, session, chosen, cut, position, page_width=0):  # page_width 0: a wide page
        if not page_state.started(session):  # quietly nothing before Start (of_session alone says gr.Error)
            return gr.skip()
        return drawn(follow_at(session, chosen, cut, position), page_width, mark)

    for event in ([tab.select] if tab is not None else []) + [ctx.view.select, layer.input, threshold.release]:
        event(across_layers_follow, page_inputs, outs + [note, box], **follow)
    alignment_panel.build(ctx, tab)  # the whole sentence's word alignment by each method, and their agreement
