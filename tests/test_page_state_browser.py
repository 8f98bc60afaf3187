"""The page's one state (issue 57 items 1 and 6), in Chromium with both shipped models: the stumbles a teacher and a
student met, each a change of the page's value (a model switch, a link, a lesson view, a tab, the browser's Back)
that left a view behind or did not carry all of it. The value and who may change it: docs/design.md, "The page's
state"; its URL form: assets/link.js (url, parse, apply), its history: assets/link.js (remember) and
assets/lesson.js."""
from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from tests.browser import (
    SELECTED_TAB,
    browser,
    choose,
    choose_model,
    open_app,
    open_link,
    require_chromium,
    serve,
    start,
    tab_button,
)
from tests.short_texts import offending

pytestmark = pytest.mark.browser
A, B = "The nurse said that she was tired.", "The doctor said that he was tired."


@pytest.fixture(scope="module")
def served():
    from transformer.decode.decoding import Translator
    require_chromium()
    with serve([Translator.load(key, "cpu") for key in ("de-en", "en-de")]) as url, browser() as b:
        yield url, b


def compare_shown(page) -> dict:
    """What Compare shows: the pair its maps were drawn from (None: no maps), the boxes, whether its maps, its step bar
    or its colour scale are on screen (the CSS of the view decides: a `hidden` attribute alone is not enough)."""
    return page.evaluate("""() => { const c = document.getElementById('compare')?.compare, s = c.state;
      const box = (x) => document.querySelector(`#compare_${x} textarea`).value;
      return {maps: s.a && s.b ? [s.a.p.input, s.b.p.input] : null, boxes: [box('a'), box('b')],
              panels: ['panels', 'bar', 'scale'].some(r => document.querySelector(`#compare [data-role=${r}]`)
                .checkVisibility())}; }""")


def test_compare_after_a_model_switch_keeps_no_map_of_the_old_pair(served):
    url, b = served
    page = open_app(b, url, 1280, 800)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#compare_start", timeout=30000)
    page.click("#compare_start")
    page.wait_for_function("document.getElementById('compare')?.compare.renders > 0 && "
                           "document.getElementById('compare')?.compare.state.a", timeout=60000)
    german = compare_shown(page)
    assert german["maps"] == german["boxes"] and german["panels"]
    choose_model(page, "English → German")
    page.wait_for_function("document.querySelector('#compare_a textarea').value.startsWith('The ')", timeout=30000)
    page.wait_for_timeout(800)  # any late answer of the old model would have come by now
    now = compare_shown(page)
    assert now["maps"] is None and not now["panels"], now  # no map of the German pair under English → German
    assert now["boxes"] == ["The dog bites the man.", "The man bites the dog."]
    page.click("#compare_start")  # a pair started, and the model switched before its answer came
    choose_model(page, "German → English")
    page.wait_for_function("document.querySelector('#compare_a textarea').value.startsWith('Der ')", timeout=30000)
    page.wait_for_timeout(3000)  # the old model's answer has come by now: it draws nothing
    now = compare_shown(page)
    assert now["maps"] is None and not now["panels"], now
    assert page.errors == []
    page.close()


def test_a_compare_link_under_english_german_restores_its_pair_in_a_fresh_browser(served):
    url, b = served
    link = f"{url}?model=en-de&tab=compare&compare_a={quote(A)}&compare_b={quote(B)}"
    page = open_link(b, link, "document.getElementById('compare')?.compare && "
                              "document.getElementById('compare')?.compare.state.a")
    page.wait_for_timeout(3000)  # nothing that comes later (the model's own answers) takes the pair away
    shown = compare_shown(page)
    assert shown["maps"] == [A, B] and shown["boxes"] == [A, B] and shown["panels"], shown
    assert page.evaluate("document.getElementById('link_box')?.link.model()") == "en-de"
    assert page.errors == []
    page.context.close()


def lesson_param(views) -> str:
    return base64.urlsafe_b64encode(json.dumps(views).encode()).decode().rstrip("=")


TEXT = "Ich weiß, dass er morgen nach Berlin fährt."
VIEWS = [  # a 4-view lesson, each Translate view with a picked row and an Inside stage (④ share out in view 2)
    [f"model=de-en&text={quote(TEXT)}&step=3&kind=cross&layer=3&head=2&row=2&stage=4", "share out"],
    [f"model=de-en&text={quote(TEXT)}&step=5&kind=cross&layer=3&head=2&row=4&stage=2", "scale"],
    [f"model=de-en&text={quote(TEXT)}&step=5&kind=decoder_self&layer=1&head=1&row=3&stage=3", "mask"],
    ["model=de-en&tab=compare&compare_a=Er+f%C3%A4hrt.&compare_b=Er+fliegt.", "a pair"],
]


