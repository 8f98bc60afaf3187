"""Live classes' registry (issue 59, attention_lens/live/registry.py): unguessable codes, only the teacher's token
changes a
class, a wrong or ended code is refused with one message, answers counted once per student and question, bounds,
and followers woken by a change (no polling)."""
from __future__ import annotations

import asyncio
import base64
import time

import pytest

from attention_lens.live import registry
from attention_lens.live.registry import LiveError, Registry


def bits(code: str) -> int:
    return len(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))) * 8


def test_codes_are_unguessable_and_tokens_secret():
    r = Registry()
    classes = [r.open() for _ in range(20)]
    assert len({c.code for c in classes}) == 20 and all(bits(c.code) >= 64 for c in classes)
    assert all(bits(c.token) >= 128 and c.token != c.code for c in classes)
    snap = classes[0].snapshot(teacher=True)
    assert classes[0].token not in repr(snap)  # the token is never in what followers get


def test_only_the_teachers_token_changes_the_class():
    r = Registry()
    c = r.open()
    r.change(c.code, c.token, "?model=de-en&text=Hallo&step=2", 2)
    assert (c.view, c.step, c.seq) == ("model=de-en&text=Hallo&step=2", 2, 1)
    other = r.open()
    for forged in (None, "", "x", other.token, c.token[:-1], c.code):
        with pytest.raises(LiveError) as e:
            r.change(c.code, forged, "?model=de-en&text=Forged", 0)
        assert e.value.key == "class_not_teacher"
    assert c.view == "model=de-en&text=Hallo&step=2" and c.seq == 1
    with pytest.raises(LiveError):
        r.close(c.code, other.token)
    with pytest.raises(LiveError):
        r.change(c.code, c.token, "x" * (registry.MAX_VIEW + 1))


def test_a_wrong_or_ended_code_gets_one_message_and_no_view():
    r = Registry(ttl_s=0.05)
    c = r.open()
    r.change(c.code, c.token, "text=A")
    for wrong in ("", "nope", c.code + "x", None, 7, c.token):
        with pytest.raises(LiveError) as e:
            r.get(wrong)
        assert e.value.key == "class_unknown"
    time.sleep(0.08)  # two hours in this registry
    with pytest.raises(LiveError) as e:
        r.get(c.code)
    assert e.value.key == "class_unknown" and c.ended and c.code not in r.classes
    d = r.open()
    r.close(d.code, d.token)
    with pytest.raises(LiveError):
        r.join(d.code)


def test_a_teachers_change_keeps_the_class_alive():
    r = Registry(ttl_s=0.2)
    c = r.open()
    for _ in range(4):
        time.sleep(0.08)
        r.change(c.code, c.token, "text=A")
    assert r.get(c.code) is c  # 0.32 s old, 0.08 s since the last change


def test_answers_are_counted_once_per_student_and_question():
    r = Registry()
    c = r.open()
    _, a = r.join(c.code)
    _, b = r.join(c.code)
    q = r.ask(c.code, c.token, "where", ["Ich", "liebe", "dich", "."], [0.1, 0.6, 0.2, 0.1], "loves")
    r.answer(c.code, a, q.id, 1)
    r.answer(c.code, a, q.id, 1)
    r.answer(c.code, a, q.id, 2)  # a change of mind replaces the answer
    r.answer(c.code, b, q.id, 1)
    assert q.counts() == [0, 1, 1, 0]
    for sid, qid, choice, key in (("forged", q.id, 0, "class_not_student"), (a, q.id + 1, 0, "class_question_over"),
                                  (a, q.id, 4, "class_bad_answer"), (a, q.id, -1, "class_bad_answer"),
                                  (a, q.id, True, "class_bad_answer")):
        with pytest.raises(LiveError) as e:
            r.answer(c.code, sid, qid, choice)
        assert e.value.key == key
    assert q.counts() == [0, 1, 1, 0]
    student = c.snapshot(student=a)["question"]
    assert student["counts"] is None and student["model"] is None and student["mine"] == 2
    assert c.snapshot(teacher=True)["question"]["counts"] == [0, 1, 1, 0]
    with pytest.raises(LiveError):
        r.reveal(c.code, "forged", q.id)
    r.reveal(c.code, c.token, q.id)
    assert c.snapshot(student=b)["question"]["model"] == [0.1, 0.6, 0.2, 0.1]
    with pytest.raises(LiveError):
        r.answer(c.code, b, q.id, 0)  # revealed: over
    q2 = r.ask(c.code, c.token, "next", ["you", "it"], [0.7, 0.2])
    assert q2.id == q.id + 1 and q2.counts() == [0, 0]


