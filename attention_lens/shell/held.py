"""Every user's started sentence within one byte budget for the whole server.

A DecodingSession holds everything the view may ask of its sentence: the encoder's self-attention (L, H, S, S), the
cross-attention keys and values, and per position its attention rows, keys, values and final state. For a
2,000-character input that is about 50 MB (`python -m benchmarks.held`), and Gradio kept it in the user's gr.State
for an hour: 30 such users held 1.5 GB. All of it can be computed again from a few numbers: the source's ids, the
target's ids with which of them a user forced, the heads switched off, the cursor, the length limit (a `Recipe`).

So gr.State keeps a `Held`: the recipe and a key into `Budget`, a least-recently-used store of the sessions
themselves that holds at most `limit` bytes, all users together (three quarters of `--session-memory MB`,
attention_lens/launch.py).
A session pushed out of it is rebuilt from its recipe the next time its user asks (one decoder step per position,
as when it was decoded: the same model, the same pieces, the same forced marks), so nobody loses their sentence;
only a user whose gr.State Gradio itself dropped (its capacity, its time to live) is told to press Start again.

`keep(demo, state)` puts this in front of every event that reads or writes `state` (the page's ctx.state), where
requests come in: a Held is resolved to its session before the handler runs, and the session in the state after it
is held again; the handlers see DecodingSessions as before.
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import gradio as gr
import numpy as np

from transformer.decode.decoding import DecodingSession

MB = 1024 * 1024


def machine_memory() -> int:
    """Bytes of physical memory (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def default_memory() -> int:
    """--session-memory when not given: a sixteenth of the machine's memory, from 64 MB to 384 MB (a VM with 8 GB:
    384 MB; a 1 GB container: 64 MB)."""
    return int(min(384 * MB, max(64 * MB, machine_memory() // 16)))


# --session-memory is shared: three quarters for the started sentences (Budget.limit), one quarter for Gradio's own
# state of each session (its SessionState: a copy of the config of the page's blocks, per visitor), whose number
# Gradio caps (launch(state_session_capacity)): SESSION_STATE_BYTES each, 21.8 MB a round of 60 visitors joining and
# leaving (measured through the served app; `python -m benchmarks.held` measures it again).
SENTENCES_SHARE = 0.75
SESSION_STATE_BYTES = 363 * 1024
SESSIONS_MIN = 16


def sentence_bytes(memory: int) -> int:
    """The started sentences' part of `memory` bytes."""
    return int(memory * SENTENCES_SHARE)


def gradio_sessions(memory: int) -> int:
    """How many sessions Gradio keeps within the rest of `memory` bytes (at least SESSIONS_MIN); the live class's
    followers get places of their own beside these (attention_lens/live/page.py SESSION_PLACES)."""
    return max(SESSIONS_MIN, int(memory * (1 - SENTENCES_SHARE)) // SESSION_STATE_BYTES)


def nbytes(session: DecodingSession) -> int:
    """The bytes of a session's arrays and tensors (what it holds beyond a few small lists)."""
    def size(x) -> int:
        if x is None:
            return 0
        if isinstance(x, np.ndarray):
            return x.nbytes
        return x.numel() * x.element_size()
    n = size(session.encoder_self) + size(session.cross_k) + size(session.cross_v)
    for p in session.positions:
        n += size(p.self_row) + size(p.cross_row) + size(p.k) + size(p.v) + size(p.hidden) + 200  # + the object
    return n


@dataclass(frozen=True)
class Recipe:
    """What a session is made of, to build it again: a few hundred numbers."""

    translator: object
    source_ids: tuple
    tokens: tuple  # the target's ids after <s>, as the history holds them
    forced: tuple  # per token: chosen by the user
    ablated: frozenset
    cursor: int
    reach: int  # the session's own: its limit follows from it (DecodingSession.limit)
    notes: tuple

    @classmethod
    def of(cls, s: DecodingSession) -> Recipe:
        return cls(s.translator, tuple(s.source_ids), tuple(p.token for p in s.positions[1:]),
                   tuple(p.forced for p in s.positions[1:]), frozenset(s.ablated), s.cursor, s.reach, tuple(s.notes))

    def build(self) -> DecodingSession:
        """The session again: its positions computed as they were (greedy steps, forced pieces, followed ones)."""
        tr = self.translator
        r = tr.start_ids(list(self.source_ids), ablate=self.ablated or None)
        r.reach = self.reach  # the same limit while its positions are computed again
        for token, forced in zip(self.tokens, self.forced):
            if forced:
                r.force(token)
            elif token == r.positions[r.cursor].greedy:
                r.step()
            else:
                r.follow([token])
        r.cursor, r.reach = self.cursor, self.reach
        r.notes = list(self.notes)
        return r


class Held:
    """What the user's gr.State keeps: the session's recipe and its key in the budget."""

    __slots__ = ("__weakref__", "key", "recipe")

    def __init__(self, key: int, recipe: Recipe):
        self.key, self.recipe = key, recipe

    def __deepcopy__(self, memo):  # Gradio copies state values; a Held is never changed
        return self


class Budget:
    """Sessions by key, least recently used first out, all together at most `limit` bytes (the newest one stays
    even when it alone is larger). Thread-safe: Gradio runs handlers on many threads."""

    def __init__(self, limit: int):
        self.limit = limit
        self.sessions: OrderedDict[int, tuple[DecodingSession, int]] = OrderedDict()
        self.total = 0
        self.rebuilt = 0  # sessions built again from their recipe (benchmarks, tests)
        self._lock = threading.Lock()
        self._next = 0

    def hold(self, session: DecodingSession) -> Held:
        size = nbytes(session)
        with self._lock:
            self._next += 1
            key = self._next
            self.sessions[key] = (session, size)
            self.total += size
            while self.total > self.limit and len(self.sessions) > 1:
                _, (_, gone) = self.sessions.popitem(last=False)
                self.total -= gone
        held = Held(key, Recipe.of(session))
        weakref.finalize(held, self.release, key)  # the user's state went: so does its session
        return held

    def release(self, key: int) -> None:
        with self._lock:
            if key in self.sessions:
                self.total -= self.sessions.pop(key)[1]

    def session(self, held: Held) -> DecodingSession:
        """The held session (the most recently used now), or built again from its recipe if it was pushed out."""
        with self._lock:
            if held.key in self.sessions:
                self.sessions.move_to_end(held.key)
                return self.sessions[held.key][0]
        self.rebuilt += 1
        return held.recipe.build()


BUDGET = Budget(sentence_bytes(default_memory()))


def configure(memory_mb: float | None) -> int:
    """Sets the budget from --session-memory (None: default_memory) before the server starts; returns the sessions
    Gradio may keep (launch(state_session_capacity), besides the live followers' places)."""
    memory = default_memory() if memory_mb is None else int(memory_mb * MB)
    BUDGET.limit = sentence_bytes(memory)
    return gradio_sessions(memory)


def keep(demo: gr.Blocks, state: gr.State, budget: Budget = BUDGET) -> None:
    """Every event of `demo` that reads or writes `state` sees the user's DecodingSession while it runs; between
    requests the state keeps a Held (the module's docstring)."""
    inner = demo.process_api
    signature = inspect.signature(functools.partial(gr.Blocks.process_api, demo))  # its parameters, by name

    async def process_api(*args, **kw):
        call = signature.bind(*args, **kw)
        session_state = call.arguments.get("state")
        if session_state is None:
            return await inner(*call.args, **call.kwargs)
        if state._id in session_state and isinstance(value := session_state[state._id], Held):
            session_state[state._id] = budget.session(value)
        try:
            return await inner(*call.args, **call.kwargs)
        finally:
            if state._id in session_state and isinstance(value := session_state[state._id], DecodingSession):
                session_state[state._id] = budget.hold(value)

    demo.process_api = process_api
