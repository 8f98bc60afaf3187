"""Shared helpers for browser tests: launch the app in-process and drive Debian's Chromium. Their fixtures (the
shipped model, the app served with a browser) are in tests/conftest.py; no test module imports another."""
import os

import pytest

from tests.serving import chromium, chromium_path, serving


def require_chromium():
    if chromium_path() is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true but /usr/bin/chromium is missing: .ci/run must install it")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


# the tabs by their English names, as tests name them, and their gr.Tab ids (attention_lens/app.py; the links' tab=
# keys)
TAB_KEYS = {"Translate": "translate", "Compare": "compare", "Head ablation": "ablation", "Beam search": "beam",
            "Across layers": "layers", "Head atlas": "atlas", "Attention being learned": "learned", "Model": "model"}
# JS: the English name of the tab shown (Gradio's tab button carries its gr.Tab id, whatever the page's language)
SELECTED_TAB = ("(() => { const b = document.querySelector('#tabs button[role=tab][aria-selected=true]'), "
                "names = " + repr({v: k for k, v in TAB_KEYS.items()}).replace("'", '"')
                + "; return b ? names[b.dataset.tabId] : null; })()")


def tab_button(name: str) -> str:
    """The selector of the tab `name` (English) in every language."""
    return f'#tabs button[role=tab][data-tab-id="{TAB_KEYS[name]}"]'


serve = serving  # the app in this process on a free loopback port, as the load benchmark runs it
browser = chromium  # the same Chromium the check above found, with the flags the benchmarks use


def renders(page) -> int:
    """How many times the attention view has finished drawing (set by assets/lens.js)."""
    return int(page.evaluate("window.__lens ? window.__lens.renders : 0"))


def wait_render(page, before: int, timeout=20000):
    page.wait_for_function(f"window.__lens && window.__lens.renders > {before}", timeout=timeout)


def open_app(b, url, width=1400, height=1000):
    """A new page on the app, ready (the attention view's script has run); collects page errors and dialogs."""
    page = b.new_page(viewport={"width": width, "height": height})
    page.errors, page.dialogs = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(url, timeout=90000)
    page.wait_for_selector("#attention .lens")
    page.wait_for_function("window.__lens !== undefined && window.__lens.ready === true", timeout=30000)
    return page


def open_link(b, url, ready="true", width=1280, height=800):
    """`url` (a link) opened in a fresh browser context, as another person's browser, once the link has been
    applied (assets/link.js) and the JS condition `ready` holds; collects page errors and dialogs."""
    page = b.new_context(viewport={"width": width, "height": height}).new_page()
    page.errors, page.dialogs = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(url, timeout=90000)  # a busy machine serves the page slowly (CI with two workers)
    try:
        page.wait_for_function(f"document.getElementById('link_box')?.link && "
                               f"document.getElementById('link_box')?.link.opened === true && ({ready})",
                               timeout=120000)
    except Exception as e:  # where the link stopped, for the report
        where = page.evaluate("document.getElementById('link_box')?.link ? "
                              "[document.getElementById('link_box')?.link.stage, "
                              "document.getElementById('link_box')?.link.opened, "
                              "document.getElementById('link_box')?.link.notes,"
                              " document.getElementById('link_box')?.link.error,"
                              " document.getElementById('compare')?.compare && "
                              "[document.getElementById('compare')?.compare.tries, "
                              "document.getElementById('compare')?.compare.renders,"
                              " [...document.querySelectorAll('#compare_a textarea, #compare_b textarea')]"
                              ".map(e => e.value)]] : null")
        raise AssertionError(f"the link did not open (assets/link.js stage, opened, notes: {where})") from e
    return page


def click(page, elem):
    """Click and wait until the attention view has redrawn."""
    n = renders(page)
    page.click(elem)
    wait_render(page, n)


def start(page, text):
    """Start a sentence: wait until its trajectory is drawn (a new one, even for the same text)."""
    page.fill("#source textarea", text)
    seq = page.evaluate("window.__lens.state.traj ? window.__lens.state.traj.seq : null")
    page.click("#start")
    page.wait_for_function(f"window.__lens.state.traj && window.__lens.state.traj.seq !== {seq or 'null'}"
                           " && window.__lens.state.doc === window.__lens.state.traj", timeout=60000)
    # the inside panel (assets/inside.js) asks once for the head shown: answered before the test goes on
    page.wait_for_function("!document.getElementById('inside')?.inside || "
                           "document.getElementById('inside')?.inside.ready()", timeout=60000)


