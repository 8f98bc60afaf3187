"""The "Inside this head" panel in headless Chromium (assets/inside.js): its numbers for a row are
DecodingSession.inside's for the same head and step; stepping with the panel open asks the server nothing, and
another head costs one request; the map's contribution toggle shows ‖α v W_O‖ with rows normalised."""
import re

import numpy as np
import pytest

from tests.browser import click, go, open_app, pick, renders, start, stepped, view, wait_render

pytestmark = pytest.mark.browser
SENTENCE = "Eine Frau mit einem roten Hut fährt Fahrrad auf einer belebten Straße."
ATOL = 1e-4
MAP_ATOL = 2e-3  # the map's weights travel as uint16 (1.5e-5), then times ‖v W_O‖ and renormalised


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    yield open_app(b, url)


def settled(page):
    """Wait until the panel has no request in flight and shows a row (or says why it shows none)."""
    page.wait_for_function("document.getElementById('inside')?.inside && "
                           "document.getElementById('inside')?.inside.ready() && "
                           "(document.getElementById('inside')?.inside.row || "
                           "!document.querySelector('#inside [data-role=msg]').hidden)", timeout=60000)
    return page.evaluate("document.getElementById('inside')?.inside.row")


def shown_cells(page) -> list[list[str]]:
    """The table as text: one list of cell texts per visible key row."""
    return page.eval_on_selector_all(
        "#inside [data-role=rows] tr:not([hidden])", "trs => trs.map(tr => [...tr.cells].map(c => c.textContent))")


def check_row(page, translator, t, kind, layer, head, i=None, sentence=SENTENCE):
    """The panel's row (full precision, and as printed) against session.inside at step t."""
    got = settled(page)
    ins = stepped(translator, sentence, t).inside(kind, layer, head)
    i = (0 if kind == "encoder_self" else t) if i is None else i
    msg = f"{kind} {layer} {head} step {t} row {i}"
    assert (got["kind"], got["layer"], got["head"], got["step"], got["row"]) == (kind, layer, head, t, i), msg
    assert got["keys"] == ins.key_tokens and got["query"] == ins.query_tokens[i], msg
    d = ins.d_k
    np.testing.assert_allclose(got["q"], ins.q[i], atol=ATOL, err_msg=msg)
    np.testing.assert_allclose(got["raw"], ins.raw[i], atol=ATOL * np.sqrt(d), err_msg=msg)
    np.testing.assert_allclose(got["scaled"], ins.scores[i], atol=ATOL, err_msg=msg)
    assert got["masked"] == ins.mask[i].tolist(), msg
    np.testing.assert_allclose(got["weight"], ins.weights[i], atol=ATOL, err_msg=msg)
    np.testing.assert_allclose(got["contribution"], ins.contribution[i], atol=ATOL, err_msg=msg)
    np.testing.assert_allclose(got["out"], ins.out[i], atol=ATOL, err_msg=msg)
    cells = shown_cells(page)  # key, k strip, q·k, ÷√d_k, mask, weight, v strip, contribution
    assert [c[0] for c in cells] == ins.key_tokens, msg
    for j, c in enumerate(cells):
        assert float(c[3]) == pytest.approx(float(ins.scores[i, j]), abs=2e-3), msg
        assert (c[4] == "−∞") == bool(ins.mask[i, j]), msg
        assert float(c[5]) == pytest.approx(float(ins.weights[i, j]), abs=1e-3), msg
        assert float(c[7]) == pytest.approx(float(ins.contribution[i, j]), abs=1e-3), msg


def test_the_panels_numbers_are_session_inside(page, translator):
    start(page, SENTENCE)
    last = len(translator.start(SENTENCE).run().positions) - 1
    L, H = translator.config.n_decoder_layers, translator.config.n_heads
    assert page.is_visible("#inside [data-role=rows]")
    for t in (0, 3, last):
        go(page, t)
        for kind, layer, head in (("cross", 0, 0), ("decoder_self", L - 1, H - 1), ("encoder_self", 1, 2)):
            pick(page, kind, layer, head)
            check_row(page, translator, t, kind, layer, head)
    # a row clicked on the big map: that query, until "follow the step"
    pick(page, "cross", 1, 1)
    settled(page)
    canvas = page.locator("#attention [data-role=canvas]")
    rows = page.evaluate("window.__lens.view().y.length")
    canvas.click(position={"x": 5, "y": 1.5 * canvas.bounding_box()["height"] / rows})
    page.wait_for_function("document.getElementById('inside')?.inside.row && "
                           "document.getElementById('inside')?.inside.row.row === 1", timeout=10000)
    check_row(page, translator, last, "cross", 1, 1, i=1)
    assert "picked" in page.inner_text("#inside [data-role=qlabel]")
    page.click("#inside [data-role=follow]")
    page.wait_for_function(f"document.getElementById('inside')?.inside.row.row === {last}", timeout=10000)
    assert page.errors == []


