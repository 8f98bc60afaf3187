"""ALTI+ and saliency in the Translate view, in Chromium (issue 27): the toggle colours the source and target chips
with the library's row for the step shown, the map shows the library's rows so far, stepping asks the server
nothing, and a new Start clears what the browser kept."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.browser import browser, click, go, open_app, require_chromium, serve, start

pytestmark = pytest.mark.browser
TEXT = "Ein Hund rennt."
ATOL = 2e-4  # uint16 in the payload, 4 decimals in data-share


@pytest.fixture(scope="module")
def tr(tiny_trained):
    from transformer.decode.decoding import Translator
    return Translator.load(tiny_trained, "cpu")


@pytest.fixture(scope="module")
def page(tr):
    require_chromium()
    with serve(tr) as url, browser() as b:
        yield open_app(b, url, 1280, 800)


def choose(page, method):
    """Tick a measure of the map's toggle and wait until the view shows it (answered, if it had to ask)."""
    page.check(f"#attention .lens-measure input[value={method}]")
    if method in ("alti", "saliency"):
        page.wait_for_function(f"document.getElementById('attribution')?.attribution.ready() && "
                               f"(document.getElementById('attribution')?.attribution.view() || {{}}).method === "
                               f"'{method}'", timeout=60000)


def alpha(css: str) -> float:
    """The alpha of rgba(r, g, b, a) (rgb(...) is opaque)."""
    m = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)", css)
    assert m, css
    return float(m.group(4)) if m.group(4) is not None else 1.0


def chips(page, where: str) -> tuple[list[str], list[float], list[float]]:
    """(texts, data-share, background alpha) of the source chips (where="source") or the target's."""
    sel = "#attention .attr-source .lens-tok" if where == "source" else "#attention [data-role=target] .lens-tok"
    got = page.eval_on_selector_all(sel, "es => es.map(e => [e.textContent, e.dataset.share, e.style.backgroundColor])")
    return [g[0] for g in got], [float(g[1]) for g in got], [alpha(g[2]) for g in got]


def check_step(page, tr, method, t):
    """The chips and the map at step t are the library's row t (of the whole decoding), and the colours its
    shares over the row's largest."""
    att = tr.start(TEXT).run().attribution(method)
    src, tgt = att.source[t], att.target[t, :t + 1]
    texts, shares, alphas = chips(page, "source")
    assert texts == att.source_tokens
    np.testing.assert_allclose(shares, src, atol=ATOL)
    t_texts, t_shares, t_alphas = chips(page, "target")
    assert t_texts == att.target_tokens[:t + 1]
    np.testing.assert_allclose(t_shares, tgt, atol=ATOL)
    top = max(src.max(), tgt.max())
    np.testing.assert_allclose(alphas + t_alphas, np.concatenate([src, tgt]) / top, atol=1 / 255 + 1e-3)  # 8-bit alpha
    shown = page.evaluate("document.getElementById('attribution')?.attribution.view()")
    assert shown["step"] == t and len(shown["z"]) == t + 1
    S = len(att.source_tokens)
    np.testing.assert_allclose(shown["z"][t][:S], src, atol=ATOL)
    np.testing.assert_allclose([v for v in shown["z"][t][S:] if v is not None], tgt, atol=ATOL)


def test_alti_colours_the_chips_with_the_librarys_row_and_stepping_asks_nothing(page, tr):
    start(page, TEXT)
    n = len(tr.start(TEXT).run().positions)
    assert n >= 3
    go(page, 1)
    before = page.evaluate("document.getElementById('attribution')?.attribution.requests")
    choose(page, "alti")
    # one request for every row
    assert page.evaluate("document.getElementById('attribution')?.attribution.requests") == before + 1
    assert page.is_visible("#attention .attr-note")
    assert "share of the choice" in page.inner_text("#attention .attr-note")
    page.click("#explain_detail")  # plain by default, the paper one click away (issue 39 item 5)
    assert "Ferrando" in page.inner_text("#attention .attr-note")
    page.click("#explain_plain")
    assert page.is_visible("#attention .attr-map canvas") and not page.is_visible("#attention [data-role=plot]")
    check_step(page, tr, "alti", 1)
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.route("**/*", lambda r: r.abort())
    try:
        click(page, "#step")
        check_step(page, tr, "alti", 2)
        click(page, "#back")
        check_step(page, tr, "alti", 1)
        go(page, n - 1)
        check_step(page, tr, "alti", n - 1)
    finally:
        page.unroute("**/*")
    assert sent == [] and page.evaluate("document.getElementById('attribution')?.attribution.requests") == before + 1
    choose(page, "weight")  # the view's own map and chips again
    assert page.is_visible("#attention [data-role=plot]") and not page.is_visible("#attention .attr-map")
    colours = page.eval_on_selector_all("#attention [data-role=target] .lens-tok",
                                        "es => es.map(e => e.style.backgroundColor)")
    assert colours == [""] * n
    assert page.errors == []


def test_a_new_start_clears_the_cached_attributions(page, tr):
    start(page, TEXT)
    choose(page, "alti")
    choose(page, "saliency")
    go(page, 1)
    check_step(page, tr, "saliency", 1)
    asked = page.evaluate("document.getElementById('attribution')?.attribution.requests")
    choose(page, "alti")  # kept: no request
    assert page.evaluate("document.getElementById('attribution')?.attribution.requests") == asked
    old = page.evaluate("[...document.getElementById('attribution')?.attribution.cache.keys()]")
    assert len(old) == 2
    start(page, TEXT)  # the same sentence again: a new trajectory, asked for again
    page.wait_for_function("document.getElementById('attribution')?.attribution.ready() && "
                           "document.getElementById('attribution')?.attribution.view()", timeout=60000)
    keys = page.evaluate("[...document.getElementById('attribution')?.attribution.cache.keys()]")
    assert page.evaluate("document.getElementById('attribution')?.attribution.requests") == asked + 1
    assert len(keys) == 1 and keys[0] not in old
    check_step(page, tr, "alti", 0)
    assert page.errors == []
