"""The Head atlas tab in Chromium: every head drawn with its BLEU drop and role; a click opens the head in the
Translate view, whose title then names the head's role."""
import json

import pytest

from tests.browser import open_app, start
from transformer.model.checkpoint import DEFAULT_CHECKPOINT

pytestmark = pytest.mark.browser
ATLAS = json.loads((DEFAULT_CHECKPOINT / "head_atlas.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    yield open_app(b, url)


def test_atlas_draws_every_head_and_a_click_opens_it(page):
    start(page, "Ein Hund rennt durch den Schnee.")
    page.get_by_role("tab", name="Head atlas").click()
    page.wait_for_function("document.getElementById('atlas')?.atlas && "
                           "document.getElementById('atlas')?.atlas.renders > 0", timeout=20000)
    grid = "document.querySelector('#atlas [data-role=grid]')"
    traces = page.evaluate(f"{grid}.data.map(t => ({{z: t.z, text: t.text}}))")
    assert len(traces) == 3
    kinds = ["encoder_self", "decoder_self", "cross"]
    for h in ATLAS["heads"]:
        tr = traces[kinds.index(h["kind"])]
        assert tr["z"][h["layer"]][h["head"]] == pytest.approx(h["bleu_drop"])
        assert tr["text"][h["layer"]][h["head"]] != ""
    summary = page.inner_text("#atlas [data-role=summary]")
    assert f"{len(ATLAS['heads'])} heads" in summary and str(ATLAS["bleu"]) in summary
    head = next(h for h in ATLAS["heads"] if h["kind"] == "cross" and h["layer"] == 2 and h["head"] == 1)
    page.evaluate(f"""{grid}.emit('plotly_click', {{points: [{{customdata: ['cross', 2, 1]}}]}})""")
    page.wait_for_function("document.querySelector('#attention').querySelector('[data-role=title]')"
                           f".textContent.includes('role: {head['role']}')", timeout=20000)
    view = page.evaluate("(() => { const e = document.querySelector('#attention [data-kind]')"
                         ".closest('[data-renders]'); return [e.dataset.kind, e.dataset.layer, e.dataset.head]; })()")
    assert view == ["cross", "2", "1"]
    title = page.inner_text("#attention [data-role=title]")
    assert "layer 3" in title and "head 2" in title
    assert page.errors == []


def test_atlas_hover_legend_and_curve_note_are_words(page):
    """Hover texts name statistics in words, never as JSON fields; the legend lists the rule table; a line says
    why the pruning curve ends where it does."""
    from transformer.train import atlas as A
    page.get_by_role("tab", name="Head atlas").click()
    page.wait_for_function("document.getElementById('atlas')?.atlas && "
                           "document.getElementById('atlas')?.atlas.renders > 0", timeout=20000)
    hovers = page.evaluate("document.querySelector('#atlas [data-role=grid]').data"
                           ".flatMap(t => t.hovertext.flat().filter(x => x))")
    assert len(hovers) == len(ATLAS["heads"])
    for text in hovers:
        assert "_" not in text and "BLEU with this head switched off" in text and "largest weight of a row" in text
    from attention_lens.shell import texts
    legend = A.legend()
    rows = page.eval_on_selector_all("#atlas [data-role=legend] .x-plain tr", "rs => rs.map(r => r.innerText)")
    assert len(rows) == len(legend)  # plainly (issue 39 item 5): each label and what it does in everyday words
    for row, r in zip(rows, legend):
        assert r["label"] in row and texts.text(f"role.{r['role']}") in row and r["rule"] not in row
    assert "stops at" in page.inner_text("#atlas [data-role=note]")
    page.click("#explain_detail")
    try:
        rows = page.eval_on_selector_all("#atlas [data-role=legend] .x-detail tr", "rs => rs.map(r => r.innerText)")
        assert len(rows) == len(legend)  # in detail: the rule table
        for row, r in zip(rows, legend):
            assert r["role"] in row and r["rule"] in row and r["description"] in row
        note = page.inner_text("#atlas [data-role=note]")
        assert note == (A.pruning_stop_text(ATLAS) or "")
        page.wait_for_function("document.querySelector('#atlas [data-role=curve]')"
                               ".layout.title.text.startsWith('Pruning')")
    finally:
        page.click("#explain_plain")
    assert page.errors == []