def test_a_bad_question_is_refused():
    r = Registry()
    c = r.open()
    for kind, keys, model in (("why", ["a"], [1.0]), ("where", [], []), ("where", ["a", "b"], [1.0]),
                              ("where", ["a"], [2.0]), ("where", [1], [1.0]),
                              ("next", ["a"] * (registry.MAX_KEYS + 1), [0.0] * (registry.MAX_KEYS + 1))):
        with pytest.raises(LiveError) as e:
            r.ask(c.code, c.token, kind, keys, model)
        assert e.value.key == "class_bad_question"


def test_limits_of_classes_and_students():
    r = Registry(max_classes=3, max_students=2)
    classes = [r.open() for _ in range(3)]
    with pytest.raises(LiveError) as e:
        r.open()
    assert e.value.key == "class_full"
    r.close(classes[0].code, classes[0].token)
    r.open()  # an ended class frees its place
    c = classes[1]
    r.join(c.code)
    _, s = r.join(c.code)
    with pytest.raises(LiveError) as e:
        r.join(c.code)
    assert e.value.key == "class_students_full"
    r.leave(c, s)
    r.join(c.code)
    assert registry.MAX_CLASSES == 50 and registry.MAX_STUDENTS == 200


def test_students_following_at_once_are_bounded_over_all_classes():
    r = Registry(max_following=3)
    a, b = r.open(), r.open()
    r.join(a.code), r.join(a.code)
    c, s = r.join(b.code)
    with pytest.raises(LiveError) as e:
        r.join(a.code)  # a class with room, on a server without
    assert e.value.key == "class_server_full"
    r.leave(c, s)
    r.join(a.code)
    assert registry.MAX_FOLLOWING == 1000


def test_gradio_counts_running_events_of_an_unlimited_group_against_max_threads():
    """Why the app launches with attention_lens/live/page.py QUEUE_PLACES more places: Gradio's queue runs at most
    launch(max_threads) events at once, in any concurrency group, one with no limit too; two followers on a queue of
    two places keep a third event waiting. This fails once Gradio stops counting them (QUEUE_PLACES then goes)."""
    import gradio as gr
    from gradio_client import Client

    from tests.serving import launched
    gate = asyncio.Event()

    async def follow(x: str):
        yield x
        await gate.wait()
        yield x

    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(follow, box, box, api_name="follow", concurrency_limit=None, concurrency_id="live")
        box.change(lambda x: x, box, box, api_name="echo", concurrency_limit=None, concurrency_id="other")
    demo.queue()
    with launched(demo, max_threads=2) as url:
        c = Client(url, verbose=False)
        followers = [c.submit("a", api_name="/follow") for _ in range(2)]
        t0 = time.monotonic()
        while demo._queue.active_jobs.count(None) > 0 and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        assert demo._queue.active_jobs.count(None) == 0  # the two followers hold both places
        echo = c.submit("b", api_name="/echo")
        t0 = time.monotonic()
        while len(demo._queue) < 1 and not echo.done() and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        assert len(demo._queue) == 1 and not echo.done()  # waiting behind them, in a group of its own
        for f in followers:
            f.cancel()
        assert echo.result(timeout=30) == "b"
    from attention_lens.live.page import QUEUE_PLACES
    assert QUEUE_PLACES >= registry.MAX_FOLLOWING + registry.MAX_CLASSES


