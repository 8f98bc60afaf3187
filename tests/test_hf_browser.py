"""A Hugging Face MarianMT in Chromium beside our model: picked from the model picker by its languages, name and size,
stepped (the chips are its own pieces), Inside this head drawn for its head, and a lesson link naming it opens it in
a fresh browser. The tiny model is built here (tests/hf_models.py); skipped where transformers is not installed,
except in CI."""
from __future__ import annotations

import pytest

from tests.browser import (
    browser,
    chips,
    choose,
    model_label,
    open_app,
    open_link,
    require_chromium,
    serve,
    start,
    step_no,
)
from tests.hf_models import need_transformers

need_transformers()

pytestmark = pytest.mark.browser
SENTENCE = "Der Hund schläft im Garten."


@pytest.fixture(scope="module")
def models(tiny_trained, tmp_path_factory):
    from tests.hf_models import marian_folder
    from transformer.decode.decoding import Translator
    from transformer.hf import load_hf
    return [Translator.load(tiny_trained, "cpu"), load_hf(marian_folder(tmp_path_factory.mktemp("marian")), "cpu")]


@pytest.fixture(scope="module")
def served(models):
    require_chromium()
    with serve(models) as url, browser() as b:
        yield url, b


def test_the_picked_marian_steps_opens_inside_and_travels_in_a_lesson(served, models):
    from attention_lens.shell.models import direction_label
    url, b = served
    hf = models[1]
    label = direction_label(hf)
    assert label.startswith("German → English · marian") and label.endswith("k")  # its languages, name and size
    page = open_app(b, url, 1280, 800)
    assert model_label(page) == "German → English"  # ours first
    choose(page, "model", label)
    page.wait_for_function(f"document.querySelector('#model input').value === {label!r}", timeout=20000)
    start(page, SENTENCE)
    assert page.evaluate("window.__lens.state.traj.p.model || null") in (None, hf.key)
    for _ in range(3):
        page.click("#step")
    page.wait_for_function("window.__lens.state.t === 3", timeout=30000)
    s = hf.start(SENTENCE)
    for _ in range(3):
        s.step()
    assert chips(page) == s.target_tokens  # the Marian's own pieces, its <pad> start included
    page.wait_for_function("document.getElementById('inside')?.inside?.ready()", timeout=60000)
    rows = page.eval_on_selector_all("#inside tbody tr", "rs => rs.length")
    assert rows == len(s.source_ids)  # cross-attention's keys: the source's pieces
    assert not page.errors

    page.click("#lesson_open")
    page.fill("#lesson_note", "A MarianMT")
    page.click("#lesson_add")
    page.wait_for_function("document.getElementById('lesson')?.lesson.made.length === 1", timeout=5000)
    page.click("#copy_lesson")
    page.wait_for_function("document.getElementById('lesson')?.lesson.last !== null", timeout=5000)
    link = page.evaluate("document.getElementById('lesson')?.lesson.last")
    student = open_link(b, link, "document.getElementById('lesson')?.lesson && "
                                 "!document.getElementById('lesson')?.lesson.busy")
    student.wait_for_function("document.getElementById('lesson')?.lesson.shown === 0", timeout=120000)
    assert f"model={hf.key}" in student.evaluate("document.getElementById('lesson')?.lesson.views[0][0]")
    student.wait_for_function(f"document.querySelector('#model input').value === {label!r}", timeout=30000)
    assert step_no(student) == 3 and chips(student) == s.target_tokens
