"""Smoke tests: the benchmarks run and print their figures (their numbers are never asserted)."""
import random
import re
import threading
from pathlib import Path

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


def test_first_screens_one_gr_html_page_draws_every_first_screen_html_of_the_app_and_nothing_else(tiny_translator):
    """benchmarks.first_screen's best case of the redesign: the box, a State and one gr.HTML, no event; its parts are
    the app's first-screen gr.HTML (those shown and those kept hidden), none of another tab, and each part with a
    script names a function of the app's bundle."""
    import json
    import re
    import urllib.request

    from attention_lens.app import build_demo
    from benchmarks.component_cost import first_screen_counts
    from benchmarks.first_screen import one_screen
    with one_screen(tiny_translator) as url:
        with urllib.request.urlopen(url + "config", timeout=60) as r:
            config = json.loads(r.read())
        kinds = sorted((c["type"], c["props"].get("elem_id")) for c in config["components"])
        assert kinds == [("html", "one_screen"), ("state", None), ("textbox", "source")]
        assert config["dependencies"] == []
        one = next(c for c in config["components"] if c["type"] == "html")["props"]
        src = re.search(r'src="([^"]+)"', one["head"]).group(1)
        with urllib.request.urlopen(url + src, timeout=60) as r:
            bundle = r.read().decode()
    parts = json.loads(one["props"]["parts"])
    ids = [p["id"] for p in parts]
    assert {"title", "topk", "attention", "inside", "arch", "lens_bus", "glossary", "tab_keys"} <= set(ids)
    # Gradio's own components (the picker, the tabs, the buttons, the folds) are no gr.HTML
    assert not {"model", "examples", "start", "step", "settings"} & set(ids)
    assert not {"compare", "atlas", "attention_ablated", "attention_beam", "ablate_sentence"} & set(ids)
    app = build_demo(tiny_translator).get_config_file()
    shown = [p for p in parts if p["shown"]]
    assert len(shown) == first_screen_counts(json.loads(json.dumps(app, default=str)))["shown HTML"]
    views = [p["view"] for p in parts if p["view"]]
    assert len(views) >= 10 and all(f'"{v}": function' in bundle for v in views)
    assert {p["id"] for p in parts if not p["shown"]} >= {"lens_bus", "glossary"}


def test_first_screens_box_and_view_page_holds_the_box_a_state_and_one_bundled_view(tiny_translator):
    """benchmarks.first_screen's floor of a one-script first screen: three components, no event, and the view's
    script made into the page's one bundle (a one-line js_on_load that calls it), as the app's page does."""
    import json
    import urllib.request

    from benchmarks.first_screen import box_and_view
    with box_and_view(tiny_translator) as url, urllib.request.urlopen(url + "config", timeout=60) as r:
        config = json.loads(r.read())
    kinds = sorted((c["type"], c["props"].get("elem_id")) for c in config["components"])
    assert kinds == [("html", "attention"), ("state", None), ("textbox", "source")] and config["dependencies"] == []
    view = next(c for c in config["components"] if c["type"] == "html")
    assert "__attentionLens" in view["props"]["js_on_load"] and len(view["props"]["js_on_load"]) < 400
    with (box_and_view(tiny_translator, start=True) as url,  # and with the Start button: one gr.HTML, one event more
          urllib.request.urlopen(url + "config", timeout=60) as r):
        config = json.loads(r.read())
    ids = {c["id"]: c["props"].get("elem_id") for c in config["components"]}
    assert sorted(i for i in ids.values() if i) == ["attention", "source", "start"] and len(ids) == 4
    [event] = config["dependencies"]
    assert [ids[t] for t, _ in event["targets"]] == ["start"] and event["backend_fn"]
    assert [ids[i] for i in event["inputs"]] == ["source"] and [ids[o] for o in event["outputs"]] == [None, "attention"]


