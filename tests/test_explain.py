"""Explanations where a newcomer stopped (issue 22, items 10, 13-15): the Python side. The browser side is in
tests/test_explain_browser.py."""
from transformer.figures import row_labels


# -- 10: the row of </s> once the sentence has finished ----------------------------------------------------

def test_row_labels_name_the_finished_row():
    # labels are escaped for Plotly
    assert row_labels(["<s>", "\u2581A", "</s>"]) == ["&lt;s&gt; → \u2581A", "\u2581A → &lt;/s&gt;",
                                                     "&lt;/s&gt; → (finished)"]
    assert row_labels(["<s>", "\u2581A"])[-1] == "\u2581A → ?"  # the next piece is not known
    assert row_labels(["<s>", "\u2581A"], "\u2581dog")[-1] == "\u2581A → \u2581dog"


# -- 13: the beam tree counts ranks from 1, like the hypotheses ---------------------------------------------

def test_beam_tree_ranks_count_from_one():
    from tests.conftest import small_model
    from transformer.beam import beam_search
    from ui.figures import beam_tree_figure
    result = beam_search(small_model(vocab=30), [5, 6, 7, 3], 3, max_new=5)
    fig = beam_tree_figure(result, lambda i: f"p{i}", highlight_path=result.best.path)
    nodes = [t for t in fig["data"] if t["mode"] == "markers+text"]
    ys = [y for t in nodes for y in t["y"]]
    assert min(ys) == 1 and max(ys) == max(len(n) for n in result.tree)  # 1 = best, up to the most kept at a step
    assert "1 = best" in fig["layout"]["yaxis"]["title"]["text"]
    assert all(f"rank {y}<br>" in h for t in nodes for y, h in zip(t["y"], t["hovertext"]))
    assert fig["data"][1]["y"][0] == 1  # the chosen path starts at the root, rank 1
