"""The real app in headless Chromium: Start sends the whole trajectory, stepping is local (works with the
server unreachable), maps at every step equal the Python session's, labels, grid, forcing, hostile text."""
import os
from pathlib import Path

import numpy as np
import pytest

from tests.browser import (
    chips,
    click,
    go,
    open_app,
    pick,
    renders,
    settings,
    start,
    step_no,
    stepped,
    view,
    wait_render,
)
from transformer.interpret import analysis

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"  # the README's pictures
SENTENCE = "Eine Frau mit einem roten Hut fährt Fahrrad auf einer belebten Straße."
ATOL = 2e-5  # the payload's uint16 resolution (1.5e-5) plus float32 rounding


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    yield open_app(b, url)


def shot(page, name, full_page=True):
    target = SCREENSHOTS if os.environ.get("SCREENSHOTS") else Path(os.environ.get("TMPDIR", "/tmp"))
    page.screenshot(path=str(target / name), full_page=full_page)



def test_step_to_eos_matches_translate(page, translator):
    start(page, SENTENCE)
    assert page.input_value("#translation textarea") == ""
    session = translator.start(SENTENCE).run()
    for t in range(1, 60):
        click(page, "#step")
        if t == 4:
            shot(page, "screenshot_translate.png")  # mid-sentence
        if "finished" in page.inner_text("#attention [data-role=status]"):
            break
    assert step_no(page) == len(session.positions) - 1
    assert page.input_value("#translation textarea") == translator.translate(SENTENCE)
    assert chips(page) == session.target_tokens
    assert page.eval_on_selector("#attention .lens-tok.newest", "e => e.textContent") == "</s>"
    assert page.evaluate("document.querySelector('#attention [data-role=scrub]').value") == str(step_no(page))
    assert page.errors == []


def test_steps_need_no_server(page, translator):
    """After Start the server may as well be gone: Step, Back, the slider, the keys and Play still work."""
    start(page, SENTENCE)
    settings(page)  # the k slider and the word toggle: their code comes when their fold first opens
    last = len(translator.start(SENTENCE).run().positions) - 1
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.route("**/*", lambda r: r.abort())
    try:
        for _ in range(3):
            click(page, "#step")
        click(page, "#back")
        assert step_no(page) == 2
        assert page.input_value("#translation textarea") == stepped(translator, SENTENCE, 2).translation
        go(page, 5)
        page.focus("#attention .lens")
        for key, want in (("ArrowRight", 6), ("ArrowLeft", 5), ("End", last), ("Home", 0), ("ArrowRight", 1)):
            n = renders(page)
            page.keyboard.press(key)
            wait_render(page, n)
            assert step_no(page) == want, key
        page.select_option("#attention [data-role=speed]", value="100")
        page.click("#attention [data-role=play]")
        page.wait_for_function(f"window.__lens.state.t === {last} && !window.__lens.state.timer", timeout=20000)
        assert page.input_value("#translation textarea") == translator.translate(SENTENCE)
        click(page, "#reset")
        assert step_no(page) == 0 and chips(page) == ["<s>"]
        click(page, "#run")
        assert page.input_value("#translation textarea") == translator.translate(SENTENCE)
        assert chips(page) == translator.start(SENTENCE).run().target_tokens
        go(page, 2)  # the k slider and the word toggle act locally too
        page.locator("#k input[type=range]").fill("3")
        page.wait_for_function("document.querySelectorAll('#topk .topk-list button').length === 3", timeout=10000)
        pieces = page.eval_on_selector_all("#topk .topk-list button", "es => es.map(e => e.dataset.piece)")
        assert pieces == [p for p, _ in stepped(translator, SENTENCE, 2).topk(3)]
        n = renders(page)
        page.check("#words input")
        wait_render(page, n)
        maps = stepped(translator, SENTENCE, 2).attention
        assert chips(page) == analysis.word_labels(maps.target_tokens, analysis.word_spans(maps.target_tokens))
        n = renders(page)
        page.uncheck("#words input")
        wait_render(page, n)
        page.locator("#k input[type=range]").fill("8")
        page.wait_for_function("document.querySelectorAll('#topk .topk-list button').length === 8", timeout=10000)
    finally:
        page.unroute("**/*")
    assert sent == []
    assert page.errors == []


