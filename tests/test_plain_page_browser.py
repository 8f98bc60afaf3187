"""The whole page reads plainly by default (issue 39 item 5), measured over what a reader sees: every tab (Translate
after a Start and a few steps, Compare, Head ablation and Beam search after a run, Across layers, Head atlas,
Attention being learned, Model), the plots' titles, the tooltips (the glossary's included) and the tour's stops,
in Chromium at 1280x800. Every sentence has at most 25 words, at most 3 % of the words are rare (wordfreq) besides
the catalogue's taught terms, and no plain text holds a formula; one click on "in detail" shows the precise texts.

The user's sentence, the model's output and pieces, the example sentences and numbers are data, not explanations:
inputs, chips, code and plot ticks are not read, and the words of the sentences decoded are not counted."""
from __future__ import annotations

import re

import pytest

from tests.browser import open_app, start
from tests.plain import FORMULA, MAX_RARE, MAX_TAUGHT, MAX_WORDS, rare, sentences, words
from transformer.beam import beam_search
from ui import texts

pytestmark = pytest.mark.browser
SENTENCE = "Das Wetter war gestern sehr schlecht."
TABS = ("Translate", "Compare", "Head ablation", "Beam search", "Across layers", "Head atlas",
        "Attention being learned", "Model")
# Every visible text, grouped by the block it stands in (a sentence across <b> or a glossary term stays whole), and
# the tooltips of visible elements; never inputs, code, chips or the plots' ticks (the plots' titles come from their
# layouts). Each block once: the texts shown on more than one tab are one text of the page.
SEEN = """() => {
  const SKIP = "script, style, textarea, input, select, option, code, pre, svg, canvas, .lens-tok, .topk-list, " +
    ".cmp-src, .cmp-tr, [data-role=target], [data-role=source], .driver-popover, footer, .icon-button-wrapper";
  const blockOf = (e) => { while (e.parentElement && getComputedStyle(e).display === "inline")
    e = e.parentElement; return e; };
  const blocks = new Map(), titles = new Set(), plots = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const n = walk.currentNode, e = n.parentElement;
    if (!e || !n.nodeValue.trim() || e.closest(SKIP)) continue;
    if (!e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    const b = blockOf(e);
    blocks.set(b, (blocks.get(b) || "") + n.nodeValue);
  }
  for (const e of document.querySelectorAll("[title]"))
    if (e.title.trim() && e.checkVisibility({checkVisibilityCSS: true}) && !e.closest("svg")) titles.add(e.title);
  for (const gd of document.querySelectorAll(".js-plotly-plot")) {
    if (!gd.checkVisibility() || !gd.layout) continue;
    const l = gd.layout, t = (x) => x && (typeof x === "string" ? x : x.text);
    plots.push(t(l.title));
    for (const k of Object.keys(l)) if (/^[xy]axis\\d*$/.test(k)) plots.push(t(l[k].title));
    for (const d of gd.data || []) if (d.colorbar) plots.push(t(d.colorbar.title));
  }
  return [...blocks.values(), ...titles, ...plots.filter(Boolean).map(s => s.replace(/<[^>]+>/g, " "))]
    .map(s => s.replace(/\\s+/g, " ").trim()).filter(s => /[A-Za-z]{2}/.test(s));
}"""


def shown(page, texts_seen: set):
    texts_seen.update(page.evaluate(SEEN))


def open_tab(page, name: str):
    page.get_by_role("tab", name=name).click()
    page.wait_for_timeout(300)


def run_tab(page, name: str):
    """Open a tab and do what a reader does there first, until what it shows has come."""
    open_tab(page, name)
    if name == "Compare":
        page.click("#compare_start")
        page.wait_for_selector("#compare [data-role=panels]:not([hidden])", timeout=60000)
    elif name == "Head ablation":
        page.wait_for_selector("#tab_ablation .prose", state="visible", timeout=30000)
        page.locator("#ablate_cross").get_by_label("L1 H1").check()
        page.click("#ablate_run")
        page.wait_for_function("window.__lensViews['attention_ablated'] && window.__lensViews['attention_ablated']"
                               ".renders > 0", timeout=60000)
    elif name == "Beam search":
        page.click("#beam_run")
        page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=60000)
    elif name == "Across layers":
        page.wait_for_selector("#tab_layers .js-plotly-plot", timeout=60000)
    elif name == "Head atlas":
        page.wait_for_function("window.__atlas && window.__atlas.renders > 0", timeout=60000)
    elif name == "Attention being learned":
        page.wait_for_selector("#tab_learned .js-plotly-plot", timeout=60000)
    elif name == "Model":
        page.wait_for_selector("#curves .js-plotly-plot", timeout=60000)
        page.wait_for_selector("#curves_note", state="visible", timeout=30000)
    page.wait_for_timeout(800)  # the last notes of the tab drawn


