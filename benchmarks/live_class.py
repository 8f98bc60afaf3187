"""A live class (issue 59): N followers (each its own session and stream: /follow) on one class; a teacher (the
API's /class_open and /class_change, as the page's Teach live sends its view) makes 20 changes.

    python -m benchmarks.live_class [--students 60] [--changes 20] [--gap 0.5] [--idle 60] [--client light|gradio]
    python -m benchmarks.live_class [--students 60] [--changes 20] [--gap 0.5] [--idle 60] [--client light|gradio]
                                    [--rounds 10]
    python -m benchmarks.live_class --restart [--students 60]

--rounds N: then the followers join and leave N times, the server's RSS after each round.

--restart: the app (with a data folder of its own) is killed with SIGKILL while the N followers follow a class, and
started again on the same port and folder; each follower reconnects as the page does (assets/live.js: nothing heard
for 12 s, then the server's robots.txt asked at 0.5, 1, 2, 4, 4... s, each +-25 %, then the stream opened again with
its browser's id, and confirmed). Prints the time from the server being up (its robots.txt answering) until each
follower has a snapshot of the class again (p50, p95, max), and that the class's view and change count came back.

The followers' clients: `light` (the default) runs them all in one asyncio loop of this process, each speaking
Gradio's queue protocol as gradio_client does (POST queue/join with /follow's fn_index and its own session hash, then
the session's SSE stream queue/data, process_generating's output applied as a diff with gradio_client's own
apply_diff; the heartbeat stream when the app's config asks for it, as gradio_client opens it); `gradio`: one
gradio_client Client per follower, each with its threads (stream reader, heartbeat, the job's), which saturate this
2-core machine above about 60 followers.

The app runs as a subprocess (app.py, as served). Prints, per change, when each follower had it after the teacher
sent it (p50, p95, max over every follower and change); the server's CPU seconds over `--idle` s with no follower
(the reference, measured first) and with the N followers holding their streams; its RSS before they joined and with
them (per follower); and /translate's time alone and while the N follow (the model's events are not queued behind
the followers: their own concurrency group). Followers' clients run in this process, on the same machine (the
issue's targets count them). Prints, never asserts.
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from .classroom import ROOT, ready, server_cpu, stop
from .common import pct, rss_mb

VIEW = "model=de-en&text=Ich+liebe+dich.&step={step}&kind=cross&layer=2&head=3"


DEAD_S = 12.0  # assets/live.js DEAD_MS: a page that heard nothing this long reconnects


def launch(port: int, data: str) -> subprocess.Popen:
    """app.py on `port`, its live classes in the folder `data` (never the user's data folder)."""
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False")
    return subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port), "--data-dir", data], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def follower(url: str, code: str, got: dict, joined: threading.Event, ready_n: list, lock: threading.Lock,
             gate: threading.Semaphore):
    from gradio_client import Client
    with gate:  # at most --join-at-once clients fetch the page's config at once (a class joins over seconds)
        job = Client(url, verbose=False).submit(code, api_name="/follow")
        got["job"] = job
        first = True
        client = Client(url, verbose=False)
        for snap in job:  # each the class's snapshot, at each change
            got.setdefault(snap["seq"], time.monotonic())
            if "stream" in snap:  # read: it counts (else its stream ends)
                client.predict(code, snap["stream"], api_name="/class_here")
            if snap["seq"] == 0:
                with lock:
                    ready_n[0] += 1
                joined.set()
            if first:
                break
    for snap in job:
        got.setdefault(snap["seq"], time.monotonic())
        if snap.get("ended"):
            return


