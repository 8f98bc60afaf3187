"""Who is in a live class, in Chromium: the count is true (a browser with two tabs is one student, ten joins that
never read their stream are none, a student who closes the page leaves it), a short code typed in lower case joins
from the plain page (a wrong one is said and the box kept), one client (an address, as a proxy names it in
X-Forwarded-For: uvicorn's proxy headers, as behind a Space's proxy) opens at most its cap of classes while another
still can, and axe-core finds nothing critical or serious on the class panel and the join box."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.browser import start

pytestmark = pytest.mark.browser
SENTENCE = "Ich liebe dich."
LIVE = "document.getElementById('class_box')?.live"


def client_page(b, url, address, width=1280, height=800, lang="en"):
    """A page of its own browser (a context: its own storage) whose requests come from `address` (X-Forwarded-For
    from 127.0.0.1, which uvicorn trusts by default)."""
    ctx = b.new_context(viewport={"width": width, "height": height}, is_mobile=width < 600, has_touch=width < 600,
                        locale="de-DE" if lang == "de" else "en-US",
                        extra_http_headers={"X-Forwarded-For": address})
    page = ctx.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    sep = "&" if "?" in url else "?"
    page.goto(f"{url}{sep}lang={lang}", timeout=90000)
    page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    return page


def teach(page) -> str:
    """Teach live on `page` (a sentence started first): the class's code."""
    page.click("#class_start")
    page.wait_for_function(f"{LIVE}.code && {LIVE}.sends >= 1", timeout=30000)
    return page.evaluate(f"{LIVE}.code")


def count(page) -> str:
    return page.inner_text("#class_count")


def wait_count(page, n, timeout=30000):
    try:
        page.wait_for_function(f"document.querySelector('#class_count').textContent === '{n} following'",
                               timeout=timeout)
    except Exception as e:
        raise AssertionError(f"the teacher's count says {count(page)!r}, not {n}") from e


def following(page):
    page.wait_for_function(f"{LIVE}.snap && {LIVE}.snap.view && {LIVE}.opened >= 1 && document.querySelector("
                           "'#class_bar [data-role=state]').textContent === 'Following the teacher'", timeout=60000)


def ghost_joins(url: str, code: str, n: int) -> list[str]:
    """n joins of /follow that never read their stream (POST queue/join, as gradio_client does, and nothing more):
    their session hashes."""
    import httpx
    from gradio_client import Client
    cfg = Client(url, verbose=False).config
    fn = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "follow")
    sessions = [uuid.uuid4().hex for _ in range(n)]
    with httpx.Client(timeout=30) as http:
        for s in sessions:
            r = http.post(f"{url.rstrip('/')}/gradio_api/queue/join", json={
                "data": [code, None], "fn_index": fn, "session_hash": s, "event_data": None, "trigger_id": None},
                headers={"X-Forwarded-For": "10.7.0.99"})
            r.raise_for_status()
    return sessions


def test_the_count_is_true_with_ghosts_tabs_and_a_leaver(served_browser):
    """Three students (one with two tabs), then ten joins that never read their stream: the teacher's count says 3
    throughout (it said 4 with the second tab, and 13 with the ghosts, before); the ghosts' streams end by
    themselves; a student who closes the page is gone from the count within 30 s."""
    from attention_lens.live import page as live
    url, b = served_browser
    teacher = client_page(b, url, "10.7.0.1")
    start(teacher, SENTENCE)
    code = teach(teacher)
    link = teacher.input_value("#class_link")
    students = [client_page(b, link, f"10.7.0.{2 + i}") for i in range(3)]
    second_tab = students[0].context.new_page()  # the same browser (its storage): the same student
    second_tab.errors = []
    second_tab.on("pageerror", lambda e: second_tab.errors.append(str(e)))
    second_tab.goto(link, timeout=90000)
    for p in (*students, second_tab):
        following(p)
    wait_count(teacher, 3)
    c = live.REGISTRY.classes[code]
    assert len(c.streams) == 4 and len(c.students) == 3

    ghost_joins(url, code, 10)
    t0 = time.monotonic()
    while len(c.streams) < 14 and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    assert len(c.streams) == 14  # the ghosts joined...
    teacher.wait_for_timeout(2000)
    assert count(teacher) == "3 following"  # ...and are not counted
    while len(c.streams) > 4 and time.monotonic() - t0 < 60:
        time.sleep(0.2)
    assert len(c.streams) == 4, "the ghosts' streams did not end"  # ended by themselves (20 s unconfirmed)
    assert count(teacher) == "3 following"

    leaver = students[2]
    leaver.context.close()  # closes the page: Gradio unloads its session
    t0 = time.monotonic()
    wait_count(teacher, 2, timeout=30000)
    assert time.monotonic() - t0 <= 30
    second_tab.close()  # one tab of a browser still in the class: still a student
    teacher.wait_for_timeout(3000)
    assert count(teacher) == "2 following"
    for p in (teacher, *students[:2]):
        assert p.errors == [], p.errors
    teacher.click("#class_close")
    for p in (teacher, *students[:2]):
        p.context.close()