def tour_said(page) -> list[str]:
    """Every stop of the tour: its title and text, as shown."""
    page.click("#tour")
    page.wait_for_selector(".driver-popover", timeout=20000)
    said = []
    for n in range(page.locator(".lens-tour .tour-dots button").count()):
        page.click(f".lens-tour .tour-dots button:nth-child({n + 1})")
        page.wait_for_function(f"window.__tour.state().stop === {n}", timeout=10000)
        said.append(page.inner_text(".driver-popover-title") + ". " + page.inner_text(".driver-popover-description"))
    page.click("#tour")
    page.wait_for_function("!window.__tour.state().active", timeout=10000)
    return said


def data_words(translator, sentences_decoded) -> set[str]:
    """The words of the sentences decoded on the page and of the model's output for them (greedy and beam)."""
    out = set()
    for s in sentences_decoded:
        out |= set(words(s)) | set(words(translator.translate(s)))
        ids = translator.source_ids(s)
        for h in beam_search(translator.model, ids, 4).hypotheses:
            out |= set(words(translator.tokenizer.decode(h.ids)))
    return out


def measure(said: list[str], data: set[str]) -> dict:
    taught = texts.catalogue()["taught"]
    ws = [w for t in said for w in words(t) if w not in data]
    odd = rare(ws, taught)
    return {"words": len(ws), "rare": odd, "share": len(odd) / max(1, len(ws)),
            "long": [s for t in said for s in sentences(t) if len(s.split()) > MAX_WORDS],
            "formulas": [t for t in said if FORMULA.search(t)]}


@pytest.fixture(scope="module")
def walked(served_browser, translator):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    start(page, SENTENCE)
    for _ in range(3):
        page.evaluate("window.__lens.ctl.step()")
    said: set[str] = set()
    for tab in TABS:
        run_tab(page, tab)
        shown(page, said)
    open_tab(page, "Translate")
    tour = tour_said(page)
    glossary = page.evaluate("Object.keys(window.__glossary.terms).map(k => window.__explain.t(`glossary.${k}`))")
    assert len(glossary) >= 9 and all(glossary)
    pairs = page.evaluate("[...document.querySelectorAll('#compare_a textarea, #compare_b textarea')].map(e => e.value)")
    return page, sorted(said | set(glossary)) + tour, data_words(translator, [SENTENCE, *pairs])


def test_the_page_reads_plainly_by_default(walked):
    page, said, data = walked
    m = measure(said, data)
    assert len(texts.catalogue()["taught"]) <= MAX_TAUGHT
    assert m["words"] > 1000, m["words"]  # every tab was read
    assert m["long"] == [], m["long"]
    assert m["formulas"] == [], m["formulas"]
    assert m["share"] <= MAX_RARE, (f"{len(m['rare'])} of {m['words']} words rare ({100 * m['share']:.1f} %)",
                                    sorted(set(m["rare"])))
    assert page.errors == []


def test_in_detail_the_precise_texts_are_shown(walked):
    page, _, _ = walked
    page.click("#explain_detail")
    try:
        open_tab(page, "Model")
        card, note = page.inner_text("#model_card"), page.inner_text("#curves_note")
        assert "d_model" in card and "SentencePiece" in card and "How it is built" not in card
        assert "label smoothing" in note and "on purpose" not in note
        assert re.search(r"ε = [\d.]+", note), note
        open_tab(page, "Head atlas")
        assert "Voita et al. 2019" in page.inner_text("#atlas") and "≥" in page.inner_text("#atlas")
        open_tab(page, "Compare")
        assert "minimal pair" in page.inner_text("#compare_intro") and "A − B" in page.inner_text("#compare_intro")
        open_tab(page, "Translate")  # the inside panel's formula, stages and column heads; the map's help and grid
        inside = page.inner_text("#inside")
        assert "softmax(Q·Kᵀ / √dk) · V" in inside and "⑤ Σ wᵢvᵢ" in inside and "out = Σ wᵢvᵢ" in inside, inside
        assert "÷√" in page.inner_text("#inside [data-role=scaledhead]")
        assert "q·k" in page.get_attribute("#inside th[data-tip='inside.th_score_tip']", "title")
        assert "Rows are queries" in page.inner_text("#attention .lens-help")
        assert "layers × " in page.inner_text("#attention [data-role=grid-title]")
    finally:
        page.click("#explain_plain")
        open_tab(page, "Translate")
    assert page.errors == []
