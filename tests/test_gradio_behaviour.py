"""The Gradio 6.31 behaviours the page works around, without a browser: each test passes while Gradio behaves so and
fails the day it stops, when its workaround can go (docs/design.md, "The page's state"; the browser ones:
tests/test_gradio_behaviour_browser.py)."""
from __future__ import annotations

import json

import gradio as gr
import pytest

JS = "element.textContent = 'a view script of some length, the same for every copy of the view';"


def test_the_config_holds_a_copy_of_each_views_script_and_style():
    """attention_lens/shell/first_load.py bundle: Gradio puts every gr.HTML's js_on_load and css_template in the page's
    config, one copy per component (three attention views were three copies of lens.js and lens.css)."""
    with gr.Blocks() as demo:
        for i in range(3):
            gr.HTML("", js_on_load=JS, css_template=".x { color: red; }", elem_id=f"v{i}")
    text = json.dumps(demo.config)
    assert text.count(JS[:40]) == 3 and text.count(".x { color: red; }") == 3


def test_the_config_holds_the_values_of_components_not_shown():
    """attention_lens/shell/first_load.py defer: a component in a column not shown still has its whole value in the
    config (the head atlas was sent with every first page)."""
    big = {"cells": list(range(5000))}
    with gr.Blocks() as demo, gr.Column(visible=False):
        gr.JSON(big, elem_id="big")
    value = next(c for c in demo.config["components"] if c["props"].get("elem_id") == "big")["props"]["value"]
    assert value == big


def test_a_bounded_number_given_text_raises_a_type_error_not_a_message():
    """attention_lens/shell/requests.py: Gradio's Slider (and a Number with bounds) compares what the browser sends with
    its bounds as it is, so text is a TypeError (a traceback for the user), not a gr.Error saying what is wrong."""
    for component in (gr.Slider(1, 20, step=1), gr.Number(minimum=0)):
        with pytest.raises(TypeError) as e:
            component.preprocess("two")
        assert not isinstance(e.value, gr.Error)


def test_launch_raises_when_its_probe_of_localhost_fails_and_the_tests_servers_skip_the_probe(monkeypatch):
    """tests/serving.py checked: Gradio's launch probes its own page with one HEAD (3 s timeout) and raises "When
    localhost is not accessible ..." when that fails, as it did in CI on a loaded machine. The servers tests and
    benchmarks start (tests.serving.launched) skip the probe and still answer."""
    import httpx
    from gradio import networking

    from tests.serving import free_port, launched
    monkeypatch.setattr(networking, "url_ok", lambda url: False)  # the probe timed out
    with gr.Blocks() as demo:
        gr.Markdown("a page")
    try:
        with pytest.raises(ValueError, match="localhost is not accessible"):
            demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    finally:
        demo.close()
    with launched(demo) as url:
        assert httpx.get(url, timeout=60).status_code == 200
