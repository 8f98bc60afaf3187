"""The Across layers tab's handlers: plain functions of (translator, inputs) -> outputs; bad input raises
gr.Error."""
from __future__ import annotations

import gradio as gr

from attention_lens.layers.figures import alignment_figure
from attention_lens.shell.figures import axis_words, figure, figure_words, with_axes
from attention_lens.shell.inputs import choice_index, need_session
from attention_lens.shell.texts import said
from attention_lens.translate.handlers import at_position
from transformer.decode.decoding import DecodingSession, Translator
from transformer.interpret import analysis, figures


def across_layers(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15):
    """Encoder attention rollout, and the source-target alignment from cross-attention (lines + matrix)."""
    s = need_session(session)
    maps = s.attention
    layer = None if layer_choice in (None, "all layers") else choice_index(layer_choice, "layer", maps.cross.shape[0])
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise gr.Error("threshold must be in (0, 1]", print_exception=False)
    roll = analysis.rollout(maps.encoder_self)[-1]  # (S, S) through all encoder layers
    src = [figures.label(p) for p in maps.source_tokens]
    languages = (tr.config.src_lang, tr.config.tgt_lang)  # each figure says what its rows and columns are
    words = figure_words()  # the heatmaps' hovers in the user's page's language (their numbers: with_axes)
    fig_roll = with_axes(figures.heatmap(roll, src, src, said("rollout_title"), words=words),
                         "encoder_self", languages)
    # row t of cross-attention is the query at target token t: it predicts token t+1
    predicted = list(maps.target_tokens[1:]) + ([] if s.done else [tr.tokenizer.piece(s.positions[s.cursor].greedy)])
    align = analysis.alignment(maps.cross, layer)[:len(predicted)]  # (T', S)
    which = said("all_layers") if layer is None else f"{said('layer')} {layer + 1}"
    fig_lines = alignment_figure(align, maps.source_tokens, predicted, threshold=float(threshold))
    rows_words, cols_words = axis_words("cross", languages)
    fig_lines["layout"]["title"] = {"text": said("lines_title", which=which)}
    fig_lines["layout"]["yaxis"]["ticktext"] = [rows_words, cols_words]  # the target's row below, the source's on top
    fig_lines["layout"]["margin"]["l"] = 150
    rows = [f"{figures.label(q)} → {figures.label(p)}" for q, p in zip(maps.target_tokens, predicted)]  # as Translate
    fig_mat = with_axes(figures.heatmap(align, src, rows,
                                        said("matrix_title", which=which), words=words),
                        "cross", languages)
    for fig, kind in ((fig_roll, "encoder_self"), (fig_mat, "cross")):  # "queries"/"keys" said in the languages
        rows_words, cols_words = axis_words(kind, languages)
        fig.update_layout(xaxis_title_text=f"{cols_words} →", yaxis_title_text=f"↓ {rows_words}")
    return fig_roll, figure(fig_lines), fig_mat


def across_layers_at(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                     position=None):
    """across_layers at the position the browser shows (at_position)."""
    return across_layers(tr, at_position(tr, session, position), layer_choice, threshold)


def across_layers_follow(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                         position=None):
    """across_layers_at when the tab is shown or the step changes: quietly nothing before Start."""
    if not isinstance(session, DecodingSession):
        return gr.skip(), gr.skip(), gr.skip()
    return across_layers_at(tr, session, layer_choice, threshold, position)
