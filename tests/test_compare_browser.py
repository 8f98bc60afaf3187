"""Two sentences side by side in Chromium (issue 28, item 3): "Start both" brings both trajectories at once; one
player and one head move both with the server cut off; the maps are the model's own, and the difference is A − B
where the pieces line up (the same piece, ignoring capitals and ▁, the same occurrence of it). The tab follows the
chosen model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attention_lens.compare.tab import PAIRS
from tests.browser import choose_model, open_app, serve

pytestmark = pytest.mark.browser
KINDS = ["encoder_self", "decoder_self", "cross"]


@pytest.fixture(scope="module")
def page(served_browser):
    url, b = served_browser
    yield open_app(b, url, 1280, 800)


def shown(page) -> dict:
    return page.evaluate("document.getElementById('compare')?.compare.view()")


def start_both(page):
    seq = page.evaluate("document.getElementById('compare')?.compare.renders")
    page.click("#compare_start")
    page.wait_for_function(f"document.getElementById('compare')?.compare.view() !== null && "
                           f"document.getElementById('compare')?.compare.renders > {seq} && "
                           "document.getElementById('compare')?.compare.state.t === 0", timeout=60000)


def partners(a, b):
    """The alignment the page explains, written again: the k-th occurrence of a piece (lowercased, ▁ dropped) in a
    with its k-th occurrence in b; then each run of a's pieces left without one with b's unpaired pieces between its
    neighbours' partners, in order, the run's last piece taking any left over. A list of b's indices per piece."""
    norm = lambda p: p.removeprefix("\u2581").lower()
    seen, out = {}, []
    for p in a:
        k = norm(p)
        js = [j for j, x in enumerate(b) if norm(x) == k]
        c = seen.get(k, 0)
        seen[k] = c + 1
        out.append([js[c]] if c < len(js) else [])
    used = {j for js in out for j in js}
    i = 0
    while i < len(a):
        if out[i]:
            i += 1
            continue
        e = i
        while e < len(a) and not out[e]:
            e += 1
        lo = out[i - 1][-1] if i > 0 else -1
        hi = out[e][0] if e < len(a) else len(b)
        for n, j in enumerate(j for j in range(lo + 1, hi) if j not in used):
            out[min(i + n, e - 1)].append(j)
        i = e
    return out


def check_maps(translator, v, texts):
    """Both maps are the model's own (the trajectory Start decodes), and the third is A − B on the partners."""
    kind, layer, head = v["kind"], v["layer"], v["head"]
    for side, text, t in (("a", texts[0], v["ta"]), ("b", texts[1], v["tb"])):
        full = getattr(translator.trajectory(text).maps, kind)[layer, head]
        rows = full.shape[0] if kind == "encoder_self" else t + 1
        cols = t + 1 if kind == "decoder_self" else full.shape[1]
        np.testing.assert_allclose(np.array(v[side]["z"]), full[:rows, :cols], atol=1e-4)
    a, b, d = v["a"], v["b"], v["diff"]
    ri, cj = partners(a["rows"], b["rows"]), partners(a["cols"], b["cols"])
    for i, r in enumerate(ri):
        for j, c in enumerate(cj):
            if not r or not c:
                assert d["z"][i][j] is None
            else:
                assert d["z"][i][j] == pytest.approx(a["z"][i][j] - sum(b["z"][r[0]][x] for x in c), abs=1e-5)
    return sum(bool(r) for r in ri), sum(bool(c) for c in cj)


def test_both_sentences_step_in_lockstep_with_the_server_cut_off(page, translator):
    page.get_by_role("tab", name="Compare").click()
    a0, b0, _ = PAIRS["de"][0]
    assert (page.input_value("#compare_a textarea"), page.input_value("#compare_b textarea")) == (a0, b0)
    start_both(page)
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.route("**/gradio_api/**", lambda r: r.abort())  # from here on the server is unreachable
    try:
        ends = [translator.trajectory(x).n - 1 for x in (a0, b0)]
        for t in range(1, max(ends) + 1):
            page.click("#compare [data-role=step]")
            v = shown(page)
            assert (v["t"], v["ta"], v["tb"]) == (t, min(t, ends[0]), min(t, ends[1]))
        assert "finished" in page.inner_text("#compare [data-role=tr-a]")
        page.click("#compare [data-kind=decoder_self]")
        page.select_option("#compare [data-role=layer]", "2")
        page.select_option("#compare [data-role=head]", "3")
        page.focus("#compare .cmp")
        page.keyboard.press("ArrowLeft")  # one step back with the keyboard
        v = shown(page)
        assert (v["kind"], v["layer"], v["head"], v["t"]) == ("decoder_self", 1, 2, max(ends) - 1)
        rows, cols = check_maps(translator, v, (a0, b0))
        assert rows > 0 and cols > 0 and v["aligned"] == {"rows": rows, "cols": cols}
        page.eval_on_selector("#compare [data-role=scrub]",
                              "e => { e.value = '2'; e.dispatchEvent(new Event('input', {bubbles: true})); }")
        page.click("#compare [data-kind=cross]")
        v = shown(page)
        assert (v["kind"], v["t"]) == ("cross", 2)
        rows, cols = check_maps(translator, v, (a0, b0))
        assert cols == len(v["a"]["cols"])  # the same words in another order: every source piece has a partner
        diffs = [x for row in v["diff"]["z"] for x in row if x is not None]
        assert max(abs(x) for x in diffs) > 0.01  # and attention differs: the difference is shown
        assert "line up with B" in page.inner_text("#compare [data-role=align]")
    finally:
        page.unroute("**/gradio_api/**")
    assert sent == [] and page.errors == []


