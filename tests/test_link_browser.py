"""A link to the view in Chromium (issue 28, item 2): Copy link gives a URL that opens exactly the view shown (model,
sentence, step, kind, layer, head, the inside row, the colour measure, the tab) with the tour kept away; missing,
out-of-range or hostile parameters are ignored with one line saying so and the page works; the link survives the
login page."""
from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from tests.browser import SELECTED_TAB, click, go, model_label, open_app, pick, serve, start, view

pytestmark = pytest.mark.browser
SENTENCE = "Ich liebe dich."


def opened(b, url, width=1280, height=800):
    """A page opened on `url` (a link), once the link has been applied (tests/browser.py open_app, without its wait
    for the Translate view to be visible: the link may open another tab first)."""
    page = b.new_page(viewport={"width": width, "height": height})
    page.errors, page.dialogs = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_function("document.getElementById('link_box')?.link && "
                           "document.getElementById('link_box')?.link.opened === true", timeout=90000)
    page.wait_for_function("!document.getElementById('inside')?.inside || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)
    return page


def note(page) -> str:
    return page.evaluate("(() => { const n = document.querySelector('#link_note .link-note'); "
                         "return n && !n.hidden ? n.textContent : ''; })()")


def tab_shown(page) -> str:
    return page.evaluate(SELECTED_TAB)


def no_tour(page):
    assert page.evaluate("document.getElementById('tour_box')?.tour.state().active") is False
    assert "Take the tour" not in page.inner_text("#tour") and page.locator(".driver-popover").count() == 0


def test_a_handmade_link_opens_that_view(served_browser):
    url, b = served_browser
    page = opened(b, url + "?" + urlencode({"model": "de-en", "text": SENTENCE, "step": 2, "kind": "cross",
                                            "layer": 2, "head": 3}))
    v = view(page)
    assert (v["kind"], v["layer"], v["head"], v["step"]) == ("cross", 1, 2, 2)
    assert "layer 2 · head 3" in v["title"]
    assert page.input_value("#source textarea") == SENTENCE and model_label(page) == "German → English"
    assert note(page) == "" and tab_shown(page) == "Translate"
    no_tour(page)
    assert page.errors == []


def test_copy_link_holds_every_parameter_and_restores_the_view(served_browser, translator):
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    start(page, "Ein Hund rennt durch den Schnee.")
    pick(page, kind="decoder_self", layer=1, head=3)
    go(page, 3)
    h = view(page)["cell"]["h"]
    page.click("#attention [data-role=canvas]", position={"x": 4, "y": 1.5 * h})  # the second row: query 1
    page.wait_for_function("document.getElementById('inside')?.inside.ui.pick && "
                           "document.getElementById('inside')?.inside.ui.pick.row === 1", timeout=20000)
    page.click("#attention .lens-measure input[value=contribution]")
    page.get_by_role("tab", name="Head atlas").click()
    page.click("#copy_link")
    page.wait_for_function("document.getElementById('link_box')?.link.last !== null", timeout=10000)
    link = page.evaluate("document.getElementById('link_box')?.link.last")
    assert page.evaluate("navigator.clipboard.readText()") == link
    assert "Link copied" in note(page)
    for part in ("model=de-en", "text=Ein+Hund", "step=3", "kind=decoder_self", "layer=2", "head=4", "row=1",
                 "measure=contribution", "tab=atlas"):
        assert part in link, (part, link)

    other = opened(b, link)
    assert tab_shown(other) == "Head atlas"
    assert other.evaluate("document.getElementById('inside')?.inside.ui.pick.row") == 1
    assert other.evaluate("document.getElementById('inside')?.inside.ui.measure")
    other.get_by_role("tab", name="Translate").click()
    other.wait_for_function("document.getElementById('inside')?.inside.row && "
                            "document.getElementById('inside')?.inside.row.row === 1", timeout=30000)
    v = view(other)
    assert (v["kind"], v["layer"], v["head"], v["step"]) == ("decoder_self", 1, 3, 3)
    assert v["z"] == view(page_back(page))["z"]  # the same map, the same colours (contribution)
    assert "contribution" in v["title"] and note(other) == ""
    no_tour(other)
    assert page.errors == [] and other.errors == []


def page_back(page):
    page.get_by_role("tab", name="Translate").click()
    page.wait_for_function("window.__lens.view() !== null", timeout=20000)
    return page


def test_a_view_with_a_forced_piece_links_to_its_greedy_decoding_and_says_so(served_browser):
    """A link holds no forced piece: Copy link on a view with one says the link opens the model's own decoding
    ([label] link_forced), and that link, opened on this very page (as a lesson's next view or a class's view is),
    shows the greedy decoding at the link's step, nothing forced. Seen failing when url() (assets/link.js) ignored
    forced pieces: the line then said the link opened exactly this view."""
    url, b = served_browser
    page = open_app(b, url, 1280, 800)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    start(page, SENTENCE)
    go(page, 1)
    seq = page.evaluate("window.__lens.state.traj.seq")
    page.click("#topk .topk-list button:nth-child(2)")  # the model's second choice, forced at step 1
    page.wait_for_function(f"window.__lens.state.traj.seq !== {seq}", timeout=30000)
    assert page.evaluate("window.__lens.state.traj.forced.some(Boolean)")
    page.click("#copy_link")
    page.wait_for_function("document.getElementById('link_box')?.link.last !== null", timeout=10000)
    link = page.evaluate("document.getElementById('link_box')?.link.last")
    assert "forced pieces and references are not in it" in note(page), note(page)
    t = page.evaluate("window.__lens.state.t")  # the view at the forced piece
    assert "text=Ich+liebe+dich." in link and f"step={t}&" in link, link
    page.evaluate(f"document.getElementById('link_box').link.open({link[link.index('?'):]!r})")
    page.wait_for_function("document.getElementById('link_box').link.opened === true", timeout=60000)
    page.wait_for_function("!window.__lens.state.traj.forced.some(Boolean)", timeout=30000)
    assert page.evaluate("window.__lens.state.t") == t
    assert page.errors == []
    page.close()


IMG = '<img src=x onerror="alert(1)">'
HOSTILE = [  # (query string, fragments of the line said, the sentence started or None)
    ("step=-1&layer=99&kind=%3Cscript%3E&text=" + quote(SENTENCE),
     ['step "-1"', 'kind "<script>"', "layer 99 (this model has 3)"], SENTENCE),
    ("text=" + "a" * 5000, ["text (5000 characters"], None),
    ("text=%E2%80%8B", ["text: input is empty"], None),  # a zero-width space: the server's validator says no
    ("model=xx&text=" + quote(SENTENCE), ['model "xx"'], SENTENCE),
    ("text=" + quote(IMG) + "&head=0&row=999999&tab=__proto__&measure=javascript:alert(1)",
     ['head "0"', 'row "999999"', 'tab "__proto__"', 'measure "javascript:alert(1)"'], IMG),
    ("step=40&text=" + quote(SENTENCE), ["step 40 (this sentence has steps 0 to"], SENTENCE),
    ("kind=cross&layer=1", ["kind (the link has no sentence", "layer (the link has no sentence"], None),
]


@pytest.mark.parametrize("query, said, started", HOSTILE, ids=[h[0][:30] for h in HOSTILE])
def test_hostile_links_are_ignored_with_one_line_and_the_page_works(served_browser, query, said, started):
    url, b = served_browser
    page = opened(b, url + "?" + query)
    line = note(page)
    assert line.startswith("This link's parameter"), line
    for fragment in said:
        assert fragment in line, (fragment, line)
    assert page.locator("#link_note img").count() == 0 and page.dialogs == []  # said as text, never as HTML
    seq = page.evaluate("window.__lens.state.traj ? window.__lens.state.traj.p.input : null")
    assert seq == started
    no_tour(page)
    start(page, "Ein Hund rennt.")  # and the page works as usual
    click(page, "#step")
    assert view(page)["step"] == 1
    assert page.errors == [] and page.dialogs == []


@pytest.fixture(scope="module")
def two(tiny_trained, tiny_en_de_dir):
    from transformer.decode.decoding import Translator
    return [Translator.load(tiny_trained, "cpu"), Translator.load(tiny_en_de_dir, "cpu")]


def test_a_link_survives_the_login_page_and_picks_its_model(two, served_browser):
    _, b = served_browser  # the module's Chromium, on a second app: two tiny models behind a login
    with serve(two, auth=[("student", "secret")]) as url:
        page = b.new_page(viewport={"width": 1280, "height": 800})
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(url + "?" + urlencode({"model": "en-de", "text": "A dog runs.", "step": 1, "kind": "encoder_self",
                                         "layer": 2, "head": 1, "tab": "compare"}))
        page.fill("input[type=password]", "secret")
        page.fill("input[type=text]", "student")
        page.get_by_role("button", name="Login").click()  # Gradio's login reloads the page: the query stays
        page.wait_for_function("document.getElementById('link_box')?.link && "
                               "document.getElementById('link_box')?.link.opened === true", timeout=90000)
        assert "model=en-de" in page.url
        assert model_label(page) == "English → German"
        assert page.evaluate("window.__lens.state.traj.p.languages") == ["en", "de"]
        assert page.evaluate("[window.__lens.state.kind, window.__lens.state.layer, window.__lens.state.head, "
                             "window.__lens.state.t]") == ["encoder_self", 1, 0, 1]
        assert tab_shown(page) == "Compare" and note(page) == ""
        assert page.errors == []
