"""Measures of plain English for the page's texts (issue 39 item 5), shared by tests/test_texts.py (the catalogue)
and the browser test of the page's own texts: sentences of at most MAX_WORDS words, at most MAX_RARE of the words
rare by wordfreq (Zipf frequency under RARE_ZIPF), not counting the catalogue's taught terms. Below them, the walk
over every tab and tour stop that gathers what a reader sees (SEEN, run_tab, tour_said), shared by the browser
tests of the plain page and of the page in German (issue 44)."""
from __future__ import annotations

import re

from wordfreq import tokenize, zipf_frequency

MAX_WORDS = 25
MAX_RARE = 0.03
RARE_ZIPF = 3.5
MAX_TAUGHT = 10
# no formula, no symbol of one, no paper: what a plain text never holds
FORMULA = re.compile(r"[‖√Σ×ᵀ∑^=]|\w_\w|\bq·k|·v\b|\bsoftmax\b|\blog-prob|\bet al\b|\(\w+ (?:&|and) \w+ \d{4}\)|"
                     r"\b(?:19|20)\d\d\b")


def strip_markup(text: str) -> str:
    """Markdown and HTML to their words: tags, emphasis, code marks and headings out."""
    text = re.sub(r"<[^>]+>|\{\w+\}", " ", text)  # tags, and a text's blanks ({dk}: filled in by the page)
    return re.sub(r"[*_`#]+", "", text)


def sentences(text: str) -> list[str]:
    """Sentences: split after . ! ? (and at line breaks, which end a title or a list item)."""
    parts = re.split(r"(?<=[.!?])\s+|\n+", strip_markup(text))
    return [p.strip() for p in parts if re.search(r"[A-Za-z]", p or "")]


def words(text: str, lang: str = "en") -> list[str]:
    """Words as wordfreq splits them in `lang`, letters only (numbers, arrows and pieces such as ▁Hund are not
    words)."""
    ws = tokenize(strip_markup(text).replace("▁", " "), lang)
    letter = "a-z" if lang == "en" else "a-zäöüß"
    return [re.sub(r"'s$", "", w) for w in ws if re.fullmatch(rf"[{letter}]+(?:'[a-z]+)?", w)]  # word's: word


def rare(ws: list[str], taught=(), lang: str = "en") -> list[str]:
    """The rare words of `ws` by `lang`'s frequencies, the taught terms aside."""
    return [w for w in ws if w not in taught and zipf_frequency(w, lang) < RARE_ZIPF]


def long_sentences(text: str) -> list[str]:
    return [s for s in sentences(text) if len(s.split()) > MAX_WORDS]


# -- what a reader sees on the page (the browser tests of the page's texts: plain, German) ---------------------------
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
    """The tab `name` (its English name; Gradio's tab button carries its id in every language) chosen."""
    from tests.browser import tab_button
    page.click(tab_button(name))
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
        page.wait_for_function("document.getElementById('attention_ablated')?.lens?.renders > 0", timeout=60000)
    elif name == "Beam search":
        page.click("#beam_run")
        page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=60000)
    elif name == "Across layers":
        page.wait_for_selector("#tab_layers .js-plotly-plot", timeout=60000)
    elif name == "Head atlas":
        page.wait_for_function("document.getElementById('atlas')?.atlas && "
                               "document.getElementById('atlas')?.atlas.renders > 0", timeout=60000)
    elif name == "Attention being learned":
        page.wait_for_selector("#tab_learned .js-plotly-plot", timeout=60000)
    elif name == "Model":
        page.wait_for_selector("#curves .js-plotly-plot", timeout=60000)
        page.wait_for_selector("#curves_note", state="visible", timeout=30000)
    page.wait_for_timeout(800)  # the last notes of the tab drawn


def tour_said(page, also=None) -> list[str]:
    """Every stop of the tour: its title and text, as shown (`also(page, "Tour")` at the first stop)."""
    page.click("#tour")
    page.wait_for_selector(".driver-popover", timeout=20000)
    if also:
        also(page, "Tour")
    said = []
    for n in range(page.locator(".lens-tour .tour-dots button").count()):
        page.click(f".lens-tour .tour-dots button:nth-child({n + 1})")
        page.wait_for_function(f"document.getElementById('tour_box')?.tour.state().stop === {n}", timeout=10000)
        said.append(page.inner_text(".driver-popover-title") + ". " + page.inner_text(".driver-popover-description"))
    page.click("#tour")
    page.wait_for_function("!document.getElementById('tour_box')?.tour.state().active", timeout=10000)
    return said



def walk_page(page, sentence: str, also=None) -> tuple[set, list[str], list[str]]:
    """A reader's walk of the whole page: the page as it opens (nothing started), then `sentence` started and 3 steps,
    every tab's first action, back to Translate, the tour. (texts seen on the tabs, the tour's stops, the glossary's
    texts). `also(page, tab)`: called on each tab once its action is done (with "Opened" on the page as it opens and
    "Tour" at the tour's first stop)."""
    from tests.browser import start
    said: set[str] = set()
    shown(page, said)  # what a first-time reader meets before pressing anything
    if also:
        also(page, "Opened")
    start(page, sentence)
    for _ in range(3):
        page.evaluate("window.__lens.ctl.step()")
    for tab in TABS:
        run_tab(page, tab)
        shown(page, said)
        if also:
            also(page, tab)
    open_tab(page, "Translate")
    tour = tour_said(page, also)
    glossary = page.evaluate("Object.keys(document.getElementById('glossary')?.glossary.terms)"
                             ".map(k => document.getElementById('explain_box')?.explain.t(`glossary.${k}`))")
    return said, tour, glossary


def text_keys(said) -> list[str]:
    """The texts that show a key of the catalogues instead of its text: a label's or a text's key with _ or . in
    it (`lesson_count_0`, `glossary.rollout`), or any snake_case word."""
    from attention_lens.shell import texts
    keys = {k for lang in texts.LANGS for k in texts.labels(lang)} | set(texts.flat("en"))
    keys = sorted((k for k in keys if re.search(r"[_.]", k)), key=len, reverse=True)
    key = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, keys)) + r")(?!\w)|\b[a-z]+(?:_[a-z0-9]+)+\b")
    return sorted({t for t in said if key.search(t)})


def lesson_tools(page) -> set[str]:
    """What the lesson's tools show a teacher (the count of views among them), opened and closed again."""
    page.click("#lesson_open")
    page.wait_for_selector("#lesson_add", state="visible")
    page.wait_for_timeout(300)
    seen: set[str] = set()
    shown(page, seen)
    page.click(".lesson-make [data-role=close]")
    return seen


class Localized:
    """A browser whose pages open in a context with `locale` (what open_app needs of a browser: new_page)."""

    def __init__(self, b, locale: str):
        self.b, self.locale = b, locale

    def new_page(self, viewport):
        return self.b.new_context(locale=self.locale, viewport=viewport).new_page()


def data_of(translator, page, sentence: str) -> list[str]:
    """The sentences decoded on the page (`sentence`, Compare's pair) and the model's outputs for them (greedy and
    beam), longest first."""
    from transformer.decode.beam import beam_search
    pairs = page.evaluate("[...document.querySelectorAll('#compare_a textarea, #compare_b textarea')]"
                          ".map(e => e.value)")
    out = set()
    for s in [sentence, *pairs]:
        out |= {s, translator.translate(s)}
        for h in beam_search(translator.model, translator.source_ids(s), 4).hypotheses:
            out.add(translator.tokenizer.decode(h.ids))
    return sorted((s for s in out if s.strip()), key=len, reverse=True)
