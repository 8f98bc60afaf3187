"""A live class's question and its reveal (attention_lens/live/registry.py): the revealed answer is about the view it
was asked on, so it goes when the teacher moves on; an open question stays through a change of view."""
from __future__ import annotations

from attention_lens.live.registry import Registry


def test_a_reveal_goes_when_the_teacher_moves_on():
    r = Registry()
    c = r.open()
    r.change(c.code, c.token, "model=de-en&text=Ich&step=1")
    _, stream = r.join(c.code, "browser-a")
    r.confirm(c.code, stream.secret)  # its page read its first snapshot: a student
    a = stream.student
    q = r.ask(c.code, c.token, "where", ["Ich", "."], [0.9, 0.1], "I")
    r.change(c.code, c.token, "model=de-en&text=Ich&step=2")  # open: the students may still answer
    assert c.snapshot(student=a)["question"]["id"] == q.id
    r.answer(c.code, a, q.id, 0)
    r.reveal(c.code, c.token, q.id)
    seq = c.seq
    r.change(c.code, c.token, "model=de-en&text=Ich&step=2")  # the same view sent again: the reveal stays
    assert c.snapshot(student=a)["question"]["revealed"] is True
    r.change(c.code, c.token, "model=de-en&text=Ich&step=3")  # the teacher moves on: the reveal is gone
    assert c.seq > seq and c.snapshot(student=a)["question"] is None
    assert c.snapshot(teacher=True)["question"] is None
