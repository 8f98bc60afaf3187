"""Explanations where a newcomer stopped (issue 22, items 10, 13-15): the Python side. The browser side is in
tests/test_explain_browser.py."""
import gradio as gr
import pytest

from attention_lens.learned import help as learned_help
from transformer.interpret.figures import row_labels

# -- 10: the row of </s> once the sentence has finished ----------------------------------------------------

def test_row_labels_name_the_finished_row():
    # labels are escaped for Plotly
    assert row_labels(["<s>", "\u2581A", "</s>"]) == ["&lt;s&gt; → \u2581A", "\u2581A → &lt;/s&gt;",
                                                     "&lt;/s&gt; → (finished)"]
    assert row_labels(["<s>", "\u2581A"])[-1] == "\u2581A → ?"  # the next piece is not known
    assert row_labels(["<s>", "\u2581A"], "\u2581dog")[-1] == "\u2581A → \u2581dog"


# -- 13: the beam tree counts ranks from 1, like the hypotheses ---------------------------------------------

def test_beam_tree_ranks_count_from_one():
    from attention_lens.beam.figures import beam_tree_figure
    from tests.conftest import small_model
    from transformer.decode.beam import beam_search
    result = beam_search(small_model(vocab=30), [5, 6, 7, 3], 3, max_new=5)
    fig = beam_tree_figure(result, lambda i: f"p{i}", highlight_path=result.best.path)
    nodes = [t for t in fig["data"] if t["mode"] == "markers+text"]
    ys = [y for t in nodes for y in t["y"]]
    assert min(ys) == 1 and max(ys) == max(len(n) for n in result.tree)  # 1 = best, up to the most kept at a step
    assert "1 is the best" in fig["layout"]["yaxis"]["title"]["text"]
    assert all(f"rank {y}<br>" in h for t in nodes for y, h in zip(t["y"], t["hovertext"]))
    assert fig["data"][1]["y"][0] == 1  # the chosen path starts at the root, rank 1


# -- 15: the points the attention history recorded, said in words ------------------------------------------

def test_describe_epoch():
    from transformer.interpret.history import describe_epoch
    assert describe_epoch(0) == "before training"
    assert describe_epoch(0.02) == "2 % into epoch 1" and describe_epoch(0.25) == "25 % into epoch 1"
    assert describe_epoch(1) == "after epoch 1" and describe_epoch(3.0) == "after epoch 3"
    assert describe_epoch(2.5) == "50 % into epoch 3"


EARLY = [0, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 3]  # what transformer.train.train records now (EARLY_SNAPSHOTS)


def write_history(path, tok, epochs, sentences=("Ein Hund rennt.", "Zwei Katzen schlafen."), say=lambda e: f"dog {e}"):
    import numpy as np

    from transformer.interpret.history import save_history
    rng = np.random.default_rng(0)
    hist = []
    for e in epochs:
        snap = []
        for text in sentences:
            tgt = [tok.bos_id] + tok.encode(say(e)) + [tok.eos_id]
            w = rng.random((2, 3, len(tgt), len(tok.encode(text)) + 1))
            snap.append((tgt, (w / w.sum(-1, keepdims=True)).astype(np.float16)))
        hist.append({"epoch": e, "snap": snap})
    save_history(path, list(sentences), tok, hist)


def learned_tab(checkpoint_dir):
    """The Attention being learned tab built on its own and filled for a checkpoint directory holding only a
    history (the tab is one set of components that `content(translator)` fills): each component as the page shows
    it (its value, visibility, range, ...) by elem_id."""
    from types import SimpleNamespace

    import gradio as gr

    from attention_lens.learned import tab
    config = SimpleNamespace(n_heads=3, n_encoder_layers=2, n_decoder_layers=2)
    tr = SimpleNamespace(checkpoint_dir=checkpoint_dir, model=SimpleNamespace(decoder=[None, None], config=config),
                         config=config)
    with gr.Blocks() as demo:
        _, content = tab.build(SimpleNamespace(tr=tr, models=None, model=gr.Textbox()))
    by_id = {}
    for c, update in content(tr).items():  # {component: value}
        shown = {k: getattr(c, k) for k in ("minimum", "maximum", "step", "value", "visible") if hasattr(c, k)}
        shown |= ({k: v for k, v in update.items() if k != "__type__"} if isinstance(update, dict)
                  else {"value": update})
        by_id[c.elem_id] = SimpleNamespace(**shown)
    return demo, by_id


