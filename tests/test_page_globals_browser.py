"""No script of the page shares a page global (issue 57 item 3; docs/design.md "Where a script keeps what it
keeps"): each view keeps its instance on its own element and each value of the page on the element it belongs to.
Seen in the page: after it has loaded, started a sentence, opened every tab, opened Inside this head on a row and
the lesson's tools, and copied a link, the page globals named __* that our scripts made are the two the design
names, each where it says (tests/test_code_shape.py checks the source; this sees what the page really holds,
a name assigned without a declaration included)."""
from __future__ import annotations

from pathlib import Path

import gradio
import pytest

from tests.browser import TAB_KEYS, open_app, start, tab_button

pytestmark = pytest.mark.browser

# the tests' and benchmarks' handle (assets/lens.js), and the first-load bundle's entry
# (attention_lens/shell/first_load.py)
OURS = {"__lens", "__attentionLens"}
GLOBALS = "Object.keys(window).filter(k => k.startsWith('__'))"
FRONTEND = Path(gradio.__file__).parent / "templates" / "frontend"  # Gradio's own page code (Plotly in it)


def gradios(names: set[str]) -> set[str]:
    """Those of `names` that Gradio's own frontend code names (__gradio_mode__, __svelte, its Plotly's
    __TYPEDARRAY_POOL, ...): its globals, not ours."""
    code = "\n".join(f.read_text("utf-8", errors="ignore") for f in FRONTEND.rglob("*.js"))
    return {n for n in names if n in code}


def test_the_page_holds_no_global_of_its_scripts_but_the_two_named(served_browser):
    url, b = served_browser
    blank = b.new_page()  # what the browser itself holds on an empty page: not ours
    blank.goto("about:blank")
    browsers = set(blank.evaluate(GLOBALS))
    blank.close()
    page = open_app(b, url, 1280, 800)
    start(page, "Der Hund beißt den Mann.")
    page.evaluate("document.getElementById('inside').inside.pick(1)")  # Inside this head on a row
    page.click("#copy_link")
    page.wait_for_function("document.getElementById('link_box').link.last")
    page.click("#lesson_open")
    for name in TAB_KEYS:
        page.click(tab_button(name))
        page.wait_for_timeout(300)
    page.wait_for_timeout(1500)  # what the tabs fetched when first opened has come and run
    made = set(page.evaluate(GLOBALS)) - browsers
    made -= gradios(made - OURS)
    assert made == OURS, sorted(made)
    # each view is on its element, and the handle is the Translate view's
    assert page.evaluate("window.__lens === document.getElementById('attention').lens")
    assert page.evaluate("['explain_box.explain', 'inside.inside', 'attribution.attribution', 'topk.topk', "
                         "'link_box.link', 'lesson.lesson', 'compare.compare', 'atlas.atlas', 'tour_box.tour', "
                         "'class_box.live', 'glossary.glossary', 'source_hint.sentence']"
                         ".filter(p => { const [id, name] = p.split('.'); "
                         "return !document.getElementById(id)?.[name]; })") == []
    assert page.errors == []
    page.close()
