"""The real app in headless Chromium: step to EOS, axis labels, grid, forcing, hostile text."""
import os
from pathlib import Path

import pytest

from tests.browser import browser, click, open_app, renders, require_chromium, serve, start, wait_render
from transformer.checkpoint import DEFAULT_CHECKPOINT
from transformer.decoding import Translator
from transformer.figures import label
from tests.conftest import DEVICE

pytestmark = pytest.mark.browser
ASSETS = Path(__file__).resolve().parent.parent / "assets"
SENTENCE = "Eine Frau mit einem roten Hut fährt Fahrrad auf einer belebten Straße."


@pytest.fixture(scope="module")
def translator():
    return Translator.load(DEFAULT_CHECKPOINT, device=DEVICE)


@pytest.fixture(scope="module")
def page(translator):
    require_chromium()
    with serve(translator) as url, browser() as b:
        yield open_app(b, url)


def shot(page, name):
    target = ASSETS if os.environ.get("SCREENSHOTS") else Path(os.environ.get("TMPDIR", "/tmp"))
    page.screenshot(path=str(target / name), full_page=True)


def test_step_to_eos_matches_translate(page, translator):
    start(page, SENTENCE)
    assert page.input_value("#translation textarea") == ""
    for _ in range(60):
        if "finished" in page.inner_text("#attention [data-role=status]"):
            break
        click(page, "#step")
    assert page.input_value("#translation textarea") == translator.translate(SENTENCE)
    chips = page.eval_on_selector_all("#attention .lens-tok", "es => es.map(e => e.textContent)")
    session = translator.start(SENTENCE).run()
    assert chips == session.target_tokens
    assert page.eval_on_selector("#attention .lens-tok.newest", "e => e.textContent") == "</s>"
    shot(page, "screenshot_translate.png")
    assert page.errors == []


def test_axis_labels_are_the_right_pieces(page, translator):
    start(page, SENTENCE)
    click(page, "#step")
    click(page, "#step")
    session = translator.start(SENTENCE)
    session.step(), session.step()
    big = page.evaluate("(() => { const d = document.querySelector('#attention [data-role=big]');"
                        " return {x: d.layout.xaxis.ticktext, y: d.layout.yaxis.ticktext, title: d.layout.title.text,"
                        " z: d.data[0].z}; })()")
    assert "Cross-attention" in big["title"]
    assert big["x"] == [label(p) for p in session.source_tokens]  # cross: columns are source keys
    tgt = [label(p) for p in session.target_tokens]
    nxt = translator.tokenizer.piece(session.positions[-1].greedy)
    assert big["y"] == [f"{a} → {b}" for a, b in zip(tgt, tgt[1:] + [nxt])]  # rows: query → predicted
    import numpy as np
    np.testing.assert_allclose(np.array(big["z"]), session.attention.cross[0, 0], atol=1e-4)


def test_overview_grid_and_panel_click(page, translator):
    start(page, SENTENCE)
    L, H = translator.config.n_decoder_layers, translator.config.n_heads
    grid = "document.querySelector('#attention [data-role=grid]')"
    S = len(translator.source_ids(SENTENCE))
    assert page.evaluate(f"{grid}.layout.meta.panels") == L * H
    assert page.evaluate(f"[{grid}.data[0].z.length, {grid}.data[0].z[0].length]") == [L * 2 - 1, H * (S + 1) - 1]
    for kind, layers in (("encoder_self", translator.config.n_encoder_layers), ("decoder_self", L)):
        n = renders(page)
        page.click(f"#attention [data-kind={kind}]")
        wait_render(page, n)
        assert page.evaluate(f"{grid}.layout.meta.panels") == layers * H
    # encoder self-attention: both axes are the source pieces
    n = renders(page)
    page.click("#attention [data-kind=encoder_self]")
    wait_render(page, n)
    big = page.evaluate("(() => { const l = document.querySelector('#attention [data-role=big]').layout;"
                        " return {x: l.xaxis.ticktext, y: l.yaxis.ticktext}; })()")
    src = [label(p) for p in translator.tokenizer.pieces(translator.source_ids(SENTENCE))]
    assert big["x"] == src and big["y"] == src
    page.click("#attention [data-kind=cross]")
    # click the panel of the last layer, last head: the big view follows
    n = renders(page)
    page.evaluate("""(() => { const g = document.querySelector('#attention [data-role=grid]'), m = g.layout.meta;
        g.emit('plotly_click', {points: [{x: (m.heads - 1) * (m.S + 1) + 1, y: (m.layers - 1) * (m.T + 1)}]}); })()""")
    wait_render(page, n)
    title = page.evaluate("document.querySelector('#attention [data-role=big]').layout.title.text")
    assert f"layer {L}" in title and f"head {H}" in title
    shot(page, "screenshot_grid.png")


def test_mean_and_hide_specials(page):
    start(page, SENTENCE)
    n = renders(page)
    page.select_option("#attention [data-role=head]", "mean")
    wait_render(page, n)
    assert "mean of heads" in page.evaluate("document.querySelector('#attention [data-role=big]').layout.title.text")
    n = renders(page)
    page.check("#attention [data-role=hide]")
    wait_render(page, n)
    big = page.evaluate("(() => { const d = document.querySelector('#attention [data-role=big]');"
                        " return {x: d.layout.xaxis.ticktext, z: d.data[0].z}; })()")
    assert "&lt;/s&gt;" not in big["x"] and "</s>" not in big["x"]
    for row in big["z"]:
        assert abs(sum(row) - 1) < 1e-3
    page.uncheck("#attention [data-role=hide]")
    page.select_option("#attention [data-role=head]", "0")


