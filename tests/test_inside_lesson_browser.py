"""Where the course and the panel part ways (issue 26 items 6, 7): ‖out‖ beside the contributions on one scale, and
decoder self-attention's causal mask drawn as the triangle a student built."""
from __future__ import annotations

import re

import pytest

from tests.browser import pick, start

pytestmark = pytest.mark.browser
SENTENCE = "Ein Hund rennt."


@pytest.fixture(scope="module")
def page(tiny_page):
    return tiny_page


def test_out_norm_is_set_on_the_contributions_scale(page, tiny_trained):
    from transformer.decode.decoding import Translator
    start(page, SENTENCE)
    page.click("#explain_detail")  # the numbers are in the detailed note (plain: what the head passes on)
    page.wait_for_function("document.querySelector('#inside [data-role=outnote]').textContent.includes('W_O')",
                           timeout=30000)
    note = page.inner_text("#inside [data-role=outnote]")
    got = float(re.search(r"‖out·W_Oʰ‖ = ([0-9.]+)", note).group(1))
    total = float(re.search(r"Σ contributions = ([0-9.]+)", note).group(1))
    s = Translator.load(tiny_trained, "cpu").start(SENTENCE)
    ins = s.inside("cross", 0, 0)  # the panel's head at step 0: cross-attention, layer 1, head 1
    assert got == pytest.approx(float(ins.out_norms[0]), abs=2e-3) and got <= total + 1e-3
    assert total == pytest.approx(float(ins.contribution[0].sum()), abs=5e-3)
    assert "norm of a sum" in note
    page.click("#explain_plain")
    page.wait_for_function("document.querySelector('#inside [data-role=outnote]').textContent.includes('passes on')")
    assert "W_O" not in page.inner_text("#inside [data-role=outnote]")


def test_decoder_self_attention_shows_the_causal_triangle(page):
    start(page, SENTENCE)
    assert page.is_hidden("#inside [data-role=maskbox]")  # cross-attention masks nothing
    pick(page, kind="decoder_self")
    page.wait_for_selector("#inside [data-role=maskbox]", state="visible", timeout=30000)
    n = page.evaluate("window.__lens.state.traj.n")
    w = page.evaluate("document.querySelector('#inside [data-role=maskviz]').width")
    assert w % n == 0 and w // n >= 3  # one cell per target position
    assert "no future keys" in page.inner_text("#inside [data-role=masknote]")
