"""Live classes' registry (issue 59, attention_lens/live/registry.py): short codes read in any case, only the
teacher's token changes a class, a wrong or ended code is refused with one message, answers counted once per student
(browser) and question, bounds per class, server and client, and followers woken by a change (no polling)."""
from __future__ import annotations

import asyncio
import base64
import time

import pytest

from attention_lens.live import access, registry
from attention_lens.live.registry import LiveError, Registry


def bits(code: str) -> int:
    return len(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))) * 8


def a_student(r: Registry, code: str, sid: str | None = None, client: str = "") -> str:
    """A student following the class of `code` (their stream joined and confirmed): their id."""
    _, stream = r.join(code, sid, client=client)
    r.confirm(code, stream.secret, client)
    return stream.student


def test_codes_are_short_of_no_look_alikes_and_tokens_secret():
    r = Registry(per_client=50)
    classes = [r.open() for _ in range(20)]
    assert len({c.code for c in classes}) == 20
    for c in classes:
        assert len(c.code) <= 8 and set(c.code) <= set(access.CODE_ALPHABET)
    assert not set("0O1IL") & set(access.CODE_ALPHABET)
    assert all(bits(c.token) >= 128 and c.token != c.code for c in classes)
    snap = classes[0].snapshot(teacher=True)
    assert classes[0].token not in repr(snap)  # the token is never in what followers get


def test_a_code_is_read_in_any_case_with_spaces_and_dashes():
    r = Registry()
    c = r.open()
    for typed in (c.code.lower(), f" {c.code[:4]} {c.code[4:].lower()} ", f"{c.code[:4]}-{c.code[4:]}"):
        assert r.get(typed) is c
    for wrong in (c.code[:-1], c.code + "2", c.code.replace(c.code[0], "0"), c.code.encode(), None):
        with pytest.raises(LiveError) as e:
            r.get(wrong, client="elsewhere")
        assert e.value.key == "class_unknown"


def test_only_the_teachers_token_changes_the_class():
    r = Registry(per_client=5)
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
    r = Registry(ttl_s=0.05, wrong_codes=access.WrongCodes(burst=100))
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
    a, b = a_student(r, c.code, "browser-a"), a_student(r, c.code, "browser-b")
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
    r = Registry(max_classes=3, max_students=2, per_client=5)
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
    _, tab = r.join(c.code, s.student)  # a second tab of a student in the class: no new student
    r.leave(c, s)
    with pytest.raises(LiveError):
        r.join(c.code)  # the student is still in the class by their other tab
    r.leave(c, tab)
    r.join(c.code)
    assert registry.MAX_CLASSES == 50 and registry.MAX_STUDENTS == 200


def test_students_following_at_once_are_bounded_over_all_classes():
    r = Registry(max_following=3, per_client=5)
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
        for c in (one, two):  # each reader confirms the stream of its first snapshot
            r.confirm(c.code, next(iter(c.streams)))
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
        assert got["teacher"][-1]["students"] == 1 and "you" not in got["teacher"][0]
        assert one.students == set() and one.streams == {}  # the follower that ended left
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
        assert two.students == set() and two.streams == {}  # and so did the one cancelled (a closed page)
    asyncio.run(asyncio.wait_for(run(), 20))  # a stream left waiting fails the test, never hangs it


def test_an_ended_class_wakes_its_followers():
    async def run():
        r = Registry(ttl_s=0.1)
        c = r.open()
        snaps = []
        async for s in r.follow(c.code):
            snaps.append(s)
            if "stream" in s:
                r.confirm(c.code, s["stream"])
        return snaps
    snaps = asyncio.run(asyncio.wait_for(run(), 2))
    assert len(snaps) == 2 and snaps[-1]["ended"]


