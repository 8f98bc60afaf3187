"""One way to move a session (transformer/decode/session.py): every path that adds a position (start, step, force,
run, follow, finish, a batch, a replay) feeds it through `advance`; a replay's pieces are a Script handed to the
decoding, never kept by the session, so a session finished after a followed reference goes on greedily; and one rule,
`done_at`, ends every decoding at its limit: translate, a session, a batch and the trajectory end at the same place."""
from __future__ import annotations

import pytest

from transformer.decode import session as session_module
from transformer.decode.batching import Batcher
from transformer.decode.session import Script, decode, max_new_tokens

TEXT = "Ein Hund rennt durch den Schnee."


@pytest.fixture()
def batching(translator):
    """Switch the translator's batcher on or off for one test (param), and back off after it."""
    def use(on: bool):
        translator.batcher = Batcher(window_s=0.01, enabled=on)
        return translator
    yield use
    translator.batcher = Batcher()


@pytest.mark.parametrize("batched", [False, True])
def test_a_followed_reference_forced_and_finished_goes_on_greedily(batching, batched):
    """Translator.follow, a piece forced mid-way, Translator.finish: the continuation is greedy after that prefix, as
    translate's would be ("running through the snow", not the reference's "running in the snow"), and the limit is
    greedy decoding's again once the followed pieces past the cursor are gone."""
    tr = batching(batched)
    src = tr.source_ids(TEXT)
    r = tr.follow(src, tr.target_ids_of("A dog is running in the snow.")[1:])
    r.goto(2)
    r.force("▁cat")
    tr.finish(r)
    greedy = tr.start_ids(src)
    greedy.step()
    greedy.step()
    greedy.force("▁cat")
    greedy.run()
    assert r.target_ids == greedy.target_ids and r.translation == "A dog cat running through the snow."
    long = tr.follow(src, tr.target_ids_of(" ".join(["A dog is running in the snow."] * 5))[1:])
    assert long.limit > greedy.limit == max_new_tokens(len(src), tr.config.max_len)
    long.goto(2)
    long.force("▁cat")
    assert long.limit == greedy.limit
    assert tr.finish(long).target_ids == greedy.target_ids


def test_every_way_of_moving_a_session_feeds_advance(translator, monkeypatch):
    """Each position a session gains was fed through `advance`: the rows it was given count every new position."""
    tr = translator
    rows = []
    advance = session_module.advance

    def counted(sessions, tokens, forced, cache=None):
        rows.append(len(sessions))
        return advance(sessions, tokens, forced, cache)
    monkeypatch.setattr(session_module, "advance", counted)
    src = tr.source_ids(TEXT)
    ref = tr.target_ids_of("A dog is running in the snow.")[1:]
    held: list = []

    def moved(sessions, how) -> None:
        kept = [p for s in sessions for p in s.positions]  # alive, so that no new position takes the id of one
        before = {id(p) for p in kept}
        rows.clear()
        how()
        new = sum(1 for s in sessions for p in s.positions if id(p) not in before)
        assert new > 0 and sum(rows) == new, (new, rows)

    moved(held, lambda: held.append(tr.start(TEXT)))
    s = held[0]
    moved([s], s.step)
    moved([s], lambda: s.force("▁The"))
    moved([s], s.run)
    s.goto(2)
    moved([s], lambda: s.follow(ref[2:]))
    s.goto(3)
    moved([s], s.finish)
    others = [tr.start_ids(src, first=False), tr.start(TEXT, [("cross", 0, 0)])]
    moved(others, lambda: decode(others, [Script({2: (ref[1], True)}), None]))
    got = []
    moved(got, lambda: got.append(tr.follow(src, ref)))
    moved(got, lambda: got.extend(tr.replays(src, [(None, {3: (ref[2], True)}, None)])))
    moved(got, lambda: got.append(tr.decode(TEXT)))


def test_a_decoding_to_its_limit_ends_at_the_same_place_everywhere(translator):
    """A sentence repeated until its translation reaches the length limit (the model's max_len - 1 pieces, never
    </s>): translate, a session stepped to its end, the same session in a batch with two others, and its trajectory
    all end at position `limit`, and not a position before or after it."""
    tr, eos = translator, translator.config.eos_id
    src = tr.source_ids(f"{TEXT} " * 30)
    limit = max_new_tokens(len(src), tr.config.max_len)
    assert limit == min(tr.config.max_len - 1, 2 * len(src) + 10) == 255
    ids = tr.translate_ids([src])[0]
    assert len(ids) == limit and eos not in ids, "the repeated sentence should run to the limit"
    s = tr.start_ids(src).run()
    assert s.target_ids[1:] == ids and s.cursor == s.limit == limit and s.done
    s.goto(limit - 1)
    assert not s.done and s.step() and s.cursor == limit and s.done and not s.step()
    traj = s.trajectory()
    assert traj.done == [False] * limit + [True] and traj.limit == limit and traj.n == limit + 1
    batch = [tr.start_ids(src, first=False), tr.start("Hallo."), tr.start_ids(tr.source_ids(TEXT), first=False)]
    decode(batch)
    assert batch[0].target_ids == s.target_ids and batch[0].done and len(batch[0].positions) == limit + 1
    with pytest.raises(ValueError, match="finished"):
        batch[0].force("▁dog")


def test_a_model_that_chooses_a_special_piece_is_still_decoded_greedily(translator, monkeypatch):
    """Greedy decoding feeds the model's own argmax, whatever piece it is (an untrained model picks <s> or <pad>):
    a session runs to its end as translate does; only a piece a user or a script gives is refused for being special."""
    tr = translator
    bos = tr.tokenizer.bos_id
    project = tr.model.project

    def prefers_bos(h):  # the model's scores with <s> far ahead of every other piece
        out = project(h).clone()
        out[..., bos] += 1e4
        return out
    monkeypatch.setattr(tr.model, "project", prefers_bos)
    s = tr.start(TEXT).run()
    assert s.target_ids[1:] == tr.greedy_ids(TEXT) if hasattr(tr, "greedy_ids") else s.target_ids[1:]
    assert set(s.target_ids[1:]) == {bos} and s.done and len(s.target_ids) - 1 == s.limit
    monkeypatch.setattr(tr.model, "project", project)
    r = tr.start(TEXT)
    with pytest.raises(ValueError, match="special piece"):
        r.force("<s>")
