"""Live classes kept over a restart (attention_lens/live/store.py and the registry's hooks): a new registry on the same
database has every class still alive with its view, lesson, question and answers, and its teacher's token (which the
database never holds); an ended or expired class is gone from it; the teacher's presence is said to students; every
stream beats while nothing changes; the data folder is the flag's, the environment's or the user's."""
from __future__ import annotations

import asyncio
import os

import pytest

from attention_lens.live import registry, store
from attention_lens.live.registry import LiveError, Registry
from attention_lens.live.store import Store


def restarted(folder, **kw) -> Registry:
    """A registry as a new process has it: a new connection to the folder's database."""
    return Registry(store=Store(folder), **kw)


def a_student(r: Registry, code: str, browser: str, client: str = "") -> str:
    """A browser following the class of `code` (its stream joined and confirmed, as its page does): its id."""
    _, stream = r.join(code, browser, client=client)
    r.confirm(code, stream.secret, client)
    return stream.student


def test_a_class_outlives_its_process_with_its_question_and_answers(tmp_path):
    r = restarted(tmp_path)
    c = r.open()
    r.change(c.code, c.token, "?model=de-en&text=Ich+liebe+dich.&step=2", 2, lesson="?lesson=W1tdXQ&view=2")
    a, b = a_student(r, c.code, "a" * 32), a_student(r, c.code, "b" * 32)
    q = r.ask(c.code, c.token, "where", ["Ich", "liebe", "dich"], [0.1, 0.7, 0.2], "loves")
    r.answer(c.code, a, q.id, 1)
    r.answer(c.code, b, q.id, 2)
    other = r.open()  # a second class, apart
    r.change(other.code, other.token, "text=Hallo.", 0)

    again = restarted(tmp_path)
    d = again.get(c.code)
    assert (d.view, d.step, d.seq, d.lesson) == ("model=de-en&text=Ich+liebe+dich.&step=2", 2, c.seq,
                                                 "lesson=W1tdXQ&view=2")
    assert d.question.keys == ["Ich", "liebe", "dich"] and d.question.row == "loves"
    assert d.question.counts() == [0, 1, 1] and d.question.model == [0.1, 0.7, 0.2] and not d.question.revealed
    assert d.students == set() and d.streams == {} and d.teachers == 0  # who follows: the streams', not the database's
    assert again.get(other.code).view == "text=Hallo."
    with pytest.raises(LiveError) as e:
        again.change(c.code, other.token, "text=Forged", 0)
    assert e.value.key == "class_not_teacher"
    again.reveal(c.code, c.token, q.id)  # her token, kept by her page alone, still is the teacher's
    assert a_student(again, c.code, a) == a  # a student's page reconnecting with its browser's id: still one answer
    assert d.snapshot(student=a)["question"]["mine"] == 1 and d.question.counts(d.students) == [0, 1, 0]
    with pytest.raises(LiveError):
        again.answer(c.code, a, q.id, 0)  # revealed: over
    third = restarted(tmp_path).get(c.code)
    assert third.question.revealed and third.question.counts() == [0, 1, 1]


def test_the_database_holds_the_tokens_hash_never_the_token(tmp_path):
    r = restarted(tmp_path)
    classes = [r.open() for _ in range(3)]
    for c in classes:
        r.change(c.code, c.token, "text=A", 0)
    saved = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the database, its WAL and its index
    for c in classes:
        assert c.token.encode() not in saved and c.code.encode() in saved
        assert store.token_hash(c.token).encode() in saved


def test_an_ended_or_expired_class_is_gone_from_the_database(tmp_path):
    r = restarted(tmp_path)
    ended, kept = r.open(), r.open()
    r.close(ended.code, ended.token)
    again = restarted(tmp_path)
    assert set(again.classes) == {kept.code}
    with pytest.raises(LiveError) as e:
        again.get(ended.code)
    assert e.value.key == "class_unknown"
    later = restarted(tmp_path, ttl_s=0.0)  # two hours later
    assert later.classes == {} and Store(tmp_path).load(registry.CLASS_TTL_S) == []


def test_of_a_student_the_database_holds_their_browsers_id_with_their_answer_and_no_address(tmp_path):
    """What docs/reliability.md 'Live classes' says is stored: a student's answer under their browser's random id;
    no address of a student's or the teacher's. A class taken back counts against its client's cap again once its
    teacher's page follows it (the address comes from her request, not from the database)."""
    async def run():
        r = restarted(tmp_path)
        classes = [r.open("10.9.8.7") for _ in range(3)]
        c = classes[0]
        browser = "0123456789abcdef0123456789abcdef"
        a_student(r, c.code, browser, client="10.6.5.4")
        q = r.ask(c.code, c.token, "next", ["Haus", "Hund"], [0.4, 0.6], "Der")
        r.answer(c.code, browser, q.id, 1, client="10.6.5.4")
        saved = b"".join(p.read_bytes() for p in tmp_path.iterdir())
        assert browser.encode() in saved
        assert b"10.9.8.7" not in saved and b"10.6.5.4" not in saved and b"10.6" not in saved

        again = restarted(tmp_path)
        assert all(again.classes[x.code].client is None for x in classes)
        spare = again.open("10.9.8.7")  # no page of hers back yet: her client is not known
        again.close(spare.code, spare.token)
        pages = [collect(again, x.code, [], x.token, "10.9.8.7") for x in classes]
        await asyncio.sleep(0.05)
        assert all(again.classes[x.code].client == "10.9.8.7" for x in classes)
        with pytest.raises(LiveError) as e:
            again.open("10.9.8.7")  # her 3 classes are hers again
        assert e.value.key == "class_client_full"
        for task in pages:
            task.cancel()
        await asyncio.gather(*pages, return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 10))


