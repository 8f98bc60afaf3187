"""The number of users whose started sentence the server keeps is capped (issue 29 finding 4): past the cap the least
recently used user's state goes, and their next server event says to press Start again."""
from __future__ import annotations

import pytest

from attention_lens.live import page
from attention_lens.shell import components


def test_the_app_caps_the_sessions_it_keeps(tiny_translator, monkeypatch):
    """app.py launches with Gradio's own cap on the sessions whose state it keeps (least recently used first)."""
    import gradio as gr

    import app
    from attention_lens.shell import memory
    from transformer.decode.decoding import Translator
    calls = []
    monkeypatch.setattr(Translator, "load", lambda *a, **k: tiny_translator)
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, *a, **k: calls.append(k))
    monkeypatch.setattr(memory, "tune_allocator", dict)
    app.main([])
    from attention_lens.live.page import (
        SESSION_PLACES,  # and a session per live follower (attention_lens/live/page.py, tests/test_live.py)
    )
    assert calls[0]["state_session_capacity"] == components.SESSIONS_MAX + SESSION_PLACES


def test_an_evicted_user_is_told_to_start_again(tiny_translator, monkeypatch):
    from gradio_client import Client

    from tests.serving import serving
    monkeypatch.setattr(components, "SESSIONS_MAX", 2)
    monkeypatch.setattr(page, "SESSION_PLACES", 0)  # no live follower: the cap is SESSIONS_MAX
    with serving(tiny_translator) as url:
        users = [Client(url, verbose=False) for _ in range(3)]
        try:
            for c in users:
                c.predict("Ein Hund rennt.", 8, False, api_name="/start")
            assert users[2].predict(8, False, api_name="/run")[0] == "A dog runs."  # the newest keeps its sentence
            with pytest.raises(Exception, match="Press Start first"):
                users[0].predict(8, False, api_name="/run")  # the least recently used one was dropped
        finally:
            for c in users:
                c.close()


def test_the_user_dropped_is_the_least_recently_used_not_the_oldest(tiny_translator, monkeypatch):
    """Users act in another order than they started: the first to start acts again before a third one starts, so
    the second (least recently used) goes and the first keeps its sentence. Catches the mutation "evict the oldest
    session first" (Gradio's StateHolder.update without its move_to_end), which the test above, whose users act in
    the order they started, lets pass. The clients keep no heartbeat stream: on a starved machine one times out and
    reconnects, and the server runs the page's unload event for that session, which uses it (and reorders the
    sessions) behind the test's back."""
    from gradio_client import Client
    from gradio_client import client as gradio_client

    from tests.serving import serving
    monkeypatch.setattr(components, "SESSIONS_MAX", 2)
    monkeypatch.setattr(page, "SESSION_PLACES", 0)  # no live follower: the cap is SESSIONS_MAX
    monkeypatch.setattr(gradio_client.Client, "_stream_heartbeat", staticmethod(lambda *a, **k: None))
    with serving(tiny_translator) as url:
        users = [Client(url, verbose=False) for _ in range(3)]
        try:
            for c in users[:2]:
                c.predict("Ein Hund rennt.", 8, False, api_name="/start")
            assert "A dog runs.".startswith(users[0].predict(8, False, api_name="/step")[0])  # the oldest, used last
            users[2].predict("Eine Katze schläft.", 8, False, api_name="/start")  # one too many: one goes
            assert users[0].predict(8, False, api_name="/run")[0] == "A dog runs."  # kept, one step on
            assert users[2].predict(8, False, api_name="/run")[0] == "A cat sleeps."
            with pytest.raises(Exception, match="Press Start first"):  # (last: asking opens a new session, which
                users[1].predict(8, False, api_name="/run")  # drops another) the least recently used one was dropped
        finally:
            for c in users:
                c.close()
