"""Explanations where a newcomer stopped (issue 22, items 8-11, 13-16), seen in Chromium at 1280x800: the piece
legend by the chips, Layer/Head drawn as choices, the finished row, switched-off heads, the architecture strip.
Sizes, pieces and translations are read from the loaded model at test time, never written here."""
import pytest

from tests.browser import open_app, pick, renders, start, view, wait_render
from transformer.interpret import analysis
from transformer.model.tokenizer import SPECIAL_PIECES

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 800
# a compound no subword vocabulary of a few thousand pieces holds whole, so it is split into several pieces
SENTENCE = "Die Donaudampfschifffahrtsgesellschaft hat gestern ein Schiff gekauft."


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    p = open_app(b, url, width=WIDTH)
    p.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    yield p



def shortest_split_word(pieces: list[str]) -> tuple[str, list[str]] | None:
    """The shortest word made of several pieces, each with a letter (the first of equals): (word, pieces)."""
    best = None
    for a, b in analysis.word_spans(pieces):
        word = "".join(pieces[a:b]).replace("\u2581", "")
        letters = all(any(ch.isalpha() for ch in p) and p not in SPECIAL_PIECES for p in pieces[a:b])
        if b - a > 1 and letters and (best is None or len(word) < len(best[0])):
            best = word, pieces[a:b]
    return best


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH


# -- 8: what ▁ means, and why a word becomes several pieces -----------------------------------------------

def test_piece_legend_by_the_chips(page, translator):
    start(page, SENTENCE)
    tok = translator.tokenizer
    src = tok.pieces(tok.encode(SENTENCE)) + ["</s>"]
    split = shortest_split_word(src)
    assert split is not None, "the test sentence must hold a word of several pieces"
    legend = page.locator("#attention [data-role=legend]")
    assert legend.is_visible() and in_viewport(page, "#attention [data-role=legend]")
    text = legend.inner_text()
    assert "\u2581" in text and "starts a word" in text
    word, pieces = split
    assert f"{word} \u2192 {' '.join(pieces)}" in text  # this sentence's own example, e.g. gestern → ▁ge st ern
    # right below the chips: the legend's top is within a line of the chips' bottom
    chips, leg = page.locator("#attention [data-role=target]").bounding_box(), legend.bounding_box()
    assert 0 <= leg["y"] - (chips["y"] + chips["height"]) < 24


# -- 9: Layer and Head are choices, and "mean" is one of them ---------------------------------------------

def test_layer_and_head_look_like_choices(page):
    start(page, SENTENCE)
    for role in ("layer", "head"):
        style = page.eval_on_selector(f"#attention [data-role={role}]", """s => {
            const c = getComputedStyle(s); return {appearance: c.appearance, image: c.backgroundImage}; }""")
        assert style["appearance"] != "none" or "url(" in style["image"], (role, style)  # an arrow is drawn
    labels = page.eval_on_selector_all("#attention [data-role=head] option", "os => os.map(o => o.textContent)")
    assert labels[-1] == "mean of heads"
    pick(page, head="mean")
    assert "mean of heads" in view(page)["title"]


# -- 10: the row of </s> once the sentence has finished ----------------------------------------------------

def test_finished_row_is_explained(page, translator):
    start(page, SENTENCE)
    session = translator.start(SENTENCE).run()
    assert session.target_tokens[-1] == "</s>", "the test sentence must finish within the length limit"
    page.evaluate("window.__lens.ctl.run()")
    for kind in ("cross", "decoder_self"):
        pick(page, kind=kind)
        v = view(page)
        assert v["y"][-1] == "</s> \u2192 (finished)", v["y"][-1]
        assert all(not y.endswith("?") for y in v["y"])
    status = page.inner_text("#attention [data-role=status]")
    assert "finished" in status and "not used" in status
    page.evaluate("window.__lens.ctl.back()")  # one step earlier the last row predicts </s>: no note
    assert "not used" not in page.inner_text("#attention [data-role=status]")
    assert view(page)["y"][-1].endswith("\u2192 </s>")


# -- 16: the architecture strip ------------------------------------------------------------------------------

