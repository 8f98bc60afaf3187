"""The Beam search tab: the beam as a tree, and the attention of any hypothesis."""
from __future__ import annotations

import gradio as gr

from attention_lens.beam import handlers as beam_handlers
from attention_lens.beam.figures import upright_beam
from attention_lens.shell import page_state
from attention_lens.shell.components import CONC, SESSION_TTL_S, Ctx, api_only, lens_view, started_sentence
from attention_lens.shell.figures import for_width, width_input, with_width
from attention_lens.shell.models import of_session
from attention_lens.shell.texts import explained, label, page_lang
from attention_lens.shell.texts import words as said_words

UNSTARTED = "un_beam"  # attention_lens/texts [label], said by page_state.unstarted in the user's language


def build(ctx: Ctx) -> None:
    models = ctx.models
    gr.Markdown(explained("beam.intro"), elem_id="beam_intro")
    started_sentence(ctx, "beam_sentence")
    with gr.Row():
        size = gr.Slider(1, 8, value=4, step=1, label=label("beam_size"), elem_id="beam_size")
        b_beam = gr.Button(label("beam_run"), variant="primary", elem_id="beam_run")
    state = gr.State(None, time_to_live=SESSION_TTL_S)
    # drawn for the sentence and model it was computed for (attention_lens/shell/page_state.py)
    with page_state.results() as box:
        note = gr.Markdown("", elem_id="beam_note")
        tree = gr.Plot(label=label("beam_tree"), elem_id="beam_tree")
        choice = gr.Dropdown([], label=label("hypothesis"), elem_id="beam_choice")
        view = lens_view(ctx, "attention_beam")

    # the page's width: on a phone the tree is drawn upright (attention_lens/shell/figures.py for_width)
    width = width_input()
    outs = [state, tree, choice, view]
    started = of_session(beam_handlers.beam_started)

    # the tree, and the box drawn for the page's mark in the same answer (a hidden view draws no map)
    def run(mark, session, n, page_width=0):
        if not page_state.started(session):  # a model picked, a page reloaded: said in the note, nothing turns red
            return {note: page_state.unstarted(UNSTARTED, words=said_words(page_lang())),
                    box: page_state.drawn_for(mark)}
        beams, fig, hypotheses, payload = started(session, n)
        return {state: beams, tree: for_width(fig, page_width, upright_beam), choice: hypotheses, view: payload,
                note: "", box: page_state.drawn_for(mark)}

    b_beam.click(run, [ctx.page.started, ctx.state, size, width], outs + [note, box], js=with_width(None, 4),
                 api_visibility="private", **CONC)

    def beam(text, n, key=""):  # /beam (text, size[, model])
        return beam_handlers.beam(models.get(key), text, n)

    def pick(beams, picked):  # the beam's own model (its state names it)
        return beam_handlers.beam_pick(models.get(beams.get("model") if isinstance(beams, dict) else ""), beams, picked)

    def pick_here(beams, picked, page_width):  # the page's: the tree drawn for its width
        fig, shown = pick(beams, picked)
        return {tree: for_width(fig, page_width, upright_beam), view: shown}

    api_only(ctx).click(beam, [ctx.source, size, ctx.model], outs, api_name="beam", **CONC)
    api_only(ctx).click(pick, [state, choice], [tree, view], api_name="beam_pick", **CONC)
    choice.input(pick_here, [state, choice, width], [tree, view], js=with_width(None, 3), api_visibility="private",
                 trigger_mode="always_last", **CONC)  # picks while one is answered: the last one's map, drawn last
