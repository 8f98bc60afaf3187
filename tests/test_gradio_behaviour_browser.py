"""The Gradio 6.31 behaviours the page's state is shaped by, in Chromium on a page of a few components (no model):
each test passes while Gradio behaves so and fails the day it stops, when its workaround in ui/shell/page_state.py can
go
(docs/design.md, "The page's state")."""
from __future__ import annotations

import gradio as gr
import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser


def little_page() -> gr.Blocks:
    with gr.Blocks() as demo:
        same = gr.Button("same", elem_id="same")
        box = gr.Textbox("", visible=False)
        same.click(lambda: "the same value", None, box)
        box.change(None, None, None, js="() => { window.__changes = (window.__changes || 0) + 1; }")
    return demo


@pytest.fixture(scope="module")
def page():
    require_chromium()
    from tests.serving import chromium, launched
    with launched(little_page()) as url, chromium() as b:
        p = b.new_page()
        p.goto(url)
        p.wait_for_selector("#same", timeout=120000)
        yield p


def test_a_value_equal_to_the_one_before_runs_no_change_event(page):
    """G1 (page_state.new_value): the server writes the same value twice; its change event ran once."""
    page.click("#same")
    page.wait_for_function("window.__changes === 1", timeout=20000)
    page.click("#same")
    page.wait_for_timeout(1500)
    assert page.evaluate("window.__changes") == 1