def test_a_code_typed_in_lower_case_joins(served_browser):
    """The plain page's #join_code: a wrong code is said and the box keeps it to type again; the teacher's code
    typed in lower case joins with Enter, and the student follows the teacher's view."""
    url, b = served_browser
    teacher = client_page(b, url, "10.8.0.1")
    start(teacher, SENTENCE)
    code = teach(teacher)
    assert len(code) <= 8 and teacher.inner_text("#class_code").replace(" ", "") == code
    assert teacher.is_visible("#class_qr") and not teacher.is_visible("#class_teacher_link")  # behind a button
    teacher.click("#class_teacher_open")
    assert teacher.is_visible("#class_teacher_link")

    student = client_page(b, url, "10.8.0.2")
    wrong = "".join("2" if ch != "2" else "3" for ch in code).lower()
    student.fill("#join_code", wrong)
    student.press("#join_code", "Enter")
    student.wait_for_function("document.querySelector('#join_msg').textContent.length > 0", timeout=20000)
    assert student.inner_text("#join_msg") == "This class code is wrong, or the class has ended."
    assert student.is_visible("#join_code") and student.input_value("#join_code") == wrong
    student.fill("#join_code", f"{code[:4].lower()} {code[4:].lower()}")
    student.press("#join_code", "Enter")
    following(student)
    assert f"class={code}" in student.url and not student.is_visible("#join_code")
    wait_count(teacher, 1)
    assert student.errors == [] and teacher.errors == []
    teacher.click("#class_close")
    for p in (teacher, student):
        p.context.close()


def test_one_client_cannot_open_more_than_its_classes_while_another_can(served_browser):
    from attention_lens.live import registry
    url, b = served_browser
    cap = registry.MAX_CLASSES_PER_CLIENT
    mine = []
    for _ in range(cap):
        p = client_page(b, url, "10.9.0.1")
        start(p, SENTENCE)
        teach(p)
        mine.append(p)
    extra = client_page(b, url, "10.9.0.1")
    start(extra, SENTENCE)
    extra.click("#class_start")
    extra.wait_for_function(f"{LIVE}.lastError", timeout=30000)
    assert extra.evaluate(f"{LIVE}.lastError") == \
        f"You already have {cap} live classes open. End one before you start another."
    assert extra.is_visible("#class_start") and not extra.is_visible("#class_panel")
    other = client_page(b, url, "10.9.0.2")  # another client still can
    start(other, SENTENCE)
    teach(other)
    mine[0].click("#class_close")  # and the first once it ended one
    mine[0].wait_for_selector("#class_start", state="visible", timeout=20000)
    extra.click("#class_start")
    extra.wait_for_function(f"{LIVE}.role === 'teacher' && {LIVE}.code", timeout=30000)
    for p in (*mine[1:], extra, other):
        p.click("#class_close")
    for p in (*mine, extra, other):
        assert p.errors == [], p.errors
        p.context.close()


def serious(page, context) -> list[tuple[str, str]]:
    from axe_playwright_python.sync_playwright import Axe
    found = Axe().run(page, context=context).response["violations"]
    return [(v["id"], n["html"][:160]) for v in found if v["impact"] in ("critical", "serious") for n in v["nodes"]]


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_no_serious_violation_on_the_class_panel_and_the_join_box(served_browser, lang, width, height):
    """axe-core: the join box (plain page; a wrong code said), the teacher's panel (its code, QR code and the
    teacher link opened) and Show code, in both languages at both sizes: no critical or serious violation."""
    url, b = served_browser
    found = {}
    student = client_page(b, url, f"10.6.{width % 250}.{2 if lang == 'de' else 1}", width, height, lang)
    student.fill("#join_code", "WRONG234")
    student.press("#join_code", "Enter")
    student.wait_for_function("document.querySelector('#join_msg').textContent.length > 0", timeout=20000)
    found["join box"] = serious(student, "#class_box")
    teacher = client_page(b, url, f"10.6.{width % 250}.{4 if lang == 'de' else 3}", width, height, lang)
    start(teacher, SENTENCE)
    teach(teacher)
    teacher.wait_for_selector("#class_qr", state="visible", timeout=20000)
    teacher.click("#class_teacher_open")
    found["panel"] = serious(teacher, "#class_panel")
    teacher.click("#class_show")
    teacher.wait_for_selector("#class_show_box", state="visible", timeout=5000)
    found["show code"] = serious(teacher, "#class_show_box")
    teacher.keyboard.press("Escape")
    teacher.wait_for_selector("#class_show_box", state="hidden", timeout=5000)
    assert {k: v for k, v in found.items() if v} == {}
    teacher.click("#class_close")
    for p in (student, teacher):
        assert p.errors == [], p.errors
        p.context.close()