def test_a_program_follows_a_class_through_the_api(translator):
    """`Client(url).submit(code, api_name="/follow")` yields the class's view at each change (once /class_here
    confirms it has read its first snapshot, it counts as a student); /class_change without the token is refused;
    a wrong code is an error."""
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
                if "stream" in snap:
                    assert Client(url, verbose=False).predict(code, snap["stream"], api_name="/class_here") is True
                first.set()
        threading.Thread(target=read, daemon=True).start()
        assert first.wait(30)
        from attention_lens.live.page import REGISTRY
        assert REGISTRY.classes[code].students == {got[0]["you"]}
        assert teacher.predict(code, token, "model=de-en&text=Hallo.&step=1", 1, api_name="/class_change") == 1
        with pytest.raises(Exception, match="Only the teacher's link can change this class."):
            teacher.predict(code, "forged", "model=de-en&text=Forged", 0, api_name="/class_change")
        t0 = time.monotonic()
        while len(got) < 2 and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        assert [(s["seq"], s["view"], s["step"]) for s in got] == [(0, "", None), (1, "model=de-en&text=Hallo.&step=1",
                                                                                   1)]
        with pytest.raises(Exception, match="This step cannot be shared with the class"):
            teacher.predict(code, token, "model=de-en&text=Hallo.", 2 ** 64, api_name="/class_change")
        with pytest.raises(Exception, match="This class code is wrong, or the class has ended."):
            Client(url, verbose=False).submit("A" * 16, api_name="/follow").result()
        # more followers than the model's events may run at once: they hold no place of the model's (their own
        # concurrency group, no limit), and /translate is answered while they follow
        from attention_lens.shell.components import CONCURRENCY
        more = [teacher.submit(code, api_name="/follow") for _ in range(2 * CONCURRENCY)]
        t0 = time.monotonic()
        while len(REGISTRY.classes[code].streams) < 1 + len(more) and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        assert len(REGISTRY.classes[code].streams) == 1 + len(more)
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
        for c, j in zip(clients, jobs):  # each reads its stream: it counts, and gets every change
            c.predict(code, j.outputs()[0]["stream"], api_name="/class_here")
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


def test_one_browser_is_one_student_with_one_vote():
    """However many tabs or streams a browser follows with (its id, kept in its storage), it is one in the count
    and casts one vote; a program's streams without an id are a student each."""
    r = Registry()
    c = r.open()
    tabs = [r.join(c.code, "browser-a") for _ in range(5)]
    for _, s in tabs:
        r.confirm(c.code, s.secret)
    b = a_student(r, c.code, "browser-b")
    assert c.students == {"browser-a", "browser-b"} and c.snapshot()["students"] == 2
    q = r.ask(c.code, c.token, "where", ["Ich", "liebe"], [0.3, 0.7], "loves")
    for i, _ in enumerate(tabs):
        r.answer(c.code, "browser-a", q.id, i % 2)  # each tab votes: the browser's last vote stands
    r.answer(c.code, b, q.id, 1)
    assert q.counts() == [1, 1] and c.snapshot(teacher=True)["question"]["answered"] == 2
    for _, s in tabs[:-1]:
        r.leave(c, s)
    assert c.students == {"browser-a", "browser-b"}  # one tab still open
    r.leave(c, tabs[-1][1])
    shown = c.snapshot(teacher=True)
    assert c.students == {"browser-b"} and shown["students"] == 1  # the student gone takes their vote along
    assert shown["question"]["answered"] == 1 and shown["question"]["counts"] == [0, 1]
    programs = [a_student(r, c.code) for _ in range(3)]
    assert len(set(programs)) == 3 and len(c.students) == 4
    with pytest.raises(LiveError) as e:
        r.answer(c.code, "browser-a", q.id, 0)  # no stream open: not a student
    assert e.value.key == "class_not_student"


def test_a_ghost_join_holds_no_snapshot_and_is_never_counted():
    """A /follow whose reader never reads (never confirms its first snapshot): not in the count, no snapshot after
    its first however many changes, ended after confirm_s; a reader that confirms gets the change it missed."""
    async def run():
        r = Registry(confirm_s=0.3)
        c = r.open()
        ghost, reader = [], []

        async def follow(into, confirm):
            async for snap in r.follow(c.code, student=f"b{len(into)}{confirm}"):
                into.append(snap)
                if confirm and "stream" in snap:
                    await asyncio.sleep(0.05)  # a change comes before the reader confirms
                    r.confirm(c.code, snap["stream"])
        tasks = [asyncio.create_task(follow(ghost, False)), asyncio.create_task(follow(reader, True))]
        await asyncio.sleep(0.01)
        r.change(c.code, c.token, "text=A", 0)
        await asyncio.sleep(0.1)
        assert c.students == {"b0True"} and len(c.streams) == 2
        for i in range(100):
            r.change(c.code, c.token, f"text=A&step={i}", i)
            await asyncio.sleep(0)
        await asyncio.wait_for(tasks[0], 2)  # the ghost's stream ended by itself
        assert len(ghost) == 1 and ghost[0]["seq"] == 0  # its first snapshot alone
        assert len(c.streams) == 1 and c.students == {"b0True"}
        assert [s["seq"] for s in reader][:2] == [0, 1] and reader[-1]["seq"] == c.seq
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 20))  # a stream left waiting fails the test, never hangs it