def test_followers_wake_at_each_change_and_a_second_class_is_apart():
    async def run():
        r = Registry()
        one, two = r.open(), r.open()
        got = {"one": [], "two": [], "teacher": []}

        async def follow(name, code, token=None):
            async for snap in r.follow(code, token):
                got[name].append(snap)

        tasks = [asyncio.create_task(follow("one", one.code)), asyncio.create_task(follow("two", two.code)),
                 asyncio.create_task(follow("teacher", one.code, one.token))]
        await asyncio.sleep(0.01)
        assert len(one.students) == 1 and len(two.students) == 1
        for i in range(3):
            r.change(one.code, one.token, f"text=A&step={i}", i)
            await asyncio.sleep(0.01)
        r.close(one.code, one.token)
        await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), 1)
        assert [s["view"] for s in got["one"]] == ["", "text=A&step=0", "text=A&step=1", "text=A&step=2",
                                                  "text=A&step=2"]
        assert got["one"][-1]["ended"] and "you" in got["one"][0]
        assert [s["view"] for s in got["two"]] == [""]  # never the first class's view
        assert got["teacher"][0]["students"] == 1 and "you" not in got["teacher"][0]
        assert one.students == {}  # the follower that ended left
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
        assert two.students == {}  # and so did the one cancelled (a closed page)
    asyncio.run(run())


def test_an_ended_class_wakes_its_followers():
    async def run():
        r = Registry(ttl_s=0.1)
        c = r.open()
        snaps = [s async for s in r.follow(c.code)]
        return snaps
    snaps = asyncio.run(asyncio.wait_for(run(), 2))
    assert len(snaps) == 2 and snaps[-1]["ended"]


def test_a_program_follows_a_class_through_the_api(translator):
    """`Client(url).submit(code, api_name="/follow")` yields the class's view at each change; /class_change without
    the token is refused; a wrong code is an error."""
    import threading

    from gradio_client import Client

    from tests.serving import serving
    with serving(translator) as url:
        teacher = Client(url, verbose=False)
        code, token = teacher.predict(api_name="/class_open")
        job = Client(url, verbose=False).submit(code, api_name="/follow")
        got, first = [], threading.Event()

        def read():
            for snap in job:
                got.append(snap)
                first.set()
        threading.Thread(target=read, daemon=True).start()
        assert first.wait(30)
        assert teacher.predict(code, token, "model=de-en&text=Hallo.&step=1", 1, api_name="/class_change") == 1
        with pytest.raises(Exception, match="Only the teacher's link can change this class."):
            teacher.predict(code, "forged", "model=de-en&text=Forged", 0, api_name="/class_change")
        t0 = time.monotonic()
        while len(got) < 2 and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        assert [(s["seq"], s["view"], s["step"]) for s in got] == [(0, "", None), (1, "model=de-en&text=Hallo.&step=1",
                                                                                   1)]
        with pytest.raises(Exception, match="This class link is wrong, or the class has ended."):
            Client(url, verbose=False).submit("A" * 16, api_name="/follow").result()
        # more followers than the model's events may run at once: they hold no place of the model's (their own
        # concurrency group, no limit), and /translate is answered while they follow
        from attention_lens.live.page import REGISTRY
        from attention_lens.shell.components import CONCURRENCY
        more = [teacher.submit(code, api_name="/follow") for _ in range(2 * CONCURRENCY)]
        t0 = time.monotonic()
        while len(REGISTRY.classes[code].students) < 1 + len(more) and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        assert len(REGISTRY.classes[code].students) == 1 + len(more)
        assert teacher.submit("Ich liebe dich.", api_name="/translate").result(timeout=60)
        for j in [job, *more]:
            j.cancel()