def test_maps_at_every_kind_and_several_steps_equal_the_session(page, translator):
    start(page, SENTENCE)
    last = len(translator.start(SENTENCE).run().positions) - 1
    L, H = translator.config.n_decoder_layers, translator.config.n_heads
    for t in (0, 3, last):
        go(page, t)
        s = stepped(translator, SENTENCE, t)
        maps = s.attention
        tgt = s.target_tokens
        nxt = None if s.done else translator.tokenizer.piece(s.positions[t].greedy)
        end = "(finished)" if tgt[-1] == "</s>" else "(stopped)"  # the last row once decoding has stopped
        rows = [f"{a} → {b}" for a, b in zip(tgt, tgt[1:] + [nxt if nxt is not None else end])]
        for kind, layer, head in (("cross", 0, 0), ("cross", L - 1, H - 1), ("decoder_self", 1, 2),
                                  ("encoder_self", 2, 1), ("cross", 1, "mean")):
            pick(page, kind, layer, head)
            v = view(page)
            want = maps[kind][layer].mean(0) if head == "mean" else maps[kind][layer, head]
            np.testing.assert_allclose(np.array(v["z"]), want, atol=ATOL, err_msg=f"{kind} {layer} {head} step {t}")
            if kind == "encoder_self":
                assert v["x"] == v["y"] == s.source_tokens
            else:
                assert v["y"] == rows and v["row"] == t  # rows: query → the piece it predicts; box on row t
                assert v["x"] == (tgt if kind == "decoder_self" else s.source_tokens)
            assert (kind == "cross") == v["title"].startswith("Cross-attention")
    pick(page, "cross", 0, 0)
    # the labels on the page are the same pieces, as text
    xs = page.eval_on_selector_all("#attention [data-role=xlabels] span", "es => es.map(e => e.textContent)")
    assert xs == translator.tokenizer.pieces(translator.source_ids(SENTENCE))


CANVASES = ("[...document.querySelectorAll('#attention [data-role=canvas], #attention [data-role=grid-canvas]')]"
            ".map(c => c.toDataURL())")


def test_a_step_paints_what_a_full_redraw_paints(page, translator):
    """A step repaints only the rows (and decoder key columns) that appeared or went: the canvases must end up
    exactly as a redraw from scratch would paint them, whichever way the steps went."""
    start(page, SENTENCE)
    for kind, hide in (("cross", False), ("decoder_self", True), ("encoder_self", False)):
        pick(page, kind)
        if hide:
            page.check("#attention [data-role=hide]")
        repaints, path = page.evaluate("window.__lens.repaints"), (4, 5, 2, 9, 8, 0, 6, 7, 6)
        for t in path:
            go(page, t)
            before = page.evaluate(CANVASES)
            n = renders(page)
            page.evaluate("window.__lens.redraw()")
            wait_render(page, n)
            assert page.evaluate(CANVASES) == before, f"{kind}: step to {t}"
        assert page.evaluate("window.__lens.repaints") - repaints < 4 * len(path)  # some steps were partial
        if hide:
            page.uncheck("#attention [data-role=hide]")
    pick(page, "cross", 0, 0)


def test_overview_grid_and_panel_click(page, translator):
    start(page, SENTENCE)
    go(page, 2)
    L, H = translator.config.n_decoder_layers, translator.config.n_heads
    S = len(translator.source_ids(SENTENCE))
    g = page.evaluate("window.__lens.grid()")
    assert (g["panels"], g["rows"], g["cols"]) == (L * H, 3, S)
    for kind, layers in (("encoder_self", translator.config.n_encoder_layers), ("decoder_self", L), ("cross", L)):
        pick(page, kind)
        g = page.evaluate("window.__lens.grid()")
        assert g["kind"] == kind and g["panels"] == layers * H
    # click the panel of the last layer, last head: the big view follows
    page.locator("#attention [data-role=grid-canvas]").scroll_into_view_if_needed()
    pt = page.evaluate(f"window.__lens.panelPoint({L - 1}, {H - 1})")
    n = renders(page)
    page.mouse.click(pt["x"], pt["y"])
    wait_render(page, n)
    title = view(page)["title"]
    assert f"layer {L}" in title and f"head {H}" in title
    # hovering a cell names layer, head, query, key and weight
    page.mouse.move(pt["x"], pt["y"])
    tip = page.inner_text("#attention [data-role=tip]")
    assert f"layer {L} · head {H}" in tip and "weight" in tip
    shot(page, "screenshot_grid.png")
    pick(page, "cross", 0, 0)


def test_mean_and_hide_specials(page, translator):
    start(page, SENTENCE)
    go(page, 3)
    pick(page, "cross", 0, "mean")
    assert "mean of heads" in view(page)["title"]
    n = renders(page)
    page.check("#attention [data-role=hide]")
    wait_render(page, n)
    for kind in ("cross", "decoder_self"):
        pick(page, kind)
        v = view(page)
        assert "</s>" not in v["x"] and "<s>" not in v["x"]
        sums = [sum(row) for row in v["z"]]
        if kind == "decoder_self":  # the query <s> sees only <s>: no key is left of its row
            assert v["nokeys"][0] and sums[0] == 0
            sums = sums[1:]
        assert all(abs(x - 1) < 1e-3 for x in sums)
    page.uncheck("#attention [data-role=hide]")
    pick(page, "cross", 0, 0)


