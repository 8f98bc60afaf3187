"""Decoding several users' sentences together, each as it is decoded alone.

`Batcher` collects the sessions that reach one model together and computes them to their end in one decoding
(transformer/decode/session.py's `decode`: the sessions at one position go through the decoder's modules in one pass,
`step.feed_rows`, each row with its own cache, its attention read by the recorder's hooks and its heads switched off by
HeadAblation's pre-hooks). A row equals the same row alone within step.TOLERANCE, with the same pieces
(tests/test_batching.py).

A new batch waits, at most `window_s`, for the callers that announced themselves (`arrive`) and are still encoding; a
lone caller never waits; a batch holds at most `max_rows` rows and runs on one worker thread. Each caller hands over a
session it has begun itself (`Translator.start_ids(first=False)`: the encoder's pass under hooks, on the caller's
thread) without its first position, <s>, which the batch computes for all its new rows in one pass, and the Script to
decode it by (None: greedily). A caller that arrives while a batch runs joins it before its next pass, as long as no row
of the batch has gone `join_steps` positions: the batch's rows wait while the newcomers catch up, then go on with them.
Each caller gets its own session back the moment its row is done. A session whose source is longer than `max_pieces`
is decoded apart by its caller, and an error in a batch is answered by decoding each of its sessions alone, so it
reaches only the request that caused it.
"""
from __future__ import annotations

import threading
import time

import torch

from .session import decode

WINDOW_S = 0.05  # the longest a new batch waits for callers still encoding (arrive()); none others: it starts at once
MAX_ROWS = 32  # rows decoded together at most
JOIN_STEPS = 8  # a caller arriving while a batch runs joins it while no row of it has gone this many positions
MAX_PIECES = 64  # a source longer than this is decoded apart (its steps are dearer and it may decode for long)


class _Item:
    __slots__ = ("error", "event", "script", "session")

    def __init__(self, session, script):
        self.session, self.script, self.error, self.event = session, script, None, threading.Event()


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

    @property
    def arriving(self) -> int:
        """Callers between `arrive()` and `run()` (encoding their sentences): 0 whenever none is on its way."""
        return self._arriving

    def run(self, session, pieces: int, script=None, arrived: bool = False):
        """`session.finish(script)`, in a batch with other callers' sessions when batching is on; the session, finished.
        `pieces`: its source's length (over max_pieces: decoded apart); `arrived`: its caller called `arrive()`."""
        return self.run_all([session], [pieces], [script], arrived)[0]

    def run_all(self, sessions: list, pieces: list[int], scripts: list | None = None, arrived: bool = False) -> list:
        """`run` for several sessions of one caller (e.g. a comparison's intact and ablated replays), in one batch
        when batching is on: the sessions, finished, in order. An error of one is raised after all are done."""
        scripts = scripts or [None] * len(sessions)
        batched = self.enabled and self.max_rows >= 2
        items = [_Item(s, script) if batched and n <= self.max_pieces else None
                 for s, script, n in zip(sessions, scripts, pieces)]
        with self._cond:
            self._arriving -= 1 if arrived else 0
            if any(items):
                self._pending.extend(it for it in items if it is not None)
                if self._worker is None or not self._worker.is_alive():
                    self._worker = threading.Thread(target=self._loop, name="attention-lens-batcher", daemon=True)
                    self._worker.start()
            self._cond.notify_all()
        out, error = [], None
        for session, script, it in zip(sessions, scripts, items):
            try:
                if it is not None and it.event.wait() and it.error is not None:
                    raise it.error
                out.append(session.finish(script) if it is None else session)
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
            return [(it.session, it.script) for it in items]

        try:
            first = begin(batch)
            decode([s for s, _ in first], [script for _, script in first], lambda s: rows[id(s)].event.set(),
                   lambda active: begin(self._join(active, taken)))
        except Exception:  # noqa: BLE001 - each session again alone: an error reaches only its own request
            for it in rows.values():
                if it.event.is_set():
                    continue
                try:
                    it.session.finish(it.script)
                except Exception as e:  # noqa: BLE001 - handed to its caller
                    it.error = e
                it.event.set()
        finally:
            for it in rows.values():
                it.event.set()