def collect(r, code, got, token=None, client="", student=None, session=None):
    """A page's stream into `got`; a student's confirmed at its first snapshot, as the page does ("here")."""
    async def run():
        async for snap in r.follow(code, token, student, session, client):
            got.append(snap)
            if "stream" in snap:
                r.confirm(code, snap["stream"], client)
    return asyncio.ensure_future(run())


def test_a_page_that_follows_again_ends_its_old_stream_and_is_one_student(tmp_path):
    """A page that stopped hearing its stream opens another (its Gradio session, its browser's id) while the old
    one may still be open: the old one ends at once, and the class counts one student, with one answer. Another
    tab of the same browser (another session) keeps its own stream: still one student."""
    async def run():
        r = restarted(tmp_path)
        c = r.open()
        browser = "c" * 32
        old, new, tab = [], [], []
        first = collect(r, c.code, old, student=browser, session="page")
        await asyncio.sleep(0.05)
        q = r.ask(c.code, c.token, "where", ["a", "b"], [0.5, 0.5])
        r.answer(c.code, browser, q.id, 1)
        second = collect(r, c.code, new, student=browser, session="page")
        await asyncio.wait_for(first, 5)  # the old stream ended
        other = collect(r, c.code, tab, student=browser, session="tab")
        await asyncio.sleep(0.05)
        assert new[-1]["you"] == browser and c.students == {browser} and c.snapshot()["students"] == 1
        assert len(c.streams) == 2 and not other.done()  # the other tab's stream stays
        assert new[-1]["question"]["mine"] == 1 and c.question.counts(c.students) == [0, 1]
        for task in (second, other):
            task.cancel()
        await asyncio.gather(second, other, return_exceptions=True)
        assert c.students == set() and c.streams == {}
    asyncio.run(asyncio.wait_for(run(), 10))


def test_students_read_that_the_teacher_is_away_and_that_she_is_back(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "AWAY_S", 0.2)
    monkeypatch.setattr(registry, "BEAT_S", 5.0)

    async def run():
        r = restarted(tmp_path)
        c = r.open()
        student, teacher = [], []
        s = collect(r, c.code, student)
        t = collect(r, c.code, teacher, c.token)
        await asyncio.sleep(0.4)
        assert c.teachers == 1 and not any(x["away"] for x in student)  # her page is there: never away
        t.cancel()  # her page closed
        await asyncio.gather(t, return_exceptions=True)
        assert c.teachers == 0
        await asyncio.sleep(0.1)
        assert not student[-1]["away"]  # not yet
        await asyncio.sleep(0.3)
        assert student[-1]["away"] and student[-1]["seq"] > student[0]["seq"]  # said, as a change
        back = collect(r, c.code, [], c.token)  # her page again (a reload)
        await asyncio.sleep(0.05)
        assert not student[-1]["away"]
        for task in (s, back):
            task.cancel()
        await asyncio.gather(s, back, return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 10))


def test_a_restored_class_waits_for_its_teacher_then_says_she_is_away(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "AWAY_S", 0.2)
    first = restarted(tmp_path)
    c = first.open()

    async def run():
        r = restarted(tmp_path)
        student = []
        s = collect(r, c.code, student)
        await asyncio.sleep(0.05)
        assert not student[-1]["away"]
        await asyncio.sleep(0.3)
        assert student[-1]["away"]
        s.cancel()
        await asyncio.gather(s, return_exceptions=True)
    asyncio.run(asyncio.wait_for(run(), 10))


def test_every_stream_beats_while_nothing_changes(tmp_path, monkeypatch):
    """Without it a closed page is noticed only at the class's next change (Gradio closes a stream at its next
    yield) and a page cannot tell a quiet class from a dropped stream."""
    monkeypatch.setattr(registry, "BEAT_S", 0.05)

    async def run():
        r = restarted(tmp_path)
        c = r.open()
        student, teacher = [], []
        tasks = [collect(r, c.code, student), collect(r, c.code, teacher, c.token)]
        for _ in range(400):  # four beats each, however loaded the machine (at most 20 s)
            if len(student) >= 4 and len(teacher) >= 4:
                break
            await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return student, teacher
    student, teacher = asyncio.run(run())
    for got in (student, teacher):
        beats = [x["beat"] for x in got]
        assert len(beats) >= 4 and beats == sorted(set(beats)), beats
    assert {x["seq"] for x in student} == {0}  # beats, no change


def test_the_data_folder_is_the_flags_the_environments_or_the_users(tmp_path, monkeypatch):
    from attention_lens import launch
    monkeypatch.delenv(store.DATA_ENV, raising=False)
    import platformdirs
    assert store.data_dir() == platformdirs.user_data_dir("attention-lens", appauthor=False) or \
        str(store.data_dir()).endswith("attention-lens")
    monkeypatch.setenv(store.DATA_ENV, str(tmp_path / "env"))
    assert store.data_dir() == tmp_path / "env"
    assert launch.parse_args(["--data-dir", str(tmp_path / "flag")]).data_dir == str(tmp_path / "flag")
    assert os.environ[store.DATA_ENV] != str(tmp_path / "flag")  # parsing alone sets nothing


def test_the_tests_never_use_the_users_data_folder():
    import platformdirs
    here = str(store.data_dir())
    assert os.environ.get(store.DATA_ENV) and not here.startswith(platformdirs.user_data_dir())