def test_classroom_asks_alti_as_the_page_does(translator):
    """benchmarks.classroom's page_alti speaks Gradio's queue as the Translate view does when ALTI+ is chosen: on the
    client's own started sentence, the answer is the view's payload for it (what attribution_at computes from that
    session), with no error."""
    from attention_lens.translate.attribution import attribution_at
    from benchmarks import classroom as C
    from tests.serving import serving
    text = "Ein Hund rennt durch den Schnee."
    with serving(translator) as url:
        me = C.client(url)
        me.predict(text, 8, False, api_name="/start")  # the picker's default model
        got = C.page_alti(me, C.page_event(me, "attribution"))
        me.close()
    want = attribution_at(translator, translator.decode(text), "", "alti", "k")
    assert "error" not in got and got["method"] == "alti" and got["key"] == "k"
    assert {k: v for k, v in got.items() if k != "ms"} == {k: v for k, v in want.items() if k != "ms"}


def test_classroom_students_ask_what_asks_names_in_order(monkeypatch):
    """--asks start,alti (issue 42's own measurement) makes each student ask Start then ALTI+ and nothing else; by
    default Start, ALTI+, ablation, beam, in that order."""
    from benchmarks import classroom as C

    class Fake:
        def __init__(self):
            self.names = []

        def predict(self, *args, api_name=None):
            self.names.append(api_name)
            if api_name == "/start":
                return "x", {"maps": [], "topk": []}, {"items": []}
            return {"source": 1, "target": 2}

        def close(self):
            pass
    for asked, want in ((("start", "alti"), ["/start", "/attribution"]),
                        (C.ASKED, ["/start", "/attribution", "/ablate", "/beam"])):
        me, out = Fake(), {}
        monkeypatch.setattr(C, "client", lambda url, me=me: me)
        C.student("u", "de-en", "Ein Hund.", 0.0, threading.Barrier(1), random.Random(0), out, "api", asked)
        assert me.names == want and out["errors"] == [] and out["got"]["translation"] == "x"
        assert [e for e, v in out["latency"].items() if v is not None] == want


def test_against_alternates_the_two_checkouts_and_gives_the_ratio_of_p95s(monkeypatch, capsys):
    """benchmarks.against reads the classroom's own table (printed by its report) and runs REV and this checkout in
    the order REV, here, here, REV; the ratio is of the medians of each side's p95."""
    from benchmarks import against
    from benchmarks import classroom as C

    def table(p95):
        rep = {"mode": "batched", "lat": {e: [] for e in C.ENDPOINTS}, "wall": 1.0, "requests": 2, "errors": [],
               "differ": [], "compared": 1, "idle": None, "after": None, "peak": None, "cpu": 1.0}
        rep["lat"]["/start"], rep["lat"]["ALTI+ (page)"] = [p95 / 2, p95], [p95 * 2]
        C.report([rep], 1, 1.0)
        return capsys.readouterr().out
    assert against.rows(table(3.0)) == {"/start": 3.0, "ALTI+ (page)": 6.0}
    order, p95s = [], {"old": iter([4.0, 6.0]), "new": iter([1.0, 2.0])}

    def run(where, name, args):
        assert name == "classroom" and args == ["--students", "2"]
        order.append(where.name)
        return table(next(p95s[where.name]))
    monkeypatch.setattr(against, "checkout", lambda rev: Path("old"))
    monkeypatch.setattr(against, "ROOT", Path("new"))
    monkeypatch.setattr(against, "run", run)
    monkeypatch.setattr(against.subprocess, "run", lambda *a, **k: None)  # the worktree's removal
    assert against.main(["abc1234", "classroom", "--students", "2"]) == 0
    out = capsys.readouterr().out
    assert order == ["old", "new", "new", "old"]
    assert re.search(r"/start +abc1234: 4\.00, 6\.00 s \| here: 1\.00, 2\.00 s \| 0\.30x", out), out
    assert re.search(r"ALTI\+ \(page\) +abc1234: 8\.00, 12\.00 s \| here: 2\.00, 4\.00 s \| 0\.30x", out), out