def lesson_view(page) -> dict:
    return page.evaluate("""() => { const L = window.__lens.state, I = document.getElementById('inside')?.inside;
      return {tab: """ + SELECTED_TAB + """,
              step: L.t, kind: L.kind, layer: L.layer + 1, head: L.head + 1,
              row: I.ui.pick ? I.ui.pick.row : null, stage: I.ui.stage, sheet: !!I.sheet}; }""")


def shown(page, i):
    page.wait_for_function(f"document.getElementById('lesson')?.lesson.shown === {i} && "
                           f"!document.getElementById('lesson')?.lesson.busy", timeout=120000)


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["laptop", "phone"])
def test_a_lesson_keeps_the_inside_stage_and_browser_back_walks_through_it(served, size):
    url, b = served
    page = open_link(b, f"{url}?lesson={lesson_param(VIEWS)}", "document.getElementById('lesson')?.lesson && "
                                                               "!document.getElementById('lesson')?.lesson.busy", *size)
    shown(page, 0)
    first = lesson_view(page)
    assert first == {"tab": "Translate", "step": 3, "kind": "cross", "layer": 3, "head": 2, "row": 2, "stage": 4,
                     "sheet": False}, first
    page.click("#lesson_next")
    shown(page, 1)
    assert lesson_view(page)["stage"] == 2 and lesson_view(page)["row"] == 4
    page.click("#lesson_next")
    shown(page, 2)
    assert lesson_view(page)["stage"] == 3 and lesson_view(page)["kind"] == "decoder_self"
    page.go_back()  # the browser's Back: the lesson's view before, in the app
    shown(page, 1)
    assert page.url.startswith(url) and lesson_view(page)["stage"] == 2
    page.go_back()
    shown(page, 0)
    assert lesson_view(page) == first and page.url.startswith(url)
    page.go_forward()
    shown(page, 1)
    assert lesson_view(page)["row"] == 4 and "View 2 of 4" in page.inner_text("#lesson_bar")
    assert page.errors == []
    page.context.close()


def uncovered(page, sel) -> bool:
    """Whether the middle of `sel` is on screen and the topmost thing there is `sel` itself (nothing over it)."""
    return page.evaluate(f"""() => {{ const e = document.querySelector({sel!r}), r = e.getBoundingClientRect();
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (r.height === 0 || y < 0 || y > innerHeight) return false;
      const top = document.elementFromPoint(x, y); return !!top && e.contains(top); }}""")


def test_on_a_phone_the_lesson_bar_is_never_covered(served):
    url, b = served
    views = [[v[0].replace("&stage=4", "&stage=4&sheet=1"), v[1]] if i == 0 else v for i, v in enumerate(VIEWS)]
    page = open_link(b, f"{url}?lesson={lesson_param(views)}",
                     "document.getElementById('lesson')?.lesson && !document.getElementById('lesson').lesson.busy",
                     390, 844)
    shown(page, 0)  # the teacher's view had Inside open as a sheet: open, below the bar
    assert page.evaluate("document.getElementById('inside')?.inside.sheet") is True
    for sel in ("#lesson_bar", "#lesson_next", "#lesson_bar [data-role=note]"):
        assert uncovered(page, sel), sel
    page.click("#lesson_next")
    shown(page, 1)  # this view's teacher had no sheet open: none opens over the page
    assert page.evaluate("document.getElementById('inside')?.inside.sheet") is False
    assert uncovered(page, "#lesson_next")
    assert page.errors == []
    page.context.close()


def test_a_tab_change_is_a_history_entry_and_back_stays_in_the_app(served):
    url, b = served
    page = open_app(b, url, 1280, 800)
    start(page, "Er kommt morgen.")
    page.get_by_role("tab", name="Beam search").click()
    page.wait_for_function("location.search.includes('tab=beam')", timeout=10000)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_function("location.search.includes('tab=compare')", timeout=10000)
    tab = SELECTED_TAB
    page.go_back()
    page.wait_for_function(f"{tab} === 'Beam search'", timeout=30000)
    page.go_back()
    page.wait_for_function(f"{tab} === 'Translate'", timeout=30000)
    assert page.url.startswith(url) and page.evaluate("window.__lens.state.traj.p.input") == "Er kommt morgen."
    page.go_forward()
    page.wait_for_function(f"{tab} === 'Beam search'", timeout=30000)
    assert page.errors == []
    page.close()