async def light_follower(http, api: str, fn_index: int, heartbeat: bool, code: str, got: dict,
                         ready_n: list, gate: asyncio.Semaphore, here_index: int | None = None,
                         student: str | None = None) -> None:
    """One follower as gradio_client's Client(url).submit(code, student, api_name="/follow") speaks to the server:
    its own session; queue/join; the session's stream; each snapshot's arrival time by its seq in `got`. Its first
    snapshot's `stream` is confirmed (/class_here, in the same session), as a reading follower does. `student`: the
    browser's id it follows with (a new student's when None)."""
    import uuid

    from gradio_client.utils import apply_diff
    session = str(uuid.uuid4())
    beat = None
    held, confirmed = True, False
    await gate.acquire()  # at most --join-at-once join at once (a class joins over seconds)
    try:
        if heartbeat:  # gradio_client's Client opens it for the session (config's connect_heartbeat)
            beat = asyncio.create_task(_drain(http, f"{api}/heartbeat/{session}"))
        body = {"data": [code, student], "fn_index": fn_index, "session_hash": session, "event_data": None,
                "trigger_id": None}
        joined = await http.post(f"{api}/queue/join", json=body)
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        out = None
        async with http.stream("GET", f"{api}/queue/data", params={"session_hash": session}) as stream:
            buffer = b""
            async for chunk in stream.aiter_bytes():
                buffer += chunk
                while b"\n\n" in buffer:
                    line, buffer = buffer.split(b"\n\n", 1)
                    line = line.decode().rstrip("\n")
                    if not line.startswith("data:"):
                        continue
                    msg = json.loads(line[5:])
                    if msg.get("event_id") != event_id:
                        continue
                    if msg["msg"] == "process_generating":
                        data = msg["output"]["data"]
                        out = data[0] if out is None else apply_diff(out, data[0])
                        got.setdefault(out["seq"], time.monotonic())
                        got.setdefault("heard", []).append(time.monotonic())
                        if out.get("stream") and here_index is not None and not confirmed:
                            confirmed = True  # this stream's reader has read it: it counts
                            await http.post(f"{api}/queue/join", json={
                                "data": [code, out["stream"]], "fn_index": here_index, "session_hash": session,
                                "event_data": None, "trigger_id": None})
                        if held:
                            held = False
                            ready_n[0] += 1
                            gate.release()
                        if out.get("ended"):
                            return
                    elif msg["msg"] == "process_completed":
                        if not msg.get("success", True):  # refused (a full class): the app's message
                            got["refused"] = str((msg.get("output") or {}).get("error"))
                        return
    finally:
        if held:
            gate.release()
        if beat is not None:
            beat.cancel()


async def returning_follower(http, url: str, api: str, fn_index: int, heartbeat: bool, code: str, got: dict,
                             ready_n: list, gate: asyncio.Semaphore, here_index: int | None = None) -> None:
    """A light follower that reconnects as the page does (assets/live.js watchdog) whenever its stream drops: at
    once, as each page on its own machine would (the first join waits for `gate`, as a class joins over seconds),
    with the same browser's id each time (one student)."""
    import uuid

    import httpx
    student = uuid.uuid4().hex
    while True:
        try:
            await light_follower(http, api, fn_index, heartbeat, code, got, ready_n, gate, here_index, student)
            gate = asyncio.Semaphore(1)  # its own: a page reconnects when it finds the server up
        except (httpx.HTTPError, OSError):
            pass
        if "refused" in got:
            return
        heard = got.get("heard") or [time.monotonic()]
        await asyncio.sleep(max(0.0, heard[-1] + DEAD_S - time.monotonic()))
        wait = 0.5
        while True:
            try:
                if (await http.get(f"{url}robots.txt")).status_code == 200:
                    got.setdefault("found", []).append(time.monotonic())
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(wait * random.uniform(0.75, 1.25))
            wait = min(4.0, 2 * wait)


async def _drain(http, url: str) -> None:
    async with http.stream("GET", url) as stream:
        async for _ in stream.aiter_bytes():
            pass


class LightFollowers:
    """N light followers in one asyncio loop on a thread of this process; got[i]: {seq: when follower i had it}."""

    def __init__(self, url: str, code: str, n: int, at_once: int, returning: bool = False):
        from gradio_client import Client
        self.url, self.returning = url, returning
        cfg = Client(url, verbose=False).config
        self.api = url.rstrip("/") + cfg.get("api_prefix", "/gradio_api")
        self.fn_index = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "follow")
        self.here_index = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "class_here")
        self.heartbeat = bool(cfg.get("connect_heartbeat"))
        self.code, self.n, self.at_once = code, n, at_once
        self.got = [{} for _ in range(n)]
        self.ready_n = [0]
        self.errors: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()
        self.main = asyncio.run_coroutine_threadsafe(self._all(), self.loop)

    async def _all(self) -> None:
        import httpx
        gate = asyncio.Semaphore(self.at_once)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(timeout=httpx.Timeout(None), limits=limits) as http:
            if self.returning:
                self.tasks = [asyncio.create_task(returning_follower(http, self.url, self.api, self.fn_index,
                                                                     self.heartbeat, self.code, g, self.ready_n, gate,
                                                                     self.here_index))
                              for g in self.got]
            else:
                self.tasks = [asyncio.create_task(light_follower(http, self.api, self.fn_index, self.heartbeat,
                                                                 self.code, g, self.ready_n, gate, self.here_index))
                              for g in self.got]
            for r in await asyncio.gather(*self.tasks, return_exceptions=True):
                if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                    self.errors.append(f"{type(r).__name__}: {str(r)[:120]}")

    def stop(self) -> None:
        for t in getattr(self, "tasks", []):
            self.loop.call_soon_threadsafe(t.cancel)
        concurrent.futures.wait([self.main], timeout=10)  # the followers cancelled: their streams closed
        self.loop.call_soon_threadsafe(self.loop.stop)


