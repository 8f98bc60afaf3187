"""The started sentences of all users live within one byte budget (attention_lens/shell/held.py): the least recently
used pushed out first, and built again from their recipe when their user asks, so each still steps, forces and
exports as it did."""
from __future__ import annotations

import uuid

import pytest

from attention_lens.shell import held
from tests.serving import fn_indices, raw_call, serving

LONG = " ".join(["Ein Hund rennt.", "Eine Katze schläft.", "Der Mann liest ein Buch."] * 90)[:2000]


@pytest.fixture()
def small_budget(tiny_translator, monkeypatch):
    """A budget of about three long sessions."""
    s = tiny_translator.start(LONG).run()
    monkeypatch.setattr(held.BUDGET, "limit", 3 * held.nbytes(s) + 1000)
    monkeypatch.setattr(held.BUDGET, "rebuilt", 0)
    return held.BUDGET


def test_a_recipe_builds_the_same_session(tiny_translator):
    s = tiny_translator.start(LONG).run()
    s.goto(3)
    s.force(s.topk(3)[2][0])  # not the greedy piece
    s.run()
    s.goto(2)
    r = held.Recipe.of(s).build()
    assert [p.token for p in r.positions] == [p.token for p in s.positions]
    assert [p.forced for p in r.positions] == [p.forced for p in s.positions]
    assert r.cursor == s.cursor and r.limit == s.limit and r.source_ids == s.source_ids
    assert r.attention.to_dict(decimals=4) == s.attention.to_dict(decimals=4)


def test_thirty_long_sessions_stay_within_the_budget_and_each_still_works(tiny_translator, small_budget):
    other = tiny_translator.start(LONG).topk(3)[2][0]  # a piece to force
    with serving(tiny_translator) as url:
        fns = fn_indices(url)
        users = [uuid.uuid4().hex for _ in range(30)]
        alone = {}
        for u in users:
            kind, data = raw_call(url, "start", [LONG, 8, False, None], session=u, fns=fns)
            assert kind == "complete", data
            assert small_budget.total <= small_budget.limit, "the budget holds at most its bytes"
        assert len(small_budget.sessions) <= 3
        # every user, the first ones pushed out long ago: the same answers as a session that was never pushed out
        fresh = uuid.uuid4().hex
        raw_call(url, "start", [LONG, 8, False, None], session=fresh, fns=fns)
        for name, args in (("step", [8, False]), ("force", [other, 8, False]), ("run", [8, False]),
                           ("goto", [2, 8, False])):
            alone[name] = raw_call(url, name, args, session=fresh, fns=fns)
        for u in users:
            for name, args in (("step", [8, False]), ("force", [other, 8, False]), ("run", [8, False]),
                               ("goto", [2, 8, False])):
                kind, data = raw_call(url, name, args, session=u, fns=fns)
                assert kind == "complete", (name, data)
                assert data[1] == alone[name][1][1] and data[0] == alone[name][1][0], name  # translation, payload
            kind, files = raw_call(url, "export", [""], session=u, fns=fns)
            assert kind == "complete" and files, files
            assert small_budget.total <= small_budget.limit
        assert small_budget.rebuilt >= 27, "the sessions pushed out were built again"