# -- every tab that holds results × every change of the page's value: no text or map of the old state remains -----
OLD, NEW = "Der Hund schläft im Garten.", "Ich trinke heute Kaffee."
OLD_B = "Der Hund schläft im Haus."  # Compare's second sentence of the old state
MARKS = ("schläft", "Garten", "garden", "sleep")  # the old sentence's and its translation's own words
RESULT_TABS = ["Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Attention being learned"]
# which tabs hold what a change replaces: Compare's pair is its own setting (a new sentence on Translate keeps it),
# the learned snapshots are the model's own (only a change of model replaces them)
REPLACED = {
    "model switch": RESULT_TABS,
    "new sentence": ["Translate", "Head ablation", "Beam search", "Across layers"],
    "example pick": ["Translate", "Head ablation", "Beam search", "Across layers"],
    "link opened": RESULT_TABS[:-1],
    "lesson Next": RESULT_TABS[:-1],
    "language switch": RESULT_TABS,
}
RED = """() => [...document.querySelectorAll('body *')].filter(e => e.offsetParent !== null && e.children.length === 0
    && e.textContent.trim() === 'Error').map(e => '#' + ((e.closest('[id]:not([id^="html-"])') || {}).id))"""
MAPS = """() => ['attention', 'attention_ablated', 'attention_beam'].map(id => {
    const v = document.getElementById(id)?.lens;
    const d = v && v.state && v.state.doc; return d && d.p ? d.p.input || '' : ''; })"""
COMPARE_MAPS = ("(() => { const s = document.getElementById('compare')?.compare.state; "
                "return s.a && s.b ? [s.a.p.input, s.b.p.input] : []; })()")
LEARNED = "(() => { const e = document.querySelector('#learned_example input'); return e ? e.value : ''; })()"
SHOWN_TEXTS = """() => { const out = new Set();
    const root = document.querySelector('[role=tabpanel]:not([hidden])') || document.body;
    for (const e of root.querySelectorAll('p, li, span, label, div, td, th, figcaption, h1, h2, h3, h4, button, option'))
      if (e.checkVisibility() && !e.closest('pre, code') && ![...e.children].some(c => c.textContent.trim()))
        out.add(e.textContent.trim());  // (code is Python in every language)
    return [...out].filter(Boolean); }"""  # noqa: E501 (a script's lines, as the browser runs them)


def tab(page, name):
    page.click(tab_button(name))  # its English name, whatever the page's language
    page.wait_for_timeout(200)


def fill_every_tab(page) -> str:
    """Results of OLD (started) on every tab that holds results; returns the learned tab's sentence shown."""
    tab(page, "Compare")
    page.wait_for_selector("#compare_start", timeout=30000)
    page.fill("#compare_a textarea", OLD)
    page.fill("#compare_b textarea", OLD_B)
    page.click("#compare_start")
    page.wait_for_function(f"{COMPARE_MAPS}.join('|') === {json.dumps(OLD + '|' + OLD_B)}", timeout=60000)
    tab(page, "Head ablation")
    page.wait_for_selector("#ablate_cross label", timeout=30000)
    page.click("#ablate_cross label:has-text('L1 H1')")
    page.click("#ablate_run")
    page.wait_for_function("document.querySelector('#ablated_translation textarea').value !== ''", timeout=60000)
    tab(page, "Beam search")
    page.click("#beam_run")
    page.wait_for_function("document.querySelectorAll('#attention_beam .lens-tok').length > 0", timeout=60000)
    tab(page, "Across layers")
    page.click("#layers_run")
    page.wait_for_function("document.querySelector('#word_align_summary') &&"
                           " document.querySelector('#word_align_summary').innerText.trim() !== ''", timeout=60000)
    tab(page, "Attention being learned")
    page.wait_for_function("document.querySelector('#learned_translation textarea') &&"
                           " document.querySelector('#learned_translation textarea').value !== ''", timeout=60000)
    learned = page.evaluate(LEARNED)
    tab(page, "Translate")
    text = page.inner_text("body") + page.input_value("#translation textarea")
    assert any(m in text for m in MARKS), "the old sentence's words are on the page before the change"
    return learned


