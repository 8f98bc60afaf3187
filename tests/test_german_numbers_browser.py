"""Numbers on the German page are written with the German decimal comma (issue 58: "the German page reads like
German for a 16-year-old"): "Inside this head"'s table, the top-k list and the map's scale say 0,741 and 33,5 %,
the English page 0.741 and 33.5%, and a switch of #ui_language redraws them at once (the views' num / pct on
#explain_box's .explain, assets/explain.js: the browser's Intl.NumberFormat)."""
from __future__ import annotations

import re

import pytest

from tests.browser import go, open_app, start, tab_button

pytestmark = pytest.mark.browser
SENTENCE = "Das Wetter war gestern sehr schlecht."
READY = ("document.getElementById('inside')?.inside && document.getElementById('inside')?.inside.row && "
         "document.querySelectorAll('#topk .topk-p').length > 0")


def shown(page) -> dict:
    """The numbers as the page writes them: the table's weights and contributions, the top-k's shares, the scale."""
    return page.evaluate("""(() => {
      const rows = [...document.querySelectorAll('#inside [data-role=rows] tr:not([hidden])')];
      return {weights: rows.map(tr => tr.cells[5].textContent), contributions: rows.map(tr => tr.cells[7].textContent),
              scores: rows.map(tr => tr.cells[3].textContent),
              topk: [...document.querySelectorAll('#topk .topk-p')].map(e => e.textContent),
              zmax: document.querySelector('#attention [data-role=zmax]').textContent,
              row: document.getElementById('inside').inside.row.weight};
    })()""")


def german(s: str) -> float:
    return float(s.replace("\u00a0", " ").replace(" %", "").replace(",", "."))


def switch(page, lang: str, marker: str):
    page.select_option("#ui_language", lang)
    page.wait_for_function("(m) => [...document.querySelectorAll('#inside [data-role=rows] tr:not([hidden])')]"
                           ".every(tr => tr.cells[5].textContent.startsWith(m))", arg=marker, timeout=20000)


def check_german(n: dict):
    assert n["weights"] and all(re.fullmatch(r"[01],\d{3}", w) for w in n["weights"]), n["weights"]
    assert [german(w) for w in n["weights"]] == pytest.approx(n["row"], abs=6e-4)
    assert all(re.fullmatch(r"\d+,\d{3}", c) for c in n["contributions"]), n["contributions"]
    assert all(re.fullmatch(r"-?\d+,\d{1,3}", s) for s in n["scores"]), n["scores"]
    assert all(re.fullmatch(r"\d{1,3},\d\u00a0%", p) for p in n["topk"]), n["topk"]  # 33,5 %
    assert re.fullmatch(r"\d,\d{3}", n["zmax"]), n["zmax"]


def check_english(n: dict):
    assert n["weights"] and all(re.fullmatch(r"[01]\.\d{3}", w) for w in n["weights"]), n["weights"]
    assert [float(w) for w in n["weights"]] == pytest.approx(n["row"], abs=6e-4)
    assert all(re.fullmatch(r"\d+\.\d{3}", c) for c in n["contributions"]), n["contributions"]
    assert all(re.fullmatch(r"\d{1,3}\.\d%", p) for p in n["topk"]), n["topk"]  # 33.5%
    assert re.fullmatch(r"\d\.\d{3}", n["zmax"]), n["zmax"]


def stepped_page(served_browser, lang: str):
    """A page in `lang` at 1280x800, SENTENCE started and at step 2, Inside this head's table drawn."""
    url, b = served_browser
    page = open_app(b, url + f"?lang={lang}", 1280, 800)
    start(page, SENTENCE)
    go(page, 2)
    page.wait_for_function(READY, timeout=60000)
    return page


def test_the_german_page_writes_a_decimal_comma_and_a_switch_redraws(served_browser):
    page = stepped_page(served_browser, "de")
    check_german(shown(page))
    switch(page, "en", "0.")  # the same numbers, redrawn at once in English
    page.wait_for_function("document.querySelector('#topk .topk-p').textContent.includes('.')", timeout=20000)
    check_english(shown(page))
    switch(page, "de", "0,")
    page.wait_for_function("document.querySelector('#topk .topk-p').textContent.includes(',')", timeout=20000)
    check_german(shown(page))
    assert page.errors == []


def test_the_english_page_keeps_its_decimal_point(served_browser):
    page = stepped_page(served_browser, "en")
    check_english(shown(page))
    assert page.errors == []


def test_the_atlas_plots_write_their_numbers_as_the_page(served_browser):
    """The Head atlas's Plotly figures (drawn in the browser, assets/atlas.js) get Plotly's layout `separators` of
    the page's language: ',.' in German (ticks and hovers 0,5), '.,' in English, again at once after a switch."""
    url, b = served_browser
    page = open_app(b, url + "?lang=de", 1280, 800)
    page.click(tab_button("Head atlas"))
    seps = ("[...document.querySelectorAll('#atlas [data-role=grid], #atlas [data-role=curve]')]"
            ".map(e => e.layout && e.layout.separators)")
    page.wait_for_function(f"{seps}.every(s => s === ',.')", timeout=60000)
    page.select_option("#ui_language", "en")
    page.wait_for_function(f"{seps}.every(s => s === '.,')", timeout=20000)
    assert page.errors == []


def test_the_german_ablation_tables_show_the_comma_and_keep_their_numbers(served_browser):
    """Head ablation's two tables on the German page: their numbers shown 0,1234 (the server's texts.shown_table,
    Gradio's display_value), while the table's data stay numbers."""
    url, b = served_browser
    page = open_app(b, url + "?lang=de", 1280, 800)
    start(page, SENTENCE)
    page.click(tab_button("Head ablation"))
    page.click("#ablate_suggest_1")  # one click: ticks the atlas's most important head and compares
    page.wait_for_selector("#ablate_probs .virtual-row", timeout=60000)
    rows = page.eval_on_selector_all("#ablate_probs .virtual-row", "rs => rs.map(r => [...r.querySelectorAll("
                                     "'.body-cell')].map(c => c.textContent.trim()))")
    assert rows and all(re.fullmatch(r"-?\d,\d+", c) for r in rows for c in r[2:5]), rows
    assert not any(re.search(r"\d\.\d", c) for r in rows for c in r), rows
    assert page.errors == []
