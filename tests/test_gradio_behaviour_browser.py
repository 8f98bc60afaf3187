"""The Gradio 6.31 behaviours the page works around, in Chromium on a page of a few components (no model): each test
passes while Gradio behaves so and fails the day it stops, when its workaround can go: G1 in
attention_lens/shell/page_state.py
(docs/design.md, "The page's state"); gr.Tabs' keys in assets/tab_keys.js; a gr.Dropdown showing its label, not its
value (attention_lens/app.py PICKED_JS); a gr.Dropdown's input event fired twice by one mouse pick
(attention_lens/translate/tab.py ONE_PICK); a stream closed under a new event (attention_lens/translate/tab.py
wire_hint)."""
from __future__ import annotations

import gradio as gr
import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser


LABELS = gr.I18n(en={"one": "One", "two": "Two"}, de={"one": "Eins", "two": "Zwei"})


def little_page() -> gr.Blocks:
    with gr.Blocks() as demo:
        same = gr.Button("same", elem_id="same")
        box = gr.Textbox("", visible=False)
        same.click(lambda: "the same value", None, box)
        box.change(None, None, None, js="() => { window.__changes = (window.__changes || 0) + 1; }")
        pick = gr.Dropdown([("German → English", "de-en"), ("English → German", "en-de")], value="de-en",
                           elem_id="pick", interactive=True)
        pick.input(None, None, None, js="() => { window.__inputs = (window.__inputs || 0) + 1; }")
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab(LABELS("one"), id="one"):
                gr.Textbox("one", elem_id="in_one")
            with gr.Tab(LABELS("two"), id="two"):
                gr.Textbox("two", elem_id="in_two")
    return demo


@pytest.fixture(scope="module")
def page():
    require_chromium()
    from tests.serving import chromium, launched
    with launched(little_page(), i18n=LABELS) as url, chromium() as b:
        p = b.new_page(locale="en-US")
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



def test_one_mouse_pick_on_a_dropdown_fires_its_input_event_twice(page):
    """attention_lens/translate/tab.py ONE_PICK: one pick with the mouse, two input events (one pick with the keyboard:
    one). The day Gradio fires one, this fails and ONE_PICK can go."""
    page.evaluate("window.__inputs = 0")
    page.click("#pick input")
    page.locator("li[data-testid=dropdown-option]", has_text="English → German").first.click()
    page.wait_for_timeout(1000)
    assert page.evaluate("window.__inputs") == 2
    page.click("#pick input")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    page.wait_for_timeout(1000)
    assert page.evaluate("window.__inputs") == 3


def test_gradios_tabs_ignore_the_arrow_keys(page):
    """assets/tab_keys.js: on a tab of a bare gr.Tabs, → chooses nothing (WAI-ARIA's tabs pattern has it choose the
    next tab). The day Gradio does it, this fails and tab_keys.js can go."""
    page.click("#tabs button[role=tab][data-tab-id=one]")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(800)
    assert page.get_attribute("#tabs button[role=tab][data-tab-id=one]", "aria-selected") == "true"
    assert page.is_visible("#in_one") and not page.is_visible("#in_two")


def test_a_dropdown_shows_its_choices_label_not_its_value(page):
    """attention_lens/app.py PICKED_JS: the page's scripts learn the model picked from the picker's change event, since
    nothing in
    a gr.Dropdown's page says its value (its box shows the label; no option is in the page until it is opened)."""
    assert page.input_value("#pick input") == "German → English"
    assert page.locator("#pick [data-value], #pick option, #pick select").count() == 0


def test_a_locale_change_leaves_a_tab_not_shown_in_the_old_language(page):
    """assets/i18n.js relabelTabs: Gradio's changeLocale (what the page's language switch calls) relabels the tab
    shown but not a tab never shown. The day it relabels both, this fails and relabelTabs can go."""
    page.click("#tabs button[role=tab][data-tab-id=one]")
    said = page.evaluate("""async () => {
      const core = performance.getEntriesByType("resource").map(e => e.name)
        .find(n => /\\/assets\\/core-[\\w-]+\\.js(\\?.*)?$/.test(n));
      (await import(core)).changeLocale("de");
      await new Promise(r => setTimeout(r, 800));
      const t = (id) => document.querySelector(`#tabs button[role=tab][data-tab-id=${id}]`).textContent.trim();
      const out = [t("one"), t("two")];
      (await import(core)).changeLocale("en");
      return out; }""")
    assert said == ["Eins", "Two"]


def test_an_event_joined_before_the_page_reads_the_close_of_its_stream_is_never_answered(page):
    """G-stream (attention_lens/translate/tab.py wire_hint): when the server ends a page's stream of answers
    (close_stream: no
    event of the page left) and the page reads that only after a new event's join was answered, Gradio's client opens
    no new stream and the new event's answer never reaches the page. The app keeps events that precede a Start by
    milliseconds off the queue. When this test fails, Gradio reopens the stream: the workaround can go."""
    from tests.serving import launched
    with gr.Blocks() as demo:
        a, b, out = gr.Button("A", elem_id="a"), gr.Button("B", elem_id="b"), gr.Textbox(elem_id="out")
        a.click(lambda: "a", None, out)
        b.click(lambda: "b", None, out)
    with launched(demo) as url:
        page = page.context.browser.new_page()
        held, joins = [], []

        def hold(route):  # the stream, given to the page only after B has joined
            if len(held) >= 1:
                route.continue_()
                return
            held.append((route, route.fetch()))  # all of it: the server ends it after A's answer

        page.route("**/queue/data*", hold)
        page.on("requestfinished", lambda r: joins.append(r.url) if "queue/join" in r.url else None)
        page.goto(url)
        page.click("#a")
        for _ in range(300):
            if held:
                break
            page.wait_for_timeout(100)
        page.click("#b")
        for _ in range(300):
            if len(joins) == 2:
                break
            page.wait_for_timeout(100)
        held[0][0].fulfill(response=held[0][1])
        page.wait_for_timeout(3000)  # B's answer, had it come, was drawn long before (it is computed at once)
        assert page.input_value("#out textarea") == "a"
        page.close()