def test_a_closed_page_leaves_the_count_at_once():
    """Gradio unloads a closed page's session (attention_lens/live/page.py unloaded): its streams end and the
    teacher's count follows, with no change of the teacher's."""
    async def run():
        r = Registry()
        c = r.open()
        counts = []

        async def teacher():
            async for snap in r.follow(c.code, c.token):
                counts.append(snap["students"])

        async def follow(session):
            async for snap in r.follow(c.code, student=session, session=session):
                if "stream" in snap:
                    r.confirm(c.code, snap["stream"])
        t = asyncio.create_task(teacher())
        pages = {s: asyncio.create_task(follow(s)) for s in ("one", "two", "three")}
        await asyncio.sleep(0.05)
        assert counts[-1] == 3
        r.gone("two")
        await asyncio.wait_for(pages["two"], 1)  # its stream ended
        await asyncio.sleep(0.01)
        assert counts[-1] == 2 and c.students == {"one", "three"}
        r.gone("nobody")
        for task in (t, pages["one"], pages["three"]):
            task.cancel()
        await asyncio.gather(t, pages["one"], pages["three"], return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 20))  # a stream left waiting fails the test, never hangs it


def test_one_client_cannot_open_more_than_its_classes_while_another_can():
    r = Registry(max_classes=10, per_client=3)
    mine = [r.open("10.0.0.1") for _ in range(3)]
    with pytest.raises(LiveError) as e:
        r.open("10.0.0.1")
    assert e.value.key == "class_client_full"
    r.open("10.0.0.2")  # another client still can
    r.close(mine[0].code, mine[0].token)
    r.open("10.0.0.1")  # and so can the first once it ended one
    assert registry.MAX_CLASSES_PER_CLIENT == 3


def test_one_client_holds_a_bounded_number_of_streams():
    r = Registry(streams_per_client=4)
    c = r.open()
    for _ in range(4):
        r.join(c.code, client="10.0.0.1")
    with pytest.raises(LiveError) as e:
        r.join(c.code, client="10.0.0.1")
    assert e.value.key == "class_client_streams"
    r.join(c.code, client="10.0.0.2")
    assert registry.MAX_STREAMS_PER_CLIENT >= registry.MAX_STUDENTS  # a whole class behind one school's address


def test_wrong_codes_are_rate_limited_per_client():
    """Past its budget a client is refused before its code is looked at (its right code too: a guesser learns
    nothing), while another client still joins; the budget refills with time."""
    r = Registry(wrong_codes=access.WrongCodes(burst=5, every_s=0.2))
    c = r.open()
    for i in range(5):
        with pytest.raises(LiveError) as e:
            r.get(f"WRONG{i:03d}".replace("0", "2").replace("1", "3"), client="10.0.0.9")
        assert e.value.key == "class_unknown"
    with pytest.raises(LiveError) as e:
        r.get(c.code, client="10.0.0.9")
    assert e.value.key == "class_wrong_codes"
    assert r.get(c.code, client="10.0.0.8") is c
    time.sleep(0.25)
    assert r.get(c.code, client="10.0.0.9") is c
    assert access.client_key("2001:db8::1") == access.client_key("2001:db8::ffff:2") == "2001:db8::/64"
    assert access.client_key("::ffff:10.0.0.9") == "10.0.0.9" and access.client_key(None) == ""


def test_a_bad_view_is_refused_and_followers_keep_following():
    """A step >= 2**64 (or any out of 0..MAX_STEP), a view with a lone surrogate or not a query string: a clear
    error to the teacher; the class keeps its view and its followers their streams, and the next good change
    reaches them."""
    async def run():
        r = Registry()
        c = r.open()
        got = []

        async def follow():
            async for snap in r.follow(c.code, student="b"):
                got.append(snap)
                if "stream" in snap:
                    r.confirm(c.code, snap["stream"])
        task = asyncio.create_task(follow())
        r.change(c.code, c.token, "text=A&step=1", 1)
        await asyncio.sleep(0.01)
        for view, step, key in (("text=A", 2 ** 64, "class_bad_step"), ("text=A", -1, "class_bad_step"),
                                ("text=A", registry.MAX_STEP + 1, "class_bad_step"), ("text=A", 1.5, "class_bad_step"),
                                ("text=A", True, "class_bad_step"), ("text=\ud800", 1, "class_bad_view"),
                                ("text=Bär", 1, "class_bad_view"), ("text=A\n", 1, "class_bad_view"),
                                (["text=A"], 1, "class_bad_view")):
            with pytest.raises(LiveError) as e:
                r.change(c.code, c.token, view, step)
            assert e.value.key == key, (view, step)
        assert (c.view, c.step) == ("text=A&step=1", 1)
        r.change(c.code, c.token, "text=B&step=2", 2)
        await asyncio.sleep(0.01)
        assert not task.done() and got[-1]["view"] == "text=B&step=2"
        import orjson
        orjson.dumps(got)  # every snapshot sent is JSON as Gradio writes it (orjson: integers within 64 bits)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 20))  # a stream left waiting fails the test, never hangs it
