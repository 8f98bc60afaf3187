"""A Hugging Face T5 in every view beside Translate, in Chromium, in one page session: picked from the model picker,
stepped (its own pieces), Inside this head (its step ② adds the position bias: no ÷√d_k), Compare (both sentences its
pieces), Head ablation (the intact and the ablated translation its own), Beam search (the best hypothesis drawn),
Across layers (its source's pieces), and a live class whose student's page switches to it and follows the teacher. No
page error anywhere. The tiny T5 is built here (tests/hf_models.py); skipped where transformers is not installed,
except in CI."""
from __future__ import annotations

import html

import pytest

from tests.browser import (
    browser,
    chips,
    choose,
    go,
    model_label,
    open_app,
    require_chromium,
    serve,
    start,
    tab_button,
)
from tests.hf_models import need_transformers

need_transformers()

pytestmark = pytest.mark.browser
SENTENCE = "Der Hund schläft im Garten."
HEADS = [("cross", 0, h) for h in range(4)]  # the first cross-attention layer's four heads, ticked in the tab


@pytest.fixture(scope="module")
def models(tiny_trained, tmp_path_factory):
    from tests.hf_models import t5_folder
    from transformer.decode.decoding import Translator
    from transformer.hf import load_hf
    return [Translator.load(tiny_trained, "cpu"), load_hf(t5_folder(tmp_path_factory.mktemp("t5") / "t5-de-en"), "cpu")]


def renders(page, elem_id: str) -> int:
    return page.evaluate(f"document.getElementById('{elem_id}')?.lens?.renders || 0")


def redrawn(page, elem_id: str, before: int):
    page.wait_for_function(f"document.getElementById('{elem_id}')?.lens?.renders > {before}", timeout=60000)


def test_a_t5_draws_in_every_view_and_a_class_follows_it(models):
    from attention_lens.compare.tab import PAIRS
    from attention_lens.shell.models import direction_label
    from transformer.decode.beam import beam_search
    t5 = models[1]
    label = direction_label(t5)
    assert label.startswith("German → English · t5")
    require_chromium()
    with serve(models) as url, browser() as b:
        page = open_app(b, url, 1280, 800)
        assert model_label(page) == "German → English"  # ours first
        choose(page, "model", label)
        page.wait_for_function(f"document.querySelector('#model input').value === {label!r}", timeout=20000)

        start(page, SENTENCE)  # Translate and Inside
        go(page, 3)
        s = t5.start(SENTENCE)
        for _ in range(3):
            s.step()
        assert chips(page) == s.target_tokens  # T5's own pieces, its <pad> start included
        page.wait_for_function("document.getElementById('inside')?.inside?.ready()", timeout=60000)
        assert page.eval_on_selector_all("#inside tbody tr", "rs => rs.length") == len(s.source_ids)
        page.click("#inside button[data-stage='2']")  # T5 adds a position bias and does not divide by √d_k
        assert "distance" in page.inner_text("#inside [data-role=note]")
        assert page.inner_text("#inside [data-role=scaledhead]") == "score plus distance"
        assert "scores + position_bias" in page.inner_text("#inside [data-role=code] [data-line='2']")
        assert page.eval_on_selector_all("#inside .inside-formula [data-text], #inside button[data-stage='2'] "
                                         "[data-text]", "es => es.map(e => e.dataset.text)") == \
            ["inside.formula_bias", "inside.b2_bias"]

        page.click(tab_button("Compare"))  # both sentences decoded by T5
        a, b2, _ = PAIRS["de"][0]
        page.wait_for_function(f"document.querySelector('#compare_a textarea')?.value === {a!r}", timeout=20000)
        seq = page.evaluate("document.getElementById('compare')?.compare.renders")
        page.click("#compare_start")
        page.wait_for_function(f"document.getElementById('compare')?.compare.view() !== null && "
                               f"document.getElementById('compare')?.compare.renders > {seq}", timeout=60000)
        got = page.evaluate("[document.getElementById('compare')?.compare.state.a.source, "
                            "document.getElementById('compare')?.compare.state.b.source]")
        assert got == [t5.tokenizer.pieces(t5.source_ids(x)) for x in (a, b2)]

        page.click(tab_button("Head ablation"))  # at the Translate tab's step 3
        for h in range(4):
            page.locator("#ablate_cross").get_by_label(f"L1 H{h + 1}").check()
        n = renders(page, "attention_ablated")
        page.click("#ablate_run")
        redrawn(page, "attention_ablated", n)
        assert page.input_value("#intact_translation textarea") == t5.translate(SENTENCE)
        ablated = t5.start(SENTENCE, ablate=HEADS).run().translation
        assert page.input_value("#ablated_translation textarea") == ablated != t5.translate(SENTENCE)

        page.click(tab_button("Beam search"))
        n = renders(page, "attention_beam")
        page.click("#beam_run")
        redrawn(page, "attention_beam", n)
        page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=30000)
        best = beam_search(t5.model, t5.source_ids(SENTENCE), 4).hypotheses[0]
        assert chips(page, "attention_beam") == t5.tokenizer.pieces([t5.config.bos_id] + best.ids)

        page.click(tab_button("Across layers"))  # draws by itself when shown
        page.wait_for_selector("#align_matrix .js-plotly-plot", timeout=60000)
        ticks = page.evaluate("document.querySelector('#align_matrix .js-plotly-plot').layout.xaxis.ticktext")
        assert [html.unescape(t) for t in ticks] == s.source_tokens  # the plot's labels are HTML: &lt;/s&gt;

        page.click(tab_button("Translate"))  # a live class: the student's page switches to T5 and follows
        page.click("#class_start")
        page.wait_for_function("document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
        student = b.new_context(viewport={"width": 1280, "height": 800}).new_page()
        student.errors = []
        student.on("pageerror", lambda e: student.errors.append(str(e)))
        student.goto(page.input_value("#class_link"), timeout=90000)
        student.wait_for_function(f"document.querySelector('#model input')?.value === {label!r} && "
                                  "window.__lens?.state.t === 3 && window.__lens.state.doc", timeout=60000)
        assert chips(student) == s.target_tokens
        go(page, 2)
        student.wait_for_function("window.__lens.state.t === 2", timeout=30000)
        assert chips(student) == s.target_tokens[:3]
        assert page.errors == [] and student.errors == []