class GradioFollowers:
    """N gradio_client followers, a thread each (their Client's own threads besides)."""

    def __init__(self, url: str, code: str, n: int, at_once: int):
        self.got = [{} for _ in range(n)]
        self.ready_n, self.errors = [0], []
        lock, joined, gate = threading.Lock(), threading.Event(), threading.Semaphore(at_once)
        self.threads = [threading.Thread(target=follower, args=(url, code, g, joined, self.ready_n, lock, gate),
                                         daemon=True) for g in self.got]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        for g in self.got:
            job = g.get("job")
            if job is not None:
                job.cancel()


def refused(got: list[dict]) -> list[str]:
    """The app's messages to the followers it refused (a full class)."""
    return [g["refused"] for g in got if "refused" in g]


def said(what: list[str], name: str) -> str:
    return f"; {name}: {len(what)} ({what[0]})" if what else ""


def rounds(url: str, pid: int, code: str, n: int, times: int, at_once: int) -> list[float]:
    """n light followers join the class and leave (their streams cancelled, their heartbeats closed), `times`
    times: the server's RSS (MB) after each round, once the leavers' sessions are unloaded."""
    out = []
    for _ in range(times):
        followers = LightFollowers(url, code, n, at_once)
        followers.start()
        t0 = time.monotonic()
        while followers.ready_n[0] + len(refused(followers.got)) < n and time.monotonic() - t0 < 300:
            time.sleep(0.1)
        followers.stop()
        time.sleep(3)
        out.append(rss_mb(pid))
    return out


def translate_ms(c, n=3) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.predict("Ich liebe dich.", api_name="/translate")
        out.append(1000 * (time.perf_counter() - t0))
    return statistics.median(out)


def up(url: str, proc: subprocess.Popen, timeout: float = 600) -> float:
    """When (time.monotonic()) the app first answers, as the pages ask it (assets/live.js PROBE)."""
    import httpx
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(f"{url}robots.txt", timeout=2).status_code == 200:
                return time.monotonic()
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the app did not start")


def restart(a, port: int, url: str, data: str, proc: subprocess.Popen) -> subprocess.Popen:
    """The --restart measurement; returns the app's process now running."""
    teacher = ready(url, proc)
    code, token = teacher.predict(api_name="/class_open")
    view = VIEW.format(step=3)
    seq = teacher.predict(code, token, view, 3, api_name="/class_change")
    followers = LightFollowers(url, code, a.students, a.join_at_once, returning=True)
    followers.start()
    t0 = time.monotonic()
    while followers.ready_n[0] < a.students and time.monotonic() - t0 < 300:
        time.sleep(0.1)
    joined = followers.ready_n[0]
    time.sleep(2)
    killed = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc = launch(port, data)
    t_up = up(url, proc)
    while time.monotonic() - t_up < 120:
        back = [min((t for t in g.get("heard", []) if t > killed), default=None) for g in followers.got]
        if all(b is not None for b in back):
            break
        time.sleep(0.2)
    after = [b - t_up for b in back if b is not None]
    found = [min((t for t in g.get("found", []) if t > killed), default=None) for g in followers.got]
    found = [f - t_up for f in found if f is not None]
    again = ready(url, proc)
    snap = again.submit(code, api_name="/follow")
    first = next(iter(snap))
    snap.cancel()
    print(f"benchmarks.live_class --restart: {a.students} followers ({joined} joined) of one class; the app killed"
          f" with SIGKILL and started again; {platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
          f" the followers' clients on the same machine")
    print(f"  the app was up again {t_up - killed:.1f} s after the kill (its start: Python, torch, Gradio, the"
          f" models)")
    if after:
        print(f"  server up -> a follower back in the class: p50 {pct(after, 50):.1f} s, p95 {pct(after, 95):.1f} s,"
              f" max {max(after):.1f} s ({len(after)} of {a.students} back" + said(followers.errors, "errors") + ")")
    if found:
        print(f"  of which finding the server up (its robots.txt, with backoff): p50 {pct(found, 50):.1f} s, p95"
              f" {pct(found, 95):.1f} s; the rest is joining its stream again")
    print(f"  the class after the restart: view {'the same' if first['view'] == view else 'CHANGED'}, step"
          f" {first['step']}, change count {first['seq']} (before: {seq}), {first['students']} following")
    followers.stop()
    return proc


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=60)
    p.add_argument("--changes", type=int, default=20)
    p.add_argument("--gap", type=float, default=0.5, help="seconds between the teacher's changes")
    p.add_argument("--idle", type=float, default=60.0, help="seconds of idle following measured")
    p.add_argument("--join-at-once", type=int, default=8, help="followers connecting at the same time")
    p.add_argument("--rounds", type=int, default=0,
                   help="then the students join and leave this many times: the server's RSS after each round")
    p.add_argument("--client", choices=("light", "gradio"), default="light",
                   help="the followers' clients: one asyncio loop speaking Gradio's protocol, or gradio_client's")
    p.add_argument("--restart", action="store_true", help="measure the followers' return after a SIGKILL and start")
    return p.parse_args(argv)


