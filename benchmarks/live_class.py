"""A live class (issue 59): N followers (gradio_client, each its own session and stream: /follow) on one class; a
teacher (the API's /class_open and /class_change, as the page's Teach live sends its view) makes 20 changes.

    python -m benchmarks.live_class [--students 60] [--changes 20] [--gap 0.5] [--idle 60]

The app runs as a subprocess (app.py, as served). Prints, per change, when each follower had it after the teacher
sent it (p50, p95, max over every follower and change); the server's CPU seconds over `--idle` s with no follower
(the reference, measured first) and with the N followers holding their streams; its RSS before they joined and with
them (per follower); and /translate's time alone and while the N follow (the model's events are not queued behind
the followers: their own concurrency group). Followers' clients run in this process, on the same machine (the
issue's targets count them). Prints, never asserts.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

from .classroom import ROOT, ready, server_cpu, stop
from .common import pct, rss_mb

VIEW = "model=de-en&text=Ich+liebe+dich.&step={step}&kind=cross&layer=2&head=3"


def launch(port: int) -> subprocess.Popen:
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False")
    return subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def follower(url: str, code: str, got: dict, joined: threading.Event, ready_n: list, lock: threading.Lock,
             gate: threading.Semaphore):
    from gradio_client import Client
    with gate:  # at most --join-at-once clients fetch the page's config at once (a class joins over seconds)
        job = Client(url, verbose=False).submit(code, api_name="/follow")
        got["job"] = job
        first = True
        for snap in job:  # each the class's snapshot, at each change
            got.setdefault(snap["seq"], time.monotonic())
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


def translate_ms(c, n=3) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.predict("Ich liebe dich.", api_name="/translate")
        out.append(1000 * (time.perf_counter() - t0))
    return statistics.median(out)


def main(argv=None) -> None:
    import psutil

    from tests.serving import free_port
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=60)
    p.add_argument("--changes", type=int, default=20)
    p.add_argument("--gap", type=float, default=0.5, help="seconds between the teacher's changes")
    p.add_argument("--idle", type=float, default=60.0, help="seconds of idle following measured")
    p.add_argument("--join-at-once", type=int, default=8, help="followers connecting at the same time")
    a = p.parse_args(argv)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = launch(port)
    try:
        teacher = ready(url, proc)
        pid = proc.pid
        server = psutil.Process(pid)
        alone_ms = translate_ms(teacher)
        cpu0 = server_cpu(pid)
        time.sleep(a.idle)
        idle_ref = server_cpu(pid) - cpu0
        rss0 = rss_mb(pid)
        code, token = teacher.predict(api_name="/class_open")
        got = [{} for _ in range(a.students)]
        lock, joined, ready_n, gate = threading.Lock(), threading.Event(), [0], threading.Semaphore(a.join_at_once)
        threads = [threading.Thread(target=follower, args=(url, code, g, joined, ready_n, lock, gate), daemon=True)
                   for g in got]
        t_join = time.monotonic()
        for t in threads:
            t.start()
        while ready_n[0] < a.students and time.monotonic() - t_join < 300:
            time.sleep(0.1)
        join_s = time.monotonic() - t_join
        time.sleep(2)
        rss1 = rss_mb(pid)
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
        following_ms = translate_ms(teacher)
        cpu1 = server_cpu(pid)
        time.sleep(a.idle)
        idle_n = server_cpu(pid) - cpu1
        rss2 = server.memory_info().rss / 2**20
        n = a.students
        print(f"benchmarks.live_class: {n} followers, {a.changes} changes {a.gap} s apart, idle {a.idle:.0f} s;"
              f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores, followers' clients on the"
              f" same machine")
        print(f"  followers joined (each its first snapshot) in {join_s:.1f} s; {ready_n[0]} of {n}")
        if delays:
            print(f"  delay teacher's change -> follower has it: p50 {1000 * pct(delays, 50):.0f} ms,"
                  f" p95 {1000 * pct(delays, 95):.0f} ms, max {1000 * max(delays):.0f} ms"
                  f" ({len(delays)} receipts, {missed} missed)")
        print(f"  server CPU idle {a.idle:.0f} s: no follower {idle_ref:.2f} s ({100 * idle_ref / a.idle:.2f} % of"
              f" a core); {n} followers {idle_n:.2f} s ({100 * idle_n / a.idle:.2f} % of a core);"
              f" ratio {idle_n / max(idle_ref, 1e-9):.2f}")
        print(f"  server RSS: {rss0:.0f} MB before, {rss1:.0f} MB with {n} followers (+{rss1 - rss0:.1f} MB,"
              f" {1024 * (rss1 - rss0) / n:.0f} kB per follower); {rss2:.0f} MB after the idle {a.idle:.0f} s")
        print(f"  /translate median of 3: {alone_ms:.0f} ms with no follower, {following_ms:.0f} ms with {n}"
              f" following (ratio {following_ms / alone_ms:.2f})")
        for g in got:
            job = g.get("job")
            if job is not None:
                job.cancel()
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
