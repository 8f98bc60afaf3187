"""attention_lens/shell/first_load.py without a browser: the page's one script compiles, every view calls it, and what
the first
screen does not show is hidden until its tab or accordion is opened (tests/test_first_load_browser.py loads the
page)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import gradio as gr
import pytest


@pytest.fixture(scope="module")
def demo(tiny_trained):
    from attention_lens.app import build_demo
    from transformer.decode.decoding import Translator
    return build_demo(Translator.load(tiny_trained, device="cpu"))


def bundle_path(demo):
    from attention_lens.shell.first_load import bundle_dir, head_tag
    return bundle_dir() / re.search(r"attention-lens-[0-9a-f]{12}\.js", head_tag(demo)).group(0)


def test_every_view_calls_the_one_script_and_it_compiles(demo):
    views = [b for b in demo.blocks.values() if isinstance(b, gr.HTML)]
    assert views and all(not v.css_template for v in views)
    scripted = [v for v in views if v.js_on_load]
    assert all(v.js_on_load.startswith("const a = [element, trigger, props, server, upload, watch]") for v in scripted)
    text = bundle_path(demo).read_text("utf-8")
    names = {v.js_on_load.split('L.run("')[1].split('"')[0] for v in scripted}
    from attention_lens.shell.first_load import ARGUMENTS  # Gradio's arguments, then the bundle's find and home
    assert ARGUMENTS == ("element", "trigger", "props", "server", "upload", "watch", "find", "home")
    assert all(f'"{n}": function ({", ".join(ARGUMENTS)})' in text for n in names)
    assert ".lens" in text and "#attention" in text  # the views' styles travel in it, scoped by their elem_id
    if shutil.which("node") is None:
        pytest.skip("no node to compile the script with")
    r = subprocess.run(["node", "--check", str(bundle_path(demo))], check=False, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]


def test_what_the_first_screen_lacks_waits_for_its_tab_or_accordion(demo):
    from attention_lens.shell.first_load import first_screen_types, gates
    config = demo.config
    by_id = {c["id"]: c for c in config["components"]}
    where = gates(demo)
    eager = first_screen_types(where)
    assert {"checkboxgroup", "dataframe", "plot", "markdown", "file", "number"}.isdisjoint(eager), eager
    # what the closed accordions hold waits for them (Gradio's own gr.Accordion: a gate, as a tab not shown first)
    assert {"slider", "checkbox"}.isdisjoint(eager), eager
    for c, gate in where.items():
        if c.get_block_name() in ("checkboxgroup", "dataframe", "plot", "file", "number"):
            assert gate is not None and by_id[c._id]["props"]["visible"] is False, (c.elem_id, gate)
    ablate = next(c for c in where if c.elem_id == "ablate_enc")
    tab = where[ablate]  # the Head ablation tab (gr.Tab): its first select restores what it holds, in the browser
    assert isinstance(tab, gr.Tab) and tab.elem_id == "tab_ablation"
    restores = [d for d in config["dependencies"] if (tab._id, "select") in map(tuple, d["targets"])
                and ablate._id in d["outputs"]]
    assert len(restores) == 1 and not restores[0]["backend_fn"]
    visible = json.loads(re.search(r"return (\[.*\]); \}", restores[0]["js"]).group(1))
    assert all(u == "opened" or u["visible"] in (True, "hidden") for u in visible)


def test_no_event_of_the_page_has_a_validator(demo):
    """A validator's message sits in its box's Gradio status, which every later server event of the page replaces
    (it could vanish ms after it showed, under load): the page's requests say why they started nothing in the page's
    own notes instead (#source_hint, #reference_note, #compare_note)."""
    assert [f.name for f in demo.fns.values() if getattr(f, "validator", None) is not None] == []


def test_the_boxes_are_written_by_the_server_directly(demo):
    """With no validator left (above), nothing on a box can be wiped by a later event's status: the picker relabels
    the sentence box and the reference box, an example fills the box, with no hidden relay box between them."""
    config = demo.config
    boxes = {c["id"] for c in config["components"] if c["props"].get("elem_id") in ("source", "reference")}
    assert len(boxes) == 2
    writers = [d for d in config["dependencies"] if d["backend_fn"] and boxes & set(d["outputs"])]
    assert len(writers) >= 2
    assert not [c for c in config["components"] if c["props"].get("elem_id") in ("boxes_relay", "hint_text")]


def test_the_page_writes_no_private_gradio_attribute(demo):
    """The bundle reaches the page's head by launch(head=...) (attention_lens/app.py with_labels), Gradio's public way,
    not by writing Blocks' private _deprecated_head; no module of the app assigns to a private attribute of a Gradio
    object."""
    from attention_lens.shell.first_load import head_tag
    assert head_tag(demo).startswith('<script src="gradio_api/file=') and not getattr(demo, "_deprecated_head", None)
    root = Path(__file__).resolve().parent.parent
    for path in [root / "app.py", *sorted((root / "attention_lens").rglob("*.py"))]:
        found = re.findall(r"\b(?:demo|blocks|app|gr\.\w+)\._\w+\s*=(?!=)", path.read_text("utf-8"))
        assert not found, (path.name, found)