def test_learned_tab_steps_over_the_recorded_points(tmp_path, tiny_tok):
    import numpy as np

    from attention_lens.learned import handlers as learned_handlers
    from transformer.interpret.history import HISTORY, AttentionHistory
    write_history(tmp_path / HISTORY, tiny_tok, EARLY)
    history = AttentionHistory.load(tmp_path / HISTORY)
    assert history.epochs == EARLY
    _, c = learned_tab(tmp_path)
    slider = c["learned_epoch"]
    assert (slider.minimum, slider.maximum, slider.step, slider.value) == (1, len(EARLY), 1, len(EARLY))
    assert "before training" in c["learned_intro"].value and "inside epoch 1" in c["learned_intro"].value
    for epoch, words, plain in [(0, "before training", "before training"),
                                (0.02, "2 % into epoch 1", "2 % into pass 1 over the data"),
                                (3, "after epoch 3", "after 3 passes over the data")]:
        i = EARLY.index(epoch) + 1  # snapshots are numbered from 1
        fig, text, point = learned_handlers.learned_at(history, 1, i)
        assert words in point and plain in point and f"Snapshot {i} of {len(EARLY)}" in point
        assert fig.layout.title.text == f"Cross-attention {plain}"  # as the page's line says it by default
        np.testing.assert_allclose(np.array(fig.data[0].z), history.cross(1, epoch).mean((0, 1)), atol=1e-4)
        pieces = (p for p in history.target(1, epoch) if p not in ("<s>", "</s>"))
        assert text == "".join(pieces).replace("▁", " ").strip()
    for bad in (0, len(EARLY) + 1, 1.5, "1", None, True):
        with pytest.raises(gr.Error):
            learned_handlers.learned_at(history, 0, bad)


def test_the_learned_line_is_said_in_each_pages_language(tmp_path, tiny_tok):
    """Each language's division of the snapshot's line is in that language, the detailed one's '(what the point is)' and
    learned_help's sentences on an output that is no translation (here: nothing at all) (they were English on the German
    page)."""
    import re

    from attention_lens.learned import handlers as learned_handlers
    from transformer.decode import language
    from transformer.interpret.history import HISTORY, AttentionHistory
    write_history(tmp_path / HISTORY, tiny_tok, EARLY, say=lambda e: "")
    history = AttentionHistory.load(tmp_path / HISTORY)
    for i, (de, en) in enumerate([("vor dem ersten Trainingsschritt", "before any training step"),
                                  ("mitten im Durchgang 1", "partway through pass 1"),
                                  ("3 vollständige Durchgänge", "3 full passes")]):
        point = learned_handlers.learned_at(history, 1, EARLY.index([0, 0.02, 3][i]) + 1)[2]
        part = {(m, l): t for m, l, t in re.findall(r'<div class="x-(\w+) l-(\w+)" lang="\w+">(.*?)</div>', point,
                                                    re.DOTALL)}
        assert de in part["detail", "de"] and en in part["detail", "en"] and en not in part["detail", "de"]
        for mode in ("plain", "detail"):
            told = learned_help.explain(history, 1, [0, 0.02, 3][i], None, mode, "de")
            assert told, "the output is empty: learned_help explains it"
            assert told[1].split(".")[0][:30] in part[mode, "de"]
            assert language.detect(part[mode, "de"])[0] == "de", part[mode, "de"]