def test_an_example_pair_fills_both_boxes(page, translator):
    page.get_by_role("tab", name="Compare").click()
    a1, b1, _ = PAIRS["de"][1]
    page.click("#compare_pairs")
    page.get_by_role("option", name=f"{a1}  |  {b1}", exact=False).click()
    page.wait_for_function(f"document.querySelector('#compare_a textarea')?.value === {json.dumps(a1)}", timeout=10000)
    assert page.input_value("#compare_b textarea") == b1
    start_both(page)
    page.click("#compare [data-role=step]")
    v = shown(page)
    assert v["a"]["rows"][:2] == v["b"]["rows"][:2]  # "Ich rufe dich (morgen) an.": the same start
    check_maps(translator, v, (a1, b1))
    ends = [translator.trajectory(x).n - 1 for x in (a1, b1)]
    assert ends[0] != ends[1]  # one translation is longer: the other waits at its end
    page.eval_on_selector("#compare [data-role=scrub]",
                          "e => { e.value = e.max; e.dispatchEvent(new Event('input', {bubbles: true})); }")
    v = shown(page)
    assert (v["t"], v["ta"], v["tb"]) == (max(ends), ends[0], ends[1])
    check_maps(translator, v, (a1, b1))
    assert page.errors == []


def test_start_both_with_a_sentence_it_cannot_read_says_so_under_the_boxes(page, translator):
    """Said by the page under the boxes (#compare_note), which no later server event can wipe, naming the sentence;
    the view is left as it was and nothing turns red; editing that box takes the note away."""
    page.get_by_role("tab", name="Compare").click()
    page.fill("#compare_a textarea", "Ein Hund rennt.")
    page.fill("#compare_b textarea", "   ")
    before = page.evaluate("document.getElementById('compare')?.compare.renders")
    page.click("#compare_start")
    note = page.locator("#compare_note").get_by_text("Sentence B: " + "input is empty")
    note.wait_for(timeout=20000)
    page.wait_for_timeout(500)
    assert note.is_visible() and page.evaluate("document.getElementById('compare')?.compare.renders") == before
    assert page.locator(".toast-body, .toast-wrap .error").count() == 0
    page.fill("#compare_b textarea", "Eine Katze schläft.")
    note.wait_for(state="detached", timeout=10000)
    start_both(page)  # and Start both works on the pair now in the boxes
    got = page.evaluate("[document.getElementById('compare')?.compare.state.a.source, "
                        "document.getElementById('compare')?.compare.state.b.source]")
    sent = ("Ein Hund rennt.", "Eine Katze schläft.")
    assert got == [translator.tokenizer.pieces(translator.source_ids(x)) for x in sent]
    assert page.errors == []


def test_the_compare_tab_follows_the_chosen_model(tiny_trained, tiny_en_de_dir, served_browser):
    from transformer.decode.decoding import Translator
    _, b = served_browser
    two = [Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]
    with serve(two) as url:
        page = open_app(b, url, 1280, 800)
        choose_model(page, "English → German")
        page.get_by_role("tab", name="Compare").click()
        a, b2, _ = PAIRS["en"][0]
        page.wait_for_function(f"document.querySelector('#compare_a textarea')?.value === {json.dumps(a)}",
                               timeout=20000)
        assert page.input_value("#compare_b textarea") == b2
        start_both(page)
        assert page.evaluate("document.getElementById('compare')?.compare.state.a.p.languages") == ["en", "de"]
        check_maps(two[1], shown(page), (a, b2))
        assert page.errors == []