def test_forcing_a_topk_piece_changes_the_continuation(page, translator):
    start(page, SENTENCE)
    go(page, 2)
    buttons = page.eval_on_selector_all("#topk .topk-list button", "es => es.map(e => e.dataset.piece)")
    assert len(buttons) == 8
    alt = buttons[1]
    seq = page.evaluate("window.__lens.state.traj.seq")
    page.click("#topk .topk-list button:nth-child(2)")
    page.wait_for_function(f"window.__lens.state.traj.seq !== {seq}", timeout=30000)
    assert step_no(page) == 3  # the view lands on the forced step
    forced = stepped(translator, SENTENCE, 2)
    forced.force(alt)
    assert chips(page) == forced.target_tokens
    assert page.eval_on_selector("#attention .lens-tok.forced", "e => e.textContent") == alt
    click(page, "#run")
    forced.run()
    assert page.input_value("#translation textarea") == forced.translation != translator.translate(SENTENCE)
    np.testing.assert_allclose(np.array(view(page)["z"]), forced.attention.cross[0, 0], atol=ATOL)
    # Reset returns to the greedy trajectory (locally); forcing there again is decoded from that prefix
    click(page, "#reset")
    assert chips(page) == ["<s>"]
    click(page, "#step")
    assert chips(page) == stepped(translator, SENTENCE, 1).target_tokens
    alt2 = page.eval_on_selector("#topk .topk-list button:nth-child(3)", "e => e.dataset.piece")
    seq = page.evaluate("window.__lens.state.traj.seq")
    page.click("#topk .topk-list button:nth-child(3)")
    page.wait_for_function(f"window.__lens.state.traj.seq !== {seq}", timeout=30000)
    again = stepped(translator, SENTENCE, 1)
    again.force(alt2)
    assert step_no(page) == 2 and chips(page) == again.target_tokens
    click(page, "#run")
    assert page.input_value("#translation textarea") == again.run().translation
    assert page.errors == []


HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> **bold** $x$ %{y}'


def test_hostile_text_is_shown_literally_and_runs_nothing(page, translator):
    start(page, HOSTILE)
    click(page, "#run")
    assert page.evaluate("window.__pwned === undefined")
    session = translator.start(HOSTILE).run()
    assert chips(page) == session.target_tokens  # shown as text, exactly
    src = page.eval_on_selector_all("#attention [data-role=xlabels] span", "es => es.map(e => e.textContent)")
    assert src == session.source_tokens and any("<" in p for p in src)  # as text, never parsed
    assert page.query_selector("#attention img") is None and page.query_selector("#topk img") is None
    assert page.errors == []


def test_empty_input_shows_a_message_and_app_keeps_working(page, translator):
    page.fill("#source textarea", "   ")
    page.click("#start")
    page.wait_for_selector("#source_hint >> text=input is empty", timeout=10000)  # said under the box
    start(page, "Ein Hund rennt durch den Schnee.")
    page.wait_for_selector("text=input is empty", state="detached", timeout=10000)  # and gone with the next Start
    click(page, "#run")
    assert page.input_value("#translation textarea") == translator.translate("Ein Hund rennt durch den Schnee.")


def open_tab(page, name):
    page.get_by_role("tab", name=name).click()


def view_renders(page, view_id) -> int:
    return int(page.evaluate(f"(document.getElementById('{view_id}')?.lens || {{renders: 0}}).renders"))