def arch_state(page) -> dict:
    return page.evaluate("""() => { const on = document.querySelector('#arch .arch-on');
        return {kind: on && on.dataset.kind, layer: on && +on.dataset.layer,
                qkv: document.querySelector('#arch [data-role=qkv]').textContent}; }""")


def test_arch_strip_matches_the_model(page, translator):
    start(page, SENTENCE)
    L_enc, L_dec = len(translator.model.encoder), len(translator.model.decoder)
    count = lambda sel: page.locator(f"#arch {sel}").count()
    assert count("[data-kind=encoder_self]") == L_enc
    assert count("[data-kind=decoder_self]") == L_dec and count("[data-kind=cross]") == L_dec
    assert count("[data-sublayer=ffn]") == L_enc + L_dec
    assert count("[data-sublayer=norm]") == 2 * L_enc + 3 * L_dec  # pre-LN: one layer norm before each sublayer
    assert count("[data-sublayer=residual]") == 2 * L_enc + 3 * L_dec
    assert page.locator("#arch").is_visible() and in_viewport(page, "#arch")


def test_arch_strip_follows_and_selects(page, translator):
    start(page, SENTENCE)
    L_dec = len(translator.model.decoder)
    pick(page, kind="decoder_self", layer=L_dec - 1, head=0)
    page.wait_for_function(f"document.querySelector('#arch .arch-on').dataset.layer === '{L_dec - 1}'")
    a = arch_state(page)
    assert a["kind"] == "decoder_self" and a["layer"] == L_dec - 1
    assert "written before it, never ahead" in a["qkv"]  # plain by default (issue 39 item 5)
    page.click("#explain_detail")
    page.wait_for_function("document.querySelector('#arch [data-role=qkv]').textContent.includes('Masked')")
    a = arch_state(page)
    assert "masked" in a["qkv"].lower() and "earlier" in a["qkv"]
    n = renders(page)
    page.click("#arch [data-kind=encoder_self][data-layer='0']")  # a click on a block opens it in the view
    wait_render(page, n)
    st = page.evaluate("window.__lens.state")
    assert (st["kind"], st["layer"], st["head"]) == ("encoder_self", 0, 0)
    assert view(page)["title"].startswith("Encoder self-attention · layer 1 · head 1")
    assert arch_state(page)["kind"] == "encoder_self"
    n = renders(page)
    page.click(f"#arch [data-kind=cross][data-layer='{L_dec - 1}']")
    wait_render(page, n)
    shown = (page.evaluate("window.__lens.state.kind"), page.evaluate("window.__lens.state.layer"))
    assert shown == ("cross", L_dec - 1)
    qkv = arch_state(page)["qkv"]
    assert "queries from the decoder" in qkv and "keys and values from the encoder" in qkv
    assert "once per sentence" in qkv
    page.click("#explain_plain")
    page.wait_for_function("document.querySelector('#arch [data-role=qkv]').textContent"
                           ".includes('looks at your sentence')")
    assert "used at every step" in arch_state(page)["qkv"] and page.errors == []


# -- 11: switched-off heads: their weights are computed, their outputs zeroed --------------------------------

TAB_IDS = {"Head ablation": "tab_ablation", "Beam search": "tab_beam", "Across layers": "tab_layers"}


def open_tab(page, name):
    """Select a tab; a tab whose Markdown is loaded when first opened (attention_lens/shell/first_load.py): until its
    text shows."""
    page.get_by_role("tab", name=name).click()
    if name in TAB_IDS:  # every Markdown of the tab drawn (each is shown by the tab's first-open event)
        page.wait_for_selector(f"#{TAB_IDS[name]} .prose", state="visible", timeout=30000)
        page.wait_for_timeout(500)