def test_stepping_with_the_panel_open_sends_no_request(page, translator):
    start(page, SENTENCE)
    settled(page)
    last = len(translator.start(SENTENCE).run().positions) - 1
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.route("**/*", lambda r: r.abort())
    try:
        for want in (1, 2, 3):
            click(page, "#step")
            assert settled(page)["step"] == want and settled(page)["row"] == want
        click(page, "#back")
        assert settled(page)["row"] == 2
        go(page, 5)
        assert settled(page)["row"] == 5
        page.select_option("#attention [data-role=speed]", value="100")
        page.click("#attention [data-role=play]")
        page.wait_for_function(f"window.__lens.state.t === {last} && !window.__lens.state.timer", timeout=20000)
        assert settled(page)["row"] == last
    finally:
        page.unroute("**/*")
    assert sent == []
    # another head: one request (the panel's own), and none for a head it already holds
    before = page.evaluate("document.getElementById('inside')?.inside.requests")
    pick(page, "cross", 0, 1)
    check_row(page, translator, last, "cross", 0, 1)
    assert page.evaluate("document.getElementById('inside')?.inside.requests") == before + 1
    pick(page, "cross", 0, 0)
    settled(page)
    assert page.evaluate("document.getElementById('inside')?.inside.requests") == before + 1
    assert page.errors == []


def test_the_contribution_toggle_changes_the_map(page, translator):
    start(page, SENTENCE)
    pick(page, "cross", 0, 0)
    settled(page)
    last = len(translator.start(SENTENCE).run().positions) - 1
    go(page, last)
    weights = np.array(view(page)["z"])
    grid = page.evaluate("document.querySelector('#attention [data-role=grid-canvas]').toDataURL()")
    n = renders(page)
    page.check("#attention .lens-measure input[value=contribution]")
    wait_render(page, n)
    v = view(page)
    assert "contribution" in v["title"]
    assert page.is_visible("#attention .lens-measure-note")
    ins = stepped(translator, SENTENCE, last).inside("cross", 0, 0)
    np.testing.assert_allclose(np.array(v["z"]), ins.contribution_share(), atol=MAP_ATOL)
    assert np.abs(np.array(v["z"]) - weights).max() > 1e-2  # the map did change
    assert page.evaluate("document.querySelector('#attention [data-role=grid-canvas]').toDataURL()") != grid
    n = renders(page)
    page.check("#attention .lens-measure input[value=weight]")
    wait_render(page, n)
    np.testing.assert_array_equal(np.array(view(page)["z"]), weights)
    assert re.search("contribution", view(page)["title"]) is None
    assert page.errors == []


def test_a_refused_head_is_said_in_the_panel_and_can_be_asked_again(page, translator, monkeypatch):
    """The server refusing a head (gr.Error) is said in the panel at once, with a Try again button that asks
    again; before, the panel said "Loading…" until a retry 15 s later."""
    import gradio as gr

    from attention_lens.translate import handlers as decoding_views
    sentence = "Ich habe heute keine Zeit."  # a trajectory whose heads the panel holds none of yet
    start(page, sentence)
    settled(page)
    real, calls = decoding_views.inside_at, []

    def refuse(*args):
        calls.append(args[3:])
        raise gr.Error("the session has expired ({} {} {})".format(*args[3:]))
    monkeypatch.setattr(decoding_views, "inside_at", refuse)
    pick(page, "encoder_self", 1, 2)
    page.wait_for_function("document.querySelector('#inside [data-role=msg]').textContent.includes('1 2)')",
                           timeout=20000)
    said = "Could not open this head: the session has expired (encoder_self 1 2)"
    assert page.text_content("#inside [data-role=msg]") == said
    assert page.is_visible("#inside [data-role=retry]") and ("encoder_self", 1, 2) in calls  # (pick() passes other
    asked = -1  # heads on the way, whose requests may still arrive: count once no more come for 0.6 s)
    while asked != len(calls):
        asked = len(calls)
        page.wait_for_timeout(600)
    click(page, "#step")  # stepping does not ask again for a head that was refused
    page.wait_for_timeout(300)
    assert len(calls) == asked and page.is_visible("#inside [data-role=retry]")
    monkeypatch.setattr(decoding_views, "inside_at", real)
    page.click("#inside [data-role=retry]")
    check_row(page, translator, 1, "encoder_self", 1, 2, i=0, sentence=sentence)
    assert not page.is_visible("#inside [data-role=retry]") and page.errors == []