def _count_session_states(monkeypatch) -> list:
    """Counts the SessionStates Gradio builds (gradio/state_holder.py: one per session it does not hold)."""
    from gradio import state_holder
    built, init = [], state_holder.SessionState.__init__

    def counted(self, *a, **k):
        built.append(1)
        init(self, *a, **k)
    monkeypatch.setattr(state_holder.SessionState, "__init__", counted)
    return built


def _wait(what, timeout=60):
    t0 = time.monotonic()
    while not what() and time.monotonic() - t0 < timeout:
        time.sleep(0.05)
    assert what()


def test_gradio_rebuilds_a_dropped_sessions_state_at_each_output(monkeypatch):
    """Why the app keeps attention_lens/live/page.py SESSION_PLACES sessions more: Gradio looks up an event's session at
    each of its outputs and builds a new SessionState for one it dropped (launch(state_session_capacity), least recently
    used first), so three followers, each its own session, in two places rebuild their state at every change; in
    three places none. This fails once Gradio stops rebuilding (SESSION_PLACES then goes)."""
    import gradio as gr
    from gradio_client import Client

    from tests.serving import launched
    changes = [0]

    async def follow(x: str):
        seen = -1
        while True:
            if changes[0] != seen:
                seen = changes[0]
                yield f"{x}{seen}"
            await asyncio.sleep(0.02)

    def rebuilt(capacity: int) -> int:
        with gr.Blocks() as demo:
            box = gr.Textbox()
            box.submit(follow, box, box, api_name="follow", concurrency_limit=None)
        demo.queue()
        with launched(demo, state_session_capacity=capacity) as url:
            clients = [Client(url, verbose=False) for _ in range(3)]
            jobs = [c.submit("a", api_name="/follow") for c in clients]
            _wait(lambda: all(j.outputs() for j in jobs))
            built = _count_session_states(monkeypatch)
            for _ in range(2):
                changes[0] += 1
                _wait(lambda: all(j.outputs()[-1] == f"a{changes[0]}" for j in jobs))
            for j, c in zip(jobs, clients):
                j.cancel()
                c.close()
            monkeypatch.undo()
            return len(built)
    assert rebuilt(2) >= 3  # each change: a follower's output missed its session at least once
    assert rebuilt(3) == 0


def test_the_apps_followers_drop_no_session(tiny_translator, monkeypatch):
    """A class with its followers and teacher past the app's SESSIONS_MAX users: the app keeps their sessions
    besides (SESSION_PLACES), so a change rebuilds no follower's SessionState and the user who started a sentence
    keeps it. With Gradio's capacity at SESSIONS_MAX alone (as before) the followers took turns in its places:
    every change rebuilt their state (3 s per change for 200 followers) and dropped the user's sentence."""
    from gradio_client import Client

    from attention_lens.live import page
    from attention_lens.shell import components
    from tests.serving import serving
    monkeypatch.setattr(components, "SESSIONS_MAX", 1)
    monkeypatch.setattr(page, "SESSION_PLACES", 3)  # two followers and a teacher
    with serving(tiny_translator) as url:
        user, teacher = Client(url, verbose=False), Client(url, verbose=False)
        user.predict("Ein Hund rennt.", 8, False, api_name="/start")
        code, token = teacher.predict(api_name="/class_open")
        clients = [Client(url, verbose=False) for _ in range(2)]
        jobs = [c.submit(code, api_name="/follow") for c in clients]
        _wait(lambda: all(j.outputs() for j in jobs))
        built = _count_session_states(monkeypatch)
        for i in range(3):
            seq = teacher.predict(code, token, f"model=de-en&text=Hallo.&step={i}", i, api_name="/class_change")
            _wait(lambda seq=seq: all(j.outputs()[-1]["seq"] == seq for j in jobs))
        assert len(built) == 0  # no follower's (nor the teacher's) session was dropped and rebuilt
        assert user.predict(8, False, api_name="/run")[0] == "A dog runs."  # the user's sentence kept
        for j in jobs:
            j.cancel()
        for c in [user, teacher, *clients]:
            c.close()