def main(argv=None) -> None:
    from tests.serving import free_port
    a = parse(argv)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    data = tempfile.mkdtemp(prefix="live-class-data-")
    proc = launch(port, data)
    try:
        if a.restart:
            proc = restart(a, port, url, data, proc)
        else:
            measure(a, url, proc)
    finally:
        stop(proc)
        shutil.rmtree(data, ignore_errors=True)


def measure(a, url: str, proc: subprocess.Popen) -> None:
    """The class's changes, idle cost, memory and /translate beside the followers (and --rounds)."""
    import psutil
    teacher = ready(url, proc)
    pid = proc.pid
    server = psutil.Process(pid)
    alone_ms = translate_ms(teacher)
    cpu0 = server_cpu(pid)
    time.sleep(a.idle)
    idle_ref = server_cpu(pid) - cpu0
    rss0 = rss_mb(pid)
    note = lambda what: print(f"  ... {what}", file=sys.stderr, flush=True)  # where a run is (stderr)
    code, token = teacher.predict(api_name="/class_open")  # once the idle reference is measured
    me, rss_c0 = psutil.Process(), rss_mb()
    followers = (LightFollowers if a.client == "light" else GradioFollowers)(url, code, a.students,
                                                                               a.join_at_once)
    got, ready_n = followers.got, followers.ready_n
    t_join = time.monotonic()
    followers.start()
    while ready_n[0] + len(refused(got)) < a.students and time.monotonic() - t_join < 300:
        time.sleep(0.1)
    join_s = time.monotonic() - t_join
    note(f"{ready_n[0]} of {a.students} joined in {join_s:.1f} s")
    time.sleep(2)
    rss1, rss_c1 = rss_mb(pid), rss_mb()
    sent = {}
    for i in range(a.changes):
        t0 = time.monotonic()
        seq = teacher.predict(code, token, VIEW.format(step=i % 8), i % 8, api_name="/class_change")
        sent[seq] = t0
        time.sleep(a.gap)
    time.sleep(3)
    delays, missed = [], 0
    for g in got:
        for seq, t0 in sent.items():
            if seq in g:
                delays.append(g[seq] - t0)
            else:
                missed += 1
    note("changes sent")
    following_ms = translate_ms(teacher)
    cpu1, cpu_c1 = server_cpu(pid), sum(me.cpu_times()[:2])
    time.sleep(a.idle)
    idle_n, idle_c = server_cpu(pid) - cpu1, sum(me.cpu_times()[:2]) - cpu_c1
    rss2 = server.memory_info().rss / 2**20
    n = a.students
    print(f"benchmarks.live_class: {n} followers, {a.changes} changes {a.gap} s apart, idle {a.idle:.0f} s;"
          f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores, followers' clients ({a.client})"
          f" on the same machine")
    print(f"  followers joined (each its first snapshot) in {join_s:.1f} s; {ready_n[0]} of {n}"
          + said(refused(got), "refused") + said(followers.errors, "errors"))
    if delays:
        print(f"  delay teacher's change -> follower has it: p50 {1000 * pct(delays, 50):.0f} ms,"
              f" p95 {1000 * pct(delays, 95):.0f} ms, max {1000 * max(delays):.0f} ms"
              f" ({len(delays)} receipts, {missed} missed)")
    print(f"  server CPU idle {a.idle:.0f} s: no follower {idle_ref:.2f} s ({100 * idle_ref / a.idle:.2f} % of"
          f" a core); {n} followers {idle_n:.2f} s ({100 * idle_n / a.idle:.2f} % of a core);"
          f" ratio {idle_n / max(idle_ref, 1e-9):.2f}; the followers' clients {idle_c:.2f} s")
    print(f"  server RSS: {rss0:.0f} MB before, {rss1:.0f} MB with {n} followers (+{rss1 - rss0:.1f} MB,"
          f" {1024 * (rss1 - rss0) / n:.0f} kB per follower); {rss2:.0f} MB after the idle {a.idle:.0f} s;"
          f" the followers' clients +{rss_c1 - rss_c0:.1f} MB")
    print(f"  /translate median of 3: {alone_ms:.0f} ms with no follower, {following_ms:.0f} ms with {n}"
          f" following (ratio {following_ms / alone_ms:.2f})")
    followers.stop()
    if a.rounds:
        after = rounds(url, pid, code, n, a.rounds, a.join_at_once)
        print(f"  {n} followers joining and leaving {a.rounds} times: server RSS after the first round"
              f" {after[0]:.1f} MB, after the last {after[-1]:.1f} MB ({after[-1] - after[0]:+.1f} MB);"
              f" each round: {', '.join(f'{x:.0f}' for x in after)} MB")


if __name__ == "__main__":
    main()