def view(page) -> dict:
    """What the big view shows: title, kind, layer, head, step, x/y labels, z (rows of weights), boxed row."""
    return page.evaluate("window.__lens.view()")


def chips(page, view_id="attention") -> list[str]:
    return page.eval_on_selector_all(f"#{view_id} .lens-tok", "es => es.map(e => e.textContent)")


def step_no(page) -> int:
    return int(page.evaluate("window.__lens.state.t"))


def stepped(translator, text, t):
    """A decoding session of `text` after t steps (what the page shows at step t)."""
    s = translator.start(text)
    for _ in range(t):
        s.step()
    return s


def go(page, t):
    """Move the view to step t with the step slider (an input event, as a drag gives)."""
    n = renders(page)
    page.eval_on_selector("#attention [data-role=scrub]",
                          f"e => {{ e.value = '{t}'; e.dispatchEvent(new Event('input', {{bubbles: true}})); }}")
    wait_render(page, n)
    assert step_no(page) == t


def pick(page, kind=None, layer=None, head=None):
    """Choose the kind (buttons), layer and head (selects, whose option values are the labels 1.. and "mean")."""
    if kind is not None and page.evaluate("window.__lens.state.kind") != kind:
        click(page, f"#attention [data-kind={kind}]")
    for role, value in (("layer", layer), ("head", head)):
        if value is not None and page.evaluate(f"window.__lens.state.{role}") != value:
            n = renders(page)
            page.select_option(f"#attention [data-role={role}]", value if value == "mean" else str(value + 1))
            wait_render(page, n)


def open_fold(page, elem_id):
    """Open the gr.Accordion #elem_id unless it is open; wait for what it holds."""
    body = f"#{elem_id} > [data-testid=accordion-content]"
    if not page.is_visible(body):
        page.click(f"#{elem_id} > button.label-wrap")
    page.wait_for_selector(body, state="visible", timeout=20000)


def settings(page):
    """The Translate tab's k slider and word toggle (folded under the view): open, and their inputs drawn."""
    open_fold(page, "settings")
    page.wait_for_selector("#k input[type=range]", timeout=20000)
    page.wait_for_selector("#words input", timeout=20000)


def model_label(page) -> str:
    """The label of the model the picker (#model, a gr.Dropdown) shows."""
    return page.eval_on_selector("#model input", "s => s.value")


def choose(page, elem_id: str, label: str):
    """Pick the option `label` of the gr.Dropdown #elem_id as a user does: open it, click the option."""
    page.click(f"#{elem_id} input")
    page.locator("li[data-testid=dropdown-option]", has_text=label).first.click()


def choose_model(page, label):
    """Pick a model in the picker as a user does; wait until the box speaks its language."""
    choose(page, "model", label)
    page.wait_for_function(f"document.querySelector('#source textarea').placeholder.includes('{label.split()[0]}')",
                           timeout=20000)


def tap_key(page, j):
    """A click on key j of the highlighted row of the page's own big map, where a finger taps it."""
    v = view(page)
    assert v["row"] is not None
    canvas = page.locator("#attention [data-role=canvas]")
    canvas.scroll_into_view_if_needed()
    canvas.click(position={"x": (j + 0.5) * v["cell"]["w"], "y": (v["row"] + 0.5) * v["cell"]["h"]})


def teach_class(b, url, text, step, students=(((390, 844), "de"), ((1280, 800), "en"))):
    """A teacher's page at 1280x800 at `step` of `text`, teaching a live class, and a student's page per
    ((width, height), language) in a browser context of its own (touch below 600 px), each once it has the class's
    first snapshot: (teacher, [students]). Each page collects its page errors in .errors."""
    teacher = open_app(b, url, 1280, 800)
    start(teacher, text)
    go(teacher, step)
    teacher.click("#class_start")
    teacher.wait_for_function("document.getElementById('class_box')?.live.sends >= 1", timeout=30000)
    link = teacher.input_value("#class_link")
    pages = []
    for (w, h), lang in students:
        p = b.new_context(viewport={"width": w, "height": h}, is_mobile=w < 600, has_touch=w < 600,
                          locale="de-DE" if lang == "de" else "en-US").new_page()
        p.errors = []
        p.on("pageerror", lambda e, p=p: p.errors.append(str(e)))
        p.goto(f"{link}&lang={lang}", timeout=90000)
        p.wait_for_function("document.getElementById('class_box')?.live?.snap", timeout=60000)
        pages.append(p)
    return teacher, pages