def test_word_toggle_and_export_buttons(page, translator):
    start(page, SENTENCE)
    t = 5
    go(page, t)
    settings(page)
    n = renders(page)
    page.check("#words input")
    wait_render(page, n)
    s = stepped(translator, SENTENCE, t)
    maps = s.attention
    ss, ts = analysis.word_spans(maps.source_tokens), analysis.word_spans(maps.target_tokens)
    assert chips(page) == analysis.word_labels(maps.target_tokens, ts)
    v = view(page)
    assert v["x"] == analysis.word_labels(maps.source_tokens, ss)
    np.testing.assert_allclose(np.array(v["z"]), analysis.merge_words(maps.cross[0, 0], ts, ss), atol=1e-4)
    click(page, "#run")
    words = chips(page)
    assert words[0] == "<s>" and not any(c.startswith("▁") for c in words)
    assert " ".join(words[1:-1]) == translator.translate(SENTENCE)
    n = renders(page)
    page.uncheck("#words input")
    wait_render(page, n)
    go(page, t)
    with page.expect_download() as d:
        page.click("#attention [data-role=html]")
    html = Path(d.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "Plotly.newPlot" in html and len(html) > 500_000
    with page.expect_download(timeout=30000) as d:
        page.click("#attention [data-role=png]")
    with open(d.value.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    page.get_by_text("Export the maps").click()
    page.click("#export")
    page.locator("#export_files", has_text=".npz").wait_for(state="attached", timeout=20000)  # (mounted late)
    text = page.inner_text("#export_files")
    assert f"export-step{t}" in text and ".npz" in text and ".json" in text and ".html" in text  # the view's step


def test_ablation_beam_layers_and_learned_tabs(page, translator):
    start(page, SENTENCE)
    t = 3
    go(page, t)  # only the browser knows: the other tabs must use this step
    open_tab(page, "Head ablation")
    for lab in ("L3 H1", "L3 H2", "L3 H3", "L3 H4"):
        page.locator("#ablate_cross").get_by_label(lab).check()
    n = view_renders(page, "attention_ablated")
    page.click("#ablate_run")
    page.wait_for_function("document.getElementById('attention_ablated')?.lens"
                           f" && document.getElementById('attention_ablated')?.lens.renders > {n}", timeout=30000)
    heads = [("cross", 2, h) for h in range(translator.config.n_heads)]
    assert page.input_value("#intact_translation textarea") == translator.translate(SENTENCE)
    ablated = translator.start(SENTENCE, ablate=heads).run().translation
    assert page.input_value("#ablated_translation textarea") == ablated
    assert f"step {t} of the Translate tab" in page.input_value("#ablate_note textarea")
    assert chips(page, "attention_ablated") == stepped(translator, SENTENCE, t).target_tokens
    shot(page, "screenshot_ablation.png")

    open_tab(page, "Beam search")
    n = view_renders(page, "attention_beam")
    page.click("#beam_run")
    page.wait_for_function("document.getElementById('attention_beam')?.lens"
                           f" && document.getElementById('attention_beam')?.lens.renders > {n}", timeout=30000)
    page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=20000)
    from transformer.decode.beam import beam_search
    best = beam_search(translator.model, translator.source_ids(SENTENCE), 4).hypotheses[0]
    assert chips(page, "attention_beam") == translator.tokenizer.pieces([translator.config.bos_id] + best.ids)
    shot(page, "screenshot_beam.png")

    # Across layers draws by itself when shown, and follows the step while shown (no Show press)
    matrix_rows = ("(() => { const d = document.querySelector('#align_matrix .js-plotly-plot');"
                   " return d && d.layout ? d.layout.yaxis.ticktext.length : -1; })()")
    open_tab(page, "Across layers")
    page.wait_for_function(f"{matrix_rows} === {t + 1}", timeout=30000)
    page.wait_for_selector("#rollout .js-plotly-plot", timeout=20000)
    page.evaluate("window.__lens.ctl.step()")  # e.g. Play still running on the Translate tab
    page.wait_for_function(f"{matrix_rows} === {t + 2}", timeout=30000)
    shot(page, "screenshot_layers.png")

    open_tab(page, "Attention being learned")
    page.wait_for_selector("#learned_plot .js-plotly-plot", timeout=20000)
    assert page.input_value("#learned_translation textarea") != ""
    shot(page, "screenshot_learned.png")

    open_tab(page, "Head atlas")  # as a 1280x800 screen shows it, above the fold
    page.wait_for_function("document.getElementById('atlas')?.atlas && "
                           "document.getElementById('atlas')?.atlas.renders > 0", timeout=20000)
    size = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 800})
    page.wait_for_timeout(500)  # plotly redraws the atlas for the new width
    shot(page, "screenshot_atlas.png", full_page=False)
    page.set_viewport_size(size)
    open_tab(page, "Translate")
    assert page.errors == []


def test_the_learned_tab_asks_once_when_opened_and_once_per_pick(served_browser):
    """Filling the tab sets its controls and its plot in one answer; the controls' events are a user's picks only
    (with .change, each control filled asked for the same plot again: 3 requests on opening, and a slow machine
    showed two copies of the plot's labels at once while the second replaced the first)."""
    import json
    url, b = served_browser
    page = open_app(b, url)  # its own page: the tab not yet filled
    joins = []
    page.on("request", lambda r: joins.append(json.loads(r.post_data or "{}")) if "/queue/join" in r.url else None)
    page.wait_for_timeout(500)
    open_tab(page, "Attention being learned")
    page.wait_for_selector("#learned_plot .js-plotly-plot", timeout=30000)
    page.wait_for_timeout(2500)  # what the filled controls would ask for has been asked
    assert len(joins) == 1, [j.get("fn_index") for j in joins]
    page.locator("#learned_layer input").click()
    page.locator("#learned_layer ul li").nth(2).dispatch_event("mousedown")
    page.wait_for_function("document.querySelector('#learned_layer input').value.endsWith('2')", timeout=10000)
    page.wait_for_timeout(2500)
    assert len(joins) == 2 and joins[1]["data"][3] == "layer 2", [j.get("data") for j in joins]
    assert page.errors == []
    page.close()