def test_the_learned_tabs_heatmap_speaks_the_users_language(tmp_path, tiny_tok):
    """Its hovers' words (transformer/interpret/figures.py's, passed in the user's page's language) and the page's
    separators (tests/test_figure_words.py for the other tabs)."""
    from types import SimpleNamespace

    from gradio.context import LocalContext

    from attention_lens.learned import handlers as learned_handlers
    from attention_lens.shell.texts import LANG_COOKIE
    from transformer.interpret.history import HISTORY, AttentionHistory
    write_history(tmp_path / HISTORY, tiny_tok, EARLY)
    history = AttentionHistory.load(tmp_path / HISTORY)
    for lang, start, seps in (("de", "Zeile %{text}<br>Schlüssel %{customdata}<br>Gewicht %{z:.3f}", ",."),
                              ("en", "query %{text}<br>key %{customdata}<br>weight %{z:.3f}", ".,")):
        token = LocalContext.request.set(SimpleNamespace(request=SimpleNamespace(
            cookies={LANG_COOKIE: lang}, headers={"accept-language": ""})))
        try:
            fig, _, point = learned_handlers.learned_at(history, 1, len(EARLY))
        finally:
            LocalContext.request.reset(token)
        assert fig.data[0].hovertemplate.startswith(start) and fig.layout.separators == seps, lang
        # the title names the point in the plain words of the line above it (not "nach Epoche 3" under "3 Runden")
        passes = {"de": "nach 3 Runden durch die Daten", "en": "after 3 passes over the data"}[lang]
        assert fig.layout.title.text.endswith(passes) and passes in point, (lang, fig.layout.title.text)


def test_learned_tab_with_whole_epochs_only(tmp_path, tiny_tok):
    """A history of whole epochs (the shipped one has 1..19) still works: the slider's first point is epoch 1,
    and the intro says that the untrained model is not in it."""
    from attention_lens.learned import handlers as learned_handlers
    from transformer.interpret.history import HISTORY, AttentionHistory
    write_history(tmp_path / HISTORY, tiny_tok, [1, 2, 3, 4])
    _, c = learned_tab(tmp_path)
    assert (c["learned_epoch"].minimum, c["learned_epoch"].maximum) == (1, 4)
    assert "after every epoch" in c["learned_intro"].value and "starts after epoch 1" in c["learned_intro"].value
    fig, _, point = learned_handlers.learned_at(AttentionHistory.load(tmp_path / HISTORY), 0, 1)
    assert "after epoch 1" in point and fig.layout.title.text == "Cross-attention after 1 pass over the data"


def test_learned_tab_with_one_point(tmp_path, tiny_tok):
    from transformer.interpret.history import HISTORY
    write_history(tmp_path / HISTORY, tiny_tok, [0])
    _, c = learned_tab(tmp_path)
    assert c["learned_epoch"].visible is False and c["learned_epoch"].value == 1
    assert "before training" in c["learned_intro"].value


# -- 11: the payload names the heads switched off, for the view to grey them ----------------------------------

def test_ablated_payload_names_the_heads(tiny_translator):
    from attention_lens.ablation import handlers as ablation_handlers
    from attention_lens.translate import handlers as decoding_views
    from attention_lens.translate.payload import session_payload
    tr = tiny_translator
    session = decoding_views.start(tr, "ein hund", 4)[0]
    labels = ["L1 H2", "L2 H1"]
    out = ablation_handlers.ablate(tr, session, [], [], labels, 4)
    assert out[4]["ablated"] == [["cross", 0, 1], ["cross", 1, 0]]
    assert "ablated" not in session_payload(tr.start("ein hund").view())


def test_beam_hypotheses_say_what_normalised_means(tiny_translator):
    from attention_lens.beam import handlers as beam_handlers
    from transformer.decode.beam import beam_search
    tr, text = tiny_translator, "ein hund"
    out = beam_handlers.beam(tr, text, 3)
    labels = out[2]["choices"]
    labels = [c[0] if isinstance(c, (list, tuple)) else c for c in labels]
    hyps = beam_search(tr.model, tr.source_ids(text), 3).hypotheses
    assert len(labels) == len(hyps)
    for i, (label, hyp) in enumerate(zip(labels, hyps)):
        assert label.startswith(f"{i + 1}. ")
        assert f"log-prob {hyp.score:.2f} / {len(hyp.ids)} pieces = {hyp.normalized:.3f} per piece" in label


# -- 14: why training loss is above validation loss --------------------------------------------------------

def test_curves_note_says_why_training_loss_is_higher():
    from attention_lens.model.tab import curves_note
    log = {"args": {"dropout": 0.15, "label_smoothing": 0.1}, "epochs": [{"epoch": 1}]}
    note = curves_note(log)
    assert "dropout" in note and "0.15" in note and "label smoothing" in note and "0.1" in note
    assert "validation" in note.lower()
    bare = curves_note({"epochs": [{"epoch": 1}]})  # an old log without its arguments: no numbers made up
    assert "dropout" in bare and "label smoothing" in bare and "0.1" not in bare
