"""A Start clicked right after typing is answered, however late the page reads the answers of the events before it.

CI once waited 60 s for a Start that was never drawn (tests/test_phone_german_browser.py, a fresh page at 1280x800:
fill the box, click Start). One way a Start is lost, seen here with Gradio 6.31: typing fires an event (the language
hint, attention_lens/translate/tab.py wire_hint); when it went through the queue, the server answered it and, no other
event of
the page being queued, closed the page's stream of answers (close_stream). If the Start joined the queue just after
that, and the page read the close only after the Start's join was answered (a loaded machine: two connections, no
order between them), Gradio's client saw its stream still open, opened no new one, then closed it: the Start's answer
waited on the server for a stream that never came. Here the page reads each stream only once the Start has joined,
the worst order, made certain."""
from __future__ import annotations

import pytest

from tests.browser import require_chromium

pytestmark = pytest.mark.browser
SENTENCE = "Ich weiß, dass er morgen nach Berlin fährt."
DRAWN = "window.__lens.state.traj && window.__lens.state.doc === window.__lens.state.traj"


def test_a_start_right_after_typing_is_drawn_when_the_page_reads_its_streams_late(served_browser):
    require_chromium()
    url, b = served_browser
    page = b.new_context(viewport={"width": 1280, "height": 800}, locale="de-DE").new_page()
    held, reading, done, released = [], [], [], []  # streams the server has ended, held; being read; requests

    def hold(route):  # the page's stream of answers (Gradio's /queue/data), given to the page only when released
        if released:  # the page reads on as it comes
            route.continue_()
            return
        reading.append(route)
        response = route.fetch()  # all of it: the server ends it when the page has no event left (close_stream)
        held.append((route, response))
        reading.remove(route)

    def settle(what):
        for _ in range(600):  # 60 s at most, on a loaded machine
            if what():
                return
            page.wait_for_timeout(100)
        raise AssertionError(f"not settled: held {len(held)}, reading {len(reading)}, requests {done}")

    page.route("**/queue/data*", hold)
    page.on("requestfinished", lambda r: done.append(r.url.split("/gradio_api/")[-1].split("?")[0])
            if "/gradio_api/" in r.url else None)
    page.goto(url)
    page.wait_for_function("window.__lens && window.__lens.ready === true", timeout=60000)
    page.fill("#source textarea", SENTENCE)  # typing: the hint's event
    settle(lambda: (held and not reading) or any(not u.startswith(("queue", "heartbeat", "file")) for u in done))
    # (the hint answered: its stream ended, or its own request)
    joins = done.count("queue/join")
    page.click("#start")
    settle(lambda: done.count("queue/join") > joins and not reading)  # the Start joined; every stream is ended
    released.append(True)
    for route, response in held:  # only now the page reads what the server said before
        route.fulfill(response=response)
    try:
        page.wait_for_function(DRAWN, timeout=30000, polling=200)
    except Exception as e:
        raise AssertionError(f"the Start was never drawn: requests {done}, streams held {len(held)}") from e
    page.context.close()
