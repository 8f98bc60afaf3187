"""A live class's teacher alone moves it (attention_lens/live/registry.py, attention_lens/live/page.py do): only the
class's teacher token asks a question, reveals it, changes the view and ends the class, whether it comes through the
registry or the page's requests; a student's id, the class's code, another class's token, a token one character off
or no token at all is refused and changes nothing. And each follower wakes for what it is shown: a student for the
teacher's changes, never for another student joining or answering; the teacher for those too."""
from __future__ import annotations

import asyncio

import pytest

from attention_lens.live import page as live_page
from attention_lens.live.registry import LiveError, Registry


def classes():
    """A registry with two classes and a student in the first: (registry, class, its student's id, other class)."""
    r = Registry()
    c, other = r.open(), r.open()
    return r, c, a_student(r, c.code, "browser-1"), other


def a_student(r, code, browser) -> str:
    """A browser in the class (its stream joined and confirmed, as its page does): its id."""
    _, stream = r.join(code, browser)
    r.confirm(code, stream.secret)
    return stream.student


def wrong_tokens(c, sid, other) -> list:
    """Everything but the teacher's token that a page could send as one."""
    return [None, "", sid, c.code, other.token, c.token[:-1], c.token + "x", c.token.upper() if c.token.upper()
            != c.token else c.token.lower(), [c.token], {"token": c.token}]


def test_only_the_teachers_token_changes_asks_reveals_and_ends_the_class():
    """Seen failing when Registry.teacher was replaced by a lookup (`return self.get(code)`): every wrong token then
    changed the view and asked a question."""
    r, c, sid, other = classes()
    r.change(c.code, c.token, "model=de-en&text=Ein+Hund.", 1)
    q = r.ask(c.code, c.token, "where", ["▁Ein", "▁Hund"], [0.25, 0.75], "▁A")
    before = (c.view, c.step, c.seq, c.seen, c.question, c.questions, q.revealed)
    for token in wrong_tokens(c, sid, other):
        for act in (lambda t: r.change(c.code, t, "model=en-de"),
                    lambda t: r.ask(c.code, t, "next", ["a", "b"], [0.5, 0.5]),
                    lambda t: r.reveal(c.code, t, q.id),
                    lambda t: r.close(c.code, t)):
            with pytest.raises(LiveError) as e:
                act(token)
            assert e.value.key == "class_not_teacher", (token, e.value.key)
        assert (c.view, c.step, c.seq, c.seen, c.question, c.questions, q.revealed) == before, token
    assert not c.ended and r.get(c.code) is c
    r.reveal(c.code, c.token, q.id)  # the teacher's own token does each
    assert q.revealed
    r.close(c.code, c.token)
    assert c.ended


def test_the_pages_requests_refuse_what_only_the_teacher_may_do_to_anyone_else(monkeypatch):
    """The page's one request event (live/page.py do): a student's request to change, ask, reveal or end answers
    class_not_teacher and the class is as it was; the teacher's own request does it."""
    r, c, sid, other = classes()
    monkeypatch.setattr(live_page, "REGISTRY", r)
    q = live_page.do({"op": "ask", "code": c.code, "token": c.token, "kind": "next", "keys": ["a", "b"],
                      "model": [0.9, 0.1]})["question"]
    seq = c.seq
    for token in wrong_tokens(c, sid, other):
        for request in ({"op": "view", "view": "model=en-de", "step": 0}, {"op": "reveal", "question": q},
                        {"op": "ask", "kind": "where", "keys": ["x"], "model": [1.0]}, {"op": "close"}):
            with pytest.raises(LiveError, match="class_not_teacher"):
                live_page.do({"code": c.code, "token": token, "student": sid} | request)
    assert c.seq == seq and not c.question.revealed and c.question.id == q and not c.ended and c.view == ""
    assert live_page.do({"op": "reveal", "code": c.code, "token": c.token, "question": q}) == {}
    assert c.question.revealed


def collect(r, c, into: list, token=None):
    """A follower: every snapshot its stream yields, appended as it comes (a student's stream confirmed at its
    first, as the page does)."""
    async def run():
        async for snap in r.follow(c.code, token, student=None if token else "browser-2"):
            into.append(snap)
            if "stream" in snap:
                r.confirm(c.code, snap["stream"])
    return asyncio.ensure_future(run())


def test_a_student_wakes_for_the_teachers_changes_and_the_teacher_also_for_the_students():
    """Each follower's stream yields a snapshot when what it is shown changes: a student for the teacher's change, not
    for another student joining or answering; the teacher for each of them. Seen failing when the two marks of
    Registry.follow were swapped (a student then woke for every join and answer, the teacher for none of them)."""
    async def lesson():
        r, c, _, _ = classes()
        q = r.ask(c.code, c.token, "where", ["▁Ein", "▁Hund"], [0.25, 0.75])
        student, teacher = [], []
        tasks = [collect(r, c, student), collect(r, c, teacher, c.token)]
        await asyncio.sleep(0.05)
        assert len(student) == 1 and len(teacher) >= 1  # each: the class as it is now
        late = a_student(r, c.code, "browser-3")  # another student joins, then answers
        await asyncio.sleep(0.05)
        r.answer(c.code, late, q.id, 1)
        await asyncio.sleep(0.05)
        assert len(student) == 1, [s["students"] for s in student]  # not woken: nothing it shows changed
        assert len(teacher) >= 2 and teacher[-1]["students"] == 3 and teacher[-1]["question"]["answered"] == 1
        assert teacher[-1]["question"]["counts"] == [0, 1]
        r.change(c.code, c.token, "model=de-en&text=Hallo.", 0)
        await asyncio.sleep(0.05)
        assert len(student) == 2 and student[-1]["view"] == "model=de-en&text=Hallo."
        assert student[-1]["question"]["counts"] is None  # a student sees no counts before the reveal
        assert teacher[-1]["view"] == "model=de-en&text=Hallo."
        r.close(c.code, c.token)
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert student[-1]["ended"] and teacher[-1]["ended"]
    asyncio.run(lesson())
