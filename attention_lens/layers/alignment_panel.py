"""The Across layers tab's word alignment of the whole sentence by each method (attention, ALTI+, saliency) and how
often they agree (attention_lens/translate/attribution.py word_alignment_at; the library computes:
transformer/interpret/agreement.py)."""
from __future__ import annotations

import gradio as gr

from attention_lens.shell import page_state
from attention_lens.shell.components import CONC, Ctx
from attention_lens.shell.figures import for_width, in_box, width_input, with_width
from attention_lens.shell.texts import explained, label, page_lang
from attention_lens.translate import attribution as attribution_views
from attention_lens.translate.attribution import ALIGN_METHODS, alignment_headers

# the position of the whole trajectory the Translate view holds (not only up to its step): its last position
WHOLE = ('(...a) => { const d = document.getElementById("attention")?.lens?.state?.traj; '  # the view, on its element
         "if (d) a[3] = JSON.stringify({step: d.n - 1, ids: d.ids, forced: d.forced.map(Number)}); "
         "return a.slice(0, 4); }")


def build(ctx: Ctx, tab: gr.Tab | None = None) -> None:
    """The section and its events: when the tab is selected and when the method changes (not on every step: it is
    of the whole sentence)."""
    gr.Markdown(explained("align.intro"),
                elem_id="word_align_intro")
    method = gr.Dropdown([(label(f"mname_{m}"), m) for _, m in ALIGN_METHODS], value="alti",
                         label=label("align_method"), elem_id="word_align_method", filterable=False)
    # drawn for the sentence and model it was computed for (attention_lens/shell/page_state.py)
    with page_state.results() as box:
        summary = gr.Markdown("", elem_id="word_align_summary")
        with gr.Row(equal_height=False):
            matrix = gr.Plot(label=label("word_alignment"), elem_id="word_align_matrix")
            table = gr.Dataframe(headers=alignment_headers(), interactive=False, wrap=True, elem_id="word_align_table",
                                 label=label("align_table"), max_height=900)
    # the page's width: on a phone the matrix is drawn for it (attention_lens/shell/figures.py for_width)
    width = width_input()
    inputs, outs = [ctx.page.started, ctx.state, method, ctx.view, width], [matrix, table, summary, box]
    follow = dict(CONC, js=with_width(WHOLE, 5), api_visibility="private", show_progress="minimal",
                  trigger_mode="always_last")

    def word_alignment_follow(mark, session, chosen, position, page_width=0):  # page_width 0: a wide page
        if not page_state.started(session):  # quietly nothing before Start
            return gr.skip()
        fig, rows, said = attribution_views.word_alignment_follow(session, chosen, position)
        if isinstance(rows, list):  # the table's heads in the user's page's language (a Dataframe's are not gr.I18n's)
            rows = {"headers": alignment_headers(lang=page_lang()), "data": rows}
        # on a wide page the matrix is half the row, beside its table: its title wrapped to that half, not cut
        return {matrix: in_box(for_width(fig, page_width), page_width, 0.5), table: rows, summary: said,
                box: page_state.drawn_for(mark)}

    for event in ([tab.select] if tab is not None else []) + [method.input]:
        event(word_alignment_follow, inputs, outs, **follow)
