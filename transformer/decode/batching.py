"""Decoding several users' sentences together, each as it is decoded alone.

`run_rows(sessions)` is `finish()` for many sessions at once: rows at one position go through the decoder's modules
together, one pass for B rows instead of B passes (transformer/decode/step.py's `feed_rows`, the very function a
session's
own step calls with one row): each row's cache its own, the cross-attention padded to the longest source with a
mask, each row's attention read by the recorder's hooks and its heads switched off by HeadAblation's pre-hooks. A row
equals the same row alone within step.TOLERANCE, with the same pieces (a near tie is computed again alone:
tests/test_batching.py).

`Batcher` collects the sessions that reach one model together (a new batch waits, at most `window_s`, for the
callers that announced themselves and are still encoding; a lone caller never waits; at most `max_rows` rows) and
runs them to the end together on one worker thread. Each caller hands over a session it has begun itself
(`Translator.start_ids(first=False)`: the encoder's pass under hooks, on the caller's thread), without its first
position, <s>, which the batch computes for all its new rows in one pass; nothing here calls back into the caller. A
caller that arrives while a batch runs joins it before its next step, as long as no row
of the batch has gone `join_steps` positions: the batch's rows wait while the newcomers catch up, then go on with
them. Each caller gets its own session back the moment its row is done. A session whose source is longer than
`max_pieces` is decoded apart by its caller, and an error in a batch is answered by decoding each of its sessions
alone, so it reaches only the request that caused it.

A batch computes `DecodingSession.finish()`: on to the end, greedily or as a session's `script` says (pieces at given
positions, up to a `stop`), so Compare's replays (`Translator.replays`, `Batcher.run_all`: three rows per request) and
a forced piece's continuation (`Translator.finish`) are batched too.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import torch

from .step import Rows, feed_rows

WINDOW_S = 0.05  # the longest a new batch waits for callers still encoding (arrive()); none others: it starts at once
MAX_ROWS = 32  # rows decoded together at most
JOIN_STEPS = 8  # a caller arriving while a batch runs joins it while no row of it has gone this many positions
MAX_PIECES = 64  # a source longer than this is decoded apart (its steps are dearer and it may decode for long)


def run_rows(sessions, done=None, more=None) -> None:
    """`finish()` every session: each computed on to its end (greedily, or as its script says: DecodingSession.
    next_feed), rows at the same position together (feed_rows); `done(session)` is called as each one ends.
    `more(active)`, when given, is asked before each step for sessions to add (not yet stepped from where they are;
    `active`: the rows not done, never none); the furthest behind step first, until they meet the others' position
    and go on with them."""
    active: list = []
    fed: dict[int, tuple[int, bool]] = {}  # id(session) -> what it is fed next

    def admit(new) -> None:
        for s in new:
            if (f := s.next_feed()) is not None:
                fed[id(s)] = f
            elif done:
                done(s)
        active[:] = active + [s for s in new if id(s) in fed]

    admit(sessions)
    rows = None
    while active:
        if more is not None:
            admit(more(active))
        by_pos = defaultdict(list)
        for s in active:
            by_pos[s.cursor].append(s)
        group = by_pos[min(by_pos)]  # the furthest behind first, so that the positions meet
        rows = rows.keep(group) if rows is not None and rows.holds(group) else Rows(group)
        tokens, forced = zip(*(fed.pop(id(s)) for s in group))  # a session begun without <s> is fed it first
        for s, p in zip(group, feed_rows(group, list(tokens), list(forced), rows=rows)):
            s._put(p)
            if (f := s.next_feed()) is not None:
                fed[id(s)] = f
            elif done:
                done(s)
        active[:] = [s for s in active if id(s) in fed]


class _Item:
    __slots__ = ("error", "event", "session")

    def __init__(self, session):
        self.session, self.error, self.event = session, None, threading.Event()


class Batcher:
    """Runs the sessions handed to `run` to their end, those that arrive together in one batch (see the module
    docstring). Thread-safe; one worker thread per Batcher, started at the first batched request. `window_s` 0
    and `max_rows` 1 turn batching off (every session is run by its caller, as without a Batcher)."""

    def __init__(self, window_s: float = WINDOW_S, max_rows: int = MAX_ROWS, max_pieces: int = MAX_PIECES,
                 enabled: bool = False, join_steps: int = JOIN_STEPS):
        self.window_s, self.max_rows, self.max_pieces, self.enabled = window_s, max_rows, max_pieces, enabled
        self.join_steps = join_steps
        self._cond = threading.Condition()
        self._pending: list[_Item] = []
        self._arriving = 0  # callers between arrive() and run(): encoding their sentences
        self._worker = None
        self.batches: list[int] = []  # the size of each batch run (the last 1000), for benchmarks and tests

    def configure(self, enabled: bool, window_s: float | None = None, max_rows: int | None = None,
                  max_pieces: int | None = None) -> Batcher:
        self.enabled = enabled
        self.window_s = self.window_s if window_s is None else window_s
        self.max_rows = self.max_rows if max_rows is None else max_rows
        self.max_pieces = self.max_pieces if max_pieces is None else max_pieces
        return self

    def arrive(self, n: int = 1) -> None:
        """A caller is on its way (encoding its sentence; n=-1: it gave up): a new batch waits for it, up to
        `window_s`, so that callers of one burst meet in one batch while a lone caller never waits."""
        with self._cond:
            self._arriving += n
            self._cond.notify_all()

    def run(self, session, pieces: int, arrived: bool = False):
        """`session.finish()`, in a batch with other callers' sessions when batching is on; the session, finished.
        `pieces`: its source's length (over max_pieces: decoded apart); `arrived`: its caller called `arrive()`."""
        return self.run_all([session], [pieces], arrived)[0]

    def run_all(self, sessions: list, pieces: list[int], arrived: bool = False) -> list:
        """`run` for several sessions of one caller (e.g. a comparison's intact and ablated replays), in one batch
        when batching is on: the sessions, finished, in order. An error of one is raised after all are done."""
        batched = self.enabled and self.max_rows >= 2
        items = [_Item(s) if batched and n <= self.max_pieces else None for s, n in zip(sessions, pieces)]
        with self._cond:
            self._arriving -= 1 if arrived else 0
            if any(items):
                self._pending.extend(it for it in items if it is not None)
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(target=self._loop, name="attention-lens-batcher", daemon=True)
                    self._worker.start()
            self._cond.notify_all()
        out, error = [], None
        for session, it in zip(sessions, items):
            try:
                if it is not None and it.event.wait() and it.error is not None:
                    raise it.error
                out.append(session.finish() if it is None else session)
            except Exception as e:  # noqa: BLE001 - raised once the others are done
                error = error or e
                out.append(None)
        if error is not None:
            raise error
        return out

    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                deadline = time.monotonic() + self.window_s
                while (len(self._pending) < self.max_rows and self._arriving > 0
                       and (left := deadline - time.monotonic()) > 0):
                    self._cond.wait(left)
                batch, self._pending = self._pending[:self.max_rows], self._pending[self.max_rows:]
            self.batches = (self.batches + [0])[-1000:]  # its size, counted by _decode as callers join it
            self._decode(batch)

    def _join(self, active: list, taken: int) -> list[_Item]:
        """The callers waiting now that may join a running batch whose rows not done are `active`, of `taken` rows
        so far: while none of its rows is `join_steps` positions on (they wait while the newcomers catch up), up to
        `max_rows` rows in all."""
        if taken >= self.max_rows or any(s.cursor + 1 >= self.join_steps for s in active):
            return []
        with self._cond:
            new, self._pending = self._pending[:self.max_rows - taken], self._pending[self.max_rows - taken:]
        return new

    def _decode(self, batch: list[_Item]) -> None:
        """The batch's sessions run to their end, with the callers that join it on the way (counted in the last of
        `batches`)."""
        rows: dict[int, _Item] = {}  # id(session) -> its caller, every row of this batch
        taken = 0

        def begin(items: list[_Item]) -> list:
            nonlocal taken
            taken += len(items)
            self.batches[-1] = taken
            rows.update((id(it.session), it) for it in items)
            return [it.session for it in items]

        try:
            run_rows(begin(batch), lambda s: rows[id(s)].event.set(), lambda active: begin(self._join(active, taken)))
        except Exception:  # noqa: BLE001 - each session again alone: an error reaches only its own request
            for it in rows.values():
                if it.event.is_set():
                    continue
                try:
                    it.session.finish()
                except Exception as e:  # noqa: BLE001 - handed to its caller
                    it.error = e
                it.event.set()
        finally:
            for it in rows.values():
                it.event.set()
