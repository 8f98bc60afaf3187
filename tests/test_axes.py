"""Issue 39, items 6 and 9 without a browser: every exported figure says what its rows and columns are in the model's
languages ('↓ English being written · German it reads →'), and the ablation's top-k lists no row reading p 0 on
both sides."""
from __future__ import annotations

import json

import pytest

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.layers import handlers as layers_handlers
from attention_lens.shell import exports
from attention_lens.shell.figures import axis_line
from attention_lens.translate import handlers as decoding_views

LINES = {("de", "en"): {"encoder_self": "↓ German reading · German it reads →",
                        "decoder_self": "↓ English being written · English written so far →",
                        "cross": "↓ English being written · German it reads →"},
         ("en", "de"): {"encoder_self": "↓ English reading · English it reads →",
                        "decoder_self": "↓ German being written · German written so far →",
                        "cross": "↓ German being written · English it reads →"}}


@pytest.mark.parametrize("languages", list(LINES))
def test_the_axis_line_names_rows_and_columns_in_the_models_languages(languages):
    for kind, line in LINES[languages].items():
        assert axis_line(kind, languages) == line


def test_the_exported_page_says_what_rows_and_columns_are_for_every_kind(tiny_translator, tiny_en_de):
    for tr, languages in ((tiny_translator, ("de", "en")), (tiny_en_de, ("en", "de"))):
        text = {"de": "Ein Hund rennt.", "en": "A dog runs."}[tr.config.src_lang]
        s = decoding_views.start(tr, text)[0]
        page = next(f for f in exports.export_maps(tr, s) if f.endswith(".html"))
        with open(page, encoding="utf-8") as f:
            body = f.read()
        for line in LINES[languages].values():
            assert line in body or json.dumps(line)[1:-1] in body, (languages, line)  # as typed, or JSON-escaped


def test_the_ablation_top_k_lists_no_row_reading_p_0_on_both_sides(translator):
    tr = translator  # the shipped model: sure of its piece, its 20th choice has p 0 at 4 decimals
    s = decoding_views.run(tr, decoding_views.start(tr, "Der Hund beißt den Mann.")[0])[0]
    every = ablation_handlers.head_choices(tr, "cross")
    *_, topk, _, note = ablation_handlers.ablate(tr, s, [], [], every[:1], 20)
    assert topk, "the top-k table is empty"
    assert all(row[2] > 0 or row[4] > 0 for row in topk), [r for r in topk if not (r[2] > 0 or r[4] > 0)]
    assert [row[0] for row in topk] == list(range(1, len(topk) + 1))  # ranks in order, none skipped
    if len(topk) < 20:
        assert f"Top-k lists {len(topk)} of the 20 pieces asked for" in note


def test_across_layers_figures_say_what_rows_and_columns_are(tiny_translator, tiny_en_de):
    for tr, languages in ((tiny_translator, ("de", "en")), (tiny_en_de, ("en", "de"))):
        text = {"de": "Ein Hund rennt.", "en": "A dog runs."}[tr.config.src_lang]
        s = decoding_views.run(tr, decoding_views.start(tr, text)[0])[0]
        roll, lines, matrix = layers_handlers.across_layers(tr, s)
        for fig, kind in ((roll, "encoder_self"), (matrix, "cross")):
            rows, cols = LINES[languages][kind][2:-2].split(" · ")
            assert LINES[languages][kind] in fig.layout.title.text
            assert fig.layout.yaxis.title.text == f"↓ {rows}" and fig.layout.xaxis.title.text == f"{cols} →"
        rows, cols = LINES[languages]["cross"][2:-2].split(" · ")
        assert list(lines.layout.yaxis.ticktext) == [rows, cols]  # the target's row, then the source's
