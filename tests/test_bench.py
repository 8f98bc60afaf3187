"""Smoke tests: the benchmarks run and print their figures (their numbers are never asserted)."""
from benchmarks import decode


def test_bench_decode_prints_figures(tiny_trained, capsys):
    decode.main(["--checkpoint", str(tiny_trained), "--device", "cpu", "--split", "", "--repeats", "1",
                "--sentence", "Ein Hund rennt. Eine Katze schläft."])
    out = capsys.readouterr().out
    for line in ("captured session step", "at 30 target tokens: uncaptured step", "no cache", "cache speed-up"):
        assert line in out


def test_component_cost_counts_what_the_first_screen_shows_apart_from_what_waits_hidden():
    """benchmarks.component_cost's count of a page: shown means the component and every layout above it are visible
    (a child of a hidden column is hidden whatever its own value; "hidden" is mounted but not displayed)."""
    import gradio as gr

    from benchmarks.component_cost import first_screen_counts
    with gr.Blocks() as demo:
        gr.Textbox()
        gr.HTML("shown")
        gr.Textbox(visible="hidden")
        with gr.Column(visible=False):
            gr.HTML("in a closed tab")
            gr.Textbox()
        with gr.Column():
            gr.HTML("shown too")
        box = gr.Textbox(visible=False)
        box.change(None, [box], [box], js="(v) => v")

        def endpoint(text: str) -> str:
            return text
        gr.api(endpoint, api_name="endpoint")
    got = first_screen_counts(demo.get_config_file())
    # shown: the first textbox and the three forms Gradio puts around boxes, 2 HTML, the open column, the
    # endpoint's parameter and output; hidden: the "hidden" box, the closed column and its HTML, form and box, and
    # the box with visible=False; events: the js-only one and the endpoint
    assert got == {"shown": 9, "shown HTML": 2, "hidden": 6, "gr.api parameters": 2, "events": 2}


def test_first_screens_box_and_view_page_holds_the_box_a_state_and_one_bundled_view(tiny_translator):
    """benchmarks.first_screen's floor of a one-script first screen: three components, no event, and the view's
    script made into the page's one bundle (a one-line js_on_load that calls it), as the app's page does."""
    import json
    import urllib.request

    from benchmarks.first_screen import box_and_view
    with box_and_view(tiny_translator) as url:
        with urllib.request.urlopen(url + "config", timeout=60) as r:
            config = json.loads(r.read())
    kinds = sorted((c["type"], c["props"].get("elem_id")) for c in config["components"])
    assert kinds == [("html", "attention"), ("state", None), ("textbox", "source")] and config["dependencies"] == []
    view = next(c for c in config["components"] if c["type"] == "html")
    assert "__attentionLens" in view["props"]["js_on_load"] and len(view["props"]["js_on_load"]) < 400
