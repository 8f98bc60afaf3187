"""The attention heatmaps transformer/interpret/figures.py builds say their words in the page's language: the library
takes them as a parameter (English by default: the CLI, notebooks), the handlers pass the catalogue's in the user's
page's language, and a hover's number is Plotly's own %{z:.3f}, written with the layout's separators (',.' in
German)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from attention_lens.shell import texts
from transformer.interpret import figures


def as_user(lang):
    from gradio.context import LocalContext
    return LocalContext.request.set(SimpleNamespace(request=SimpleNamespace(
        cookies={texts.LANG_COOKIE: lang}, headers={"accept-language": ""})))


def in_page(lang, make):
    from gradio.context import LocalContext
    token = as_user(lang)
    try:
        return make()
    finally:
        LocalContext.request.reset(token)


def hovers(fig) -> list[str]:
    return [t.hovertemplate for t in fig.data if t.type == "heatmap"]


def test_the_librarys_heatmap_speaks_english_by_default_and_plotly_writes_its_number():
    fig = figures.heatmap(np.array([[0.12345, 0.5], [0.25, 0.75]]), ["a", "&lt;b"], ["x", "y"])
    (h,) = hovers(fig)
    assert h.startswith("query %{text}<br>key %{customdata}<br>weight %{z:.3f}"), h
    assert [list(r) for r in fig.data[0].text] == [["x", "x"], ["y", "y"]]
    assert [list(r) for r in fig.data[0].customdata] == [["a", "&lt;b"], ["a", "&lt;b"]]
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("keys", "queries")
    de = figures.heatmap(np.eye(2), ["a", "b"], ["x", "y"], words={"query": "Zeile", "keys": "Schlüssel"})
    assert hovers(de)[0].startswith("Zeile %{text}<br>key ") and de.layout.xaxis.title.text == "Schlüssel"


def test_the_catalogues_english_is_the_librarys_and_german_has_every_word():
    from attention_lens.shell.figures import figure_words
    assert figure_words("en") == figures.WORDS
    de = figure_words("de")
    assert set(de) == set(figures.WORDS)
    assert (de["query"], de["key"], de["weight"]) == ("Zeile", "Schlüssel", "Gewicht")


def test_the_notebooks_grid_and_inside_figures_take_the_words(tiny_translator):
    from attention_lens.translate import handlers as decoding_views
    s = decoding_views.run(tiny_translator, decoding_views.start(tiny_translator, "Ein Hund rennt.")[0])[0]
    maps = s.attention
    en = maps.figure("cross")
    assert all(h.startswith("layer 1 · head 1<br>query ") or "<br>query " in h for h in hovers(en))
    assert "layers" in en.layout.title.text
    from attention_lens.shell.figures import figure_words
    de = maps.figure("cross", words=figure_words("de"))
    assert all("Zeile %{text}<br>Schlüssel %{customdata}<br>Gewicht %{z:.3f}" in h for h in hovers(de))
    assert de.layout.title.text.startswith("Kreuz-Aufmerksamkeit") and "Schichten" in de.layout.title.text
    inside = s.inside("decoder_self", 0, 0).figure(row=1, words=figure_words("de"))
    assert [h.split("<br>")[-1] for h in hovers(inside)] == [
        "Punktzahl %{z:.3f}<extra></extra>", "Gewicht %{z:.3f}<extra></extra>",
        "Anteil am Beitrag %{z:.3f}<extra></extra>"]
    assert any("(verdeckt)" in k for row in inside.data[1].customdata for k in row)  # a future key says so


def test_the_pages_heatmaps_speak_the_users_language(tiny_translator):
    """Across layers' rollout and alignment matrix, the word alignment: German words and ',.' on the German page,
    English and '.,' on the English one."""
    from attention_lens.layers import handlers as layers_handlers
    from attention_lens.translate import attribution as attribution_views
    from attention_lens.translate import handlers as decoding_views
    state = decoding_views.start(tiny_translator, "Ein Hund rennt.")[0]
    s = decoding_views.run(tiny_translator, state)[0]

    def page():
        roll, _lines, matrix = layers_handlers.across_layers(tiny_translator, s)
        words = attribution_views.word_alignment_at(tiny_translator, s, "alti", None)[0]
        return roll, matrix, words

    for lang, (query, key, weight, share), seps in (
            ("de", ("Zeile", "Schlüssel", "Gewicht", "Anteil am Beitrag"), ",."),
            ("en", ("query", "key", "weight", "contribution share"), ".,")):
        for fig, measure in zip(in_page(lang, page), (weight, weight, share)):  # the word alignment's: ALTI+'s share
            (h,) = hovers(fig)
            assert h.startswith(f"{query} %{{text}}<br>{key} %{{customdata}}<br>{measure} %{{z:.3f}}"), (lang, h)
            assert fig.layout.separators == seps, lang