def test_forcing_a_topk_piece_changes_the_continuation(page, translator):
    start(page, SENTENCE)
    buttons = page.eval_on_selector_all("#topk .topk-list button", "es => es.map(e => e.dataset.piece)")
    assert len(buttons) == 8
    alt = buttons[1]
    n = renders(page)
    page.click("#topk .topk-list button:nth-child(2)")
    wait_render(page, n)
    chips = page.eval_on_selector_all("#attention .lens-tok", "es => es.map(e => e.textContent)")
    assert chips == ["<s>", alt]
    assert page.eval_on_selector("#attention .lens-tok.forced", "e => e.textContent") == alt
    click(page, "#run")
    forced = translator.start(SENTENCE)
    forced.force(alt)
    forced.run()
    assert page.input_value("#translation textarea") == forced.translation != translator.translate(SENTENCE)
    click(page, "#reset")
    assert page.eval_on_selector_all("#attention .lens-tok", "es => es.length") == 1


HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> **bold** $x$ %{y}'


def test_hostile_text_is_shown_literally_and_runs_nothing(page, translator):
    start(page, HOSTILE)
    click(page, "#run")
    assert page.evaluate("window.__pwned === undefined")
    session = translator.start(HOSTILE).run()
    chips = page.eval_on_selector_all("#attention .lens-tok", "es => es.map(e => e.textContent)")
    assert chips == session.target_tokens  # shown as text, exactly
    src = page.evaluate("document.querySelector('#attention [data-role=big]').layout.xaxis.ticktext")
    assert src == [label(p) for p in session.source_tokens]  # escaped before Plotly sees it
    assert any("&lt;" in p for p in src)
    assert page.query_selector("#attention img") is None and page.query_selector("#topk img") is None
    assert page.errors == []


def test_empty_input_shows_a_message_and_app_keeps_working(page, translator):
    page.fill("#source textarea", "   ")
    page.click("#start")
    page.wait_for_selector("text=input is empty", timeout=10000)
    page.click("[data-testid=toast-close]")  # the message can be dismissed, and leaves later tests' pages clean
    page.wait_for_selector("text=input is empty", state="detached", timeout=10000)
    start(page, "Ein Hund rennt durch den Schnee.")
    click(page, "#run")
    assert page.input_value("#translation textarea") == translator.translate("Ein Hund rennt durch den Schnee.")


def open_tab(page, name):
    page.get_by_role("tab", name=name).click()


def view_renders(page, view_id) -> int:
    return int(page.evaluate(f"(window.__lensViews && window.__lensViews['{view_id}'] || {{renders: 0}}).renders"))


def test_word_toggle_and_export_buttons(page, translator):
    start(page, SENTENCE)
    click(page, "#run")
    n = renders(page)
    page.check("#words input")
    wait_render(page, n)
    chips = page.eval_on_selector_all("#attention .lens-tok", "es => es.map(e => e.textContent)")
    assert chips[0] == "<s>" and not any(c.startswith("▁") for c in chips)
    assert " ".join(chips[1:-1]) == translator.translate(SENTENCE)
    n = renders(page)
    page.uncheck("#words input")
    wait_render(page, n)
    with page.expect_download() as d:
        page.click("#attention [data-role=html]")
    html = open(d.value.path(), encoding="utf-8").read()
    assert html.startswith("<!doctype html>") and "Plotly.newPlot" in html and len(html) > 500_000
    with page.expect_download() as d:
        page.click("#attention [data-role=png]")
    assert open(d.value.path(), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    page.get_by_text("Export the maps").click()
    page.click("#export")
    page.wait_for_function("document.querySelector('#export_files').innerText.includes('.npz')", timeout=20000)
    text = page.inner_text("#export_files")
    assert "attention_step" in text and ".npz" in text and ".json" in text


def test_ablation_beam_layers_and_learned_tabs(page, translator):
    start(page, SENTENCE)
    click(page, "#run")
    open_tab(page, "Head ablation")
    for lab in ("L3 H1", "L3 H2", "L3 H3", "L3 H4"):
        page.locator("#ablate_cross").get_by_label(lab).check()
    n = view_renders(page, "attention_ablated")
    page.click("#ablate_run")
    page.wait_for_function(f"window.__lensViews['attention_ablated'] && window.__lensViews['attention_ablated'].renders > {n}",
                           timeout=30000)
    heads = [("cross", 2, h) for h in range(translator.config.n_heads)]
    assert page.input_value("#intact_translation textarea") == translator.translate(SENTENCE)
    assert page.input_value("#ablated_translation textarea") == translator.start(SENTENCE, ablate=heads).run().translation
    shot(page, "screenshot_ablation.png")

    open_tab(page, "Beam search")
    n = view_renders(page, "attention_beam")
    page.click("#beam_run")
    page.wait_for_function(f"window.__lensViews['attention_beam'] && window.__lensViews['attention_beam'].renders > {n}",
                           timeout=30000)
    page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=20000)
    from transformer.beam import beam_search
    best = beam_search(translator.model, translator.source_ids(SENTENCE), 4).hypotheses[0]
    chips = page.eval_on_selector_all("#attention_beam .lens-tok", "es => es.map(e => e.textContent)")
    assert chips == translator.tokenizer.pieces([translator.config.bos_id] + best.ids)
    shot(page, "screenshot_beam.png")

    open_tab(page, "Across layers")
    page.click("#layers_run")
    page.wait_for_selector("#align_lines .js-plotly-plot", timeout=20000)
    page.wait_for_selector("#rollout .js-plotly-plot", timeout=20000)
    shot(page, "screenshot_layers.png")

    open_tab(page, "Attention being learned")
    page.wait_for_selector("#learned_plot .js-plotly-plot", timeout=20000)
    assert page.input_value("#learned_translation textarea") != ""
    shot(page, "screenshot_learned.png")
    open_tab(page, "Translate")
