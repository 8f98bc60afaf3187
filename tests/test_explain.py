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