def nothing_old_left(page, change, learned=""):
    page.wait_for_timeout(1500)  # answers of the old state that were under way have come by now
    for name in REPLACED[change]:
        tab(page, name)
        if change == "language switch":  # the old state's language: no text of the tab's results left in English
            data = [OLD, OLD_B, NEW] + page.eval_on_selector_all("textarea", "es => es.map(e => e.value)")
            said = [t for t in page.evaluate(SHOWN_TEXTS) if not t.startswith("Attention(Q, K, V)")]
            bad = offending(said, "de", sorted({d for d in data if d.strip()}, key=len, reverse=True))
            assert bad == [], (change, name, bad)
            continue
        text = page.inner_text("body") + " ".join(  # the box a user types in keeps what they typed: theirs
            page.eval_on_selector_all("textarea", "es => es.filter(e => !e.closest('#source')"
                                                  " && e.checkVisibility({visibilityProperty: true}))"
                                                  ".map(e => e.value)"))
        assert not [m for m in MARKS if m in text], (change, name, [m for m in MARKS if m in text])
    if change != "language switch":
        assert OLD not in page.evaluate(MAPS), (change, page.evaluate(MAPS))
        if "Compare" in REPLACED[change]:
            assert OLD not in page.evaluate(COMPARE_MAPS), (change, page.evaluate(COMPARE_MAPS))
        if "Attention being learned" in REPLACED[change]:
            tab(page, "Attention being learned")
            page.wait_for_function(f"{LEARNED} !== ''", timeout=30000)
            assert page.evaluate(LEARNED) != learned, (change, learned)  # the new model's own snapshots
    assert page.evaluate(RED) == [] and page.errors == [], change


def pick_example(page):
    seq = page.evaluate("window.__lens.state.traj ? window.__lens.state.traj.seq : null")
    choose(page, "examples", "Zeit")  # the example with "Zeit" in it
    page.wait_for_function(f"window.__lens.state.traj && window.__lens.state.traj.seq !== {seq or 'null'}",
                           timeout=60000)


def open_link_in_page(page):
    """A link opened in the page (what a lesson's view does): the whole value replaced by the link's."""
    page.evaluate(f"document.getElementById('link_box')?.link.open({json.dumps('?model=de-en&text=' + quote(NEW))})")
    page.wait_for_function(f"!document.getElementById('link_box')?.link.opening && window.__lens.state.traj"
                           f" && window.__lens.state.traj.p.input === {json.dumps(NEW)}", timeout=60000)


def switch_language(page):
    page.select_option("#ui_language", "de")
    page.wait_for_function("document.getElementById('explain_box')?.explain.lang === 'de'", timeout=10000)


CHANGES = {
    "model switch": lambda page: choose_model(page, "English → German"),
    "new sentence": lambda page: start(page, NEW),
    "example pick": pick_example,
    "link opened": open_link_in_page,
    "language switch": switch_language,
}


KNOWN: dict = {}  # a change known to leave something old, marked xfail(strict=True) with why


@pytest.mark.parametrize("change", [pytest.param(c, marks=KNOWN.get(c, ())) for c in CHANGES])
def test_a_change_leaves_no_text_or_map_of_the_old_state_on_any_tab(served, change):
    url, b = served
    page = open_app(b, url, 1280, 800)
    start(page, OLD)
    learned = fill_every_tab(page)
    CHANGES[change](page)
    nothing_old_left(page, change, learned)
    page.close()


def test_a_lesson_next_leaves_no_text_or_map_of_the_old_view_on_any_tab(served):
    url, b = served
    views = [[f"model=de-en&text={quote(OLD)}", "one"], [f"model=de-en&text={quote(NEW)}", "two"]]
    page = open_link(b, f"{url}?lesson={lesson_param(views)}", "document.getElementById('lesson')?.lesson && "
                                                               "!document.getElementById('lesson')?.lesson.busy")
    shown(page, 0)
    fill_every_tab(page)
    page.click("#lesson_next")
    shown(page, 1)
    nothing_old_left(page, "lesson Next")
    page.context.close()


def test_the_top_k_is_drawn_once_from_the_payload(served):
    """Issue 57 item 2: Start's answer carries the top-k once (the payload's steps.topk) and the page draws it once,
    at the step the view shows (assets/lens_labels.js pushTopk); the top-k beside it is for programs only."""
    url, b = served
    page = open_app(b, url, 1280, 800)
    page.evaluate("document.getElementById('topk').topk.renders = 0")
    start(page, NEW)
    page.wait_for_timeout(1500)  # the server's answer to the top-k box, had it sent one, has been drawn by now
    assert page.evaluate("document.getElementById('topk').topk.renders") == 1
    first = page.eval_on_selector_all("#topk .topk-piece", "es => es.map(e => e.textContent)")
    assert first and page.evaluate("window.__lens.state.t") == 0
    assert page.errors == []
    page.close()