def test_switched_off_heads_are_greyed_and_said_so(page, translator):
    start(page, SENTENCE)
    L, H = len(translator.model.decoder), translator.config.n_heads
    off = [(L - 1, 0), (L - 1, H - 1)]
    open_tab(page, "Head ablation")
    page.locator("#tab_ablation", has_text="zeroed").wait_for(state="attached", timeout=30000)
    intro = page.inner_text("#tab_ablation")  # plain by default (issue 39 item 5), the precise words in detail
    assert "still looks at the words" in intro and "thrown away" in intro, intro[:600]
    page.click("#explain_detail")
    intro = page.inner_text("#tab_ablation")
    assert "computes its attention weights" in intro and "zeroed" in intro, intro[:600]
    page.click("#explain_plain")
    for l, h in off:
        page.locator("#ablate_cross").get_by_label(f"L{l + 1} H{h + 1}").check()
    views = "document.getElementById('attention_ablated')?.lens"
    n = page.evaluate(f"{views} ? {views}.renders : 0")
    page.click("#ablate_run")
    page.wait_for_function(f"{views} && {views}.renders > {n}", timeout=30000)
    page.evaluate(f"{views}.select('cross', {L - 1}, 0)")
    v = page.evaluate(f"{views}.view()")
    assert "switched off" in v["title"] and "computed" in v["title"] and "zeroed" in v["title"]
    assert sorted(map(tuple, page.evaluate(f"{views}.grid().off"))) == off  # greyed panels in the grid
    page.evaluate(f"{views}.select('cross', 0, 0)")  # an intact head: no note
    assert "switched off" not in page.evaluate(f"{views}.view()")["title"]
    page.evaluate(f"{views}.select('encoder_self', {L - 1}, 0)")  # same layer and head, another kind: intact
    assert page.evaluate(f"{views}.grid().off") == []
    page.evaluate(f"{views}.select('cross', {L - 1}, 'mean')")
    assert f"{len(off)} of {H} heads switched off" in page.evaluate(f"{views}.view()")["title"]
    open_tab(page, "Translate")
    assert page.errors == []


# -- 13, 14: the beam's ranks and scores, the Model tab's curves, rollout --------------------------------------

def visible_text(page, selector: str, *phrases) -> None:
    """Each phrase is in an element matching selector that lies inside the 1280-px-wide viewport."""
    for phrase in phrases:
        loc = page.locator(selector, has_text=phrase).first
        loc.wait_for(state="visible", timeout=20000)
        loc.scroll_into_view_if_needed()
        box = loc.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, phrase


def test_beam_tab_explains_ranks_and_scores(page):
    start(page, SENTENCE)
    open_tab(page, "Beam search")
    visible_text(page, "#tab_beam .prose .x-plain", "so a step can show more", "average score per piece")
    page.click("#explain_detail")  # the precise version one click away (issue 39 item 5)
    visible_text(page, "#tab_beam .prose .x-detail", "more than the beam size", "log-probability per piece")
    page.click("#explain_plain")
    views = "document.getElementById('attention_beam')?.lens"
    n = page.evaluate(f"{views} ? {views}.renders : 0")
    page.click("#beam_run")
    page.wait_for_function(f"{views} && {views}.renders > {n}", timeout=30000)
    page.wait_for_selector("#beam_tree .js-plotly-plot", timeout=20000)
    tree = page.evaluate("""() => { const d = document.querySelector('#beam_tree .js-plotly-plot');
        return {title: d.layout.yaxis.title.text,
                ys: d.data.filter(t => t.mode === 'markers+text').flatMap(t => t.y)}; }""")
    assert "1 is the best" in tree["title"] and min(tree["ys"]) == 1
    assert "per piece" in page.input_value("#beam_choice input")
    open_tab(page, "Translate")


def test_model_and_layers_tabs_explain(page):
    open_tab(page, "Model")
    visible_text(page, "#curves_note .x-plain", "on purpose", "at random")
    page.click("#explain_detail")
    visible_text(page, "#curves_note .x-detail", "dropout", "label smoothing")
    page.click("#explain_plain")
    open_tab(page, "Across layers")
    visible_text(page, "#tab_layers .prose .x-plain", "a rollout, follows attention")
    page.click("#explain_detail")
    visible_text(page, "#tab_layers .prose .x-detail", "residual", "0.5")
    page.click("#explain_plain")
    open_tab(page, "Translate")
