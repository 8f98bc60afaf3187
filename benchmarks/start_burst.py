"""A class pressing Start at the same moment, and nothing else: where the seconds of that burst go.

    python -m benchmarks.start_burst [--students 30] [--rounds 3] [--mode batched|alone]

The app runs as a subprocess (`app.py`, both shipped models, as benchmarks.classroom launches it). Each round, N new
gradio_client students (each its own session; half German -> English, half English -> German, benchmarks.classroom's
sentences) connect, then press /start together. Prints per round: wall, /start p50/p95/max, the CPU seconds the
server and the clients (this process) spent in the burst, the server's by thread, read from /proc/<pid>/task and
named by `py-spy dump` when py-spy is installed (not a project dependency; without it the threads are "unnamed").
Prints, never asserts.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from .classroom import client, launch, machine, ready, sentences, stop
from .common import pct


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of process `pid` (Linux /proc), by thread id."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Python's name of each thread of `pid` ("attention-lens-batcher", "AnyIO worker thread", ...), from `py-spy
    dump`; empty without py-spy."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not os.path.exists(spy):
        return {}
    dump = subprocess.run([spy, "dump", "--nonblocking", "--pid", str(pid)], capture_output=True, text=True,
                          check=False).stdout
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"Thread (\d+) \(\w+\): \"(.*?)\"", dump)}


def burst(url: str, pid: int, work) -> dict:
    """N students connect, then press /start together; -> latencies, wall, CPU of server and clients, by thread."""
    clients = [client(url) for _ in work]
    lat, errors, barrier = [None] * len(work), [], threading.Barrier(len(work) + 1)

    def go(i):
        barrier.wait()
        t0 = time.perf_counter()
        try:
            clients[i].predict(work[i][1], 8, False, work[i][0], api_name="/start")
            lat[i] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - counted and reported
            errors.append(f"{type(e).__name__}: {str(e)[:120]}")
    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(work))]
    for t in threads:
        t.start()
    time.sleep(0.5)  # every thread at the barrier
    before, mine = thread_cpu(pid), resource.getrusage(resource.RUSAGE_SELF)
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    after, me = thread_cpu(pid), resource.getrusage(resource.RUSAGE_SELF)
    for c in clients:
        c.close()
    names, by_thread = thread_names(pid), Counter()
    for tid, cpu in after.items():
        if cpu > before.get(tid, 0):
            by_thread[re.sub(r"[_\d]+$", "", names.get(tid, "unnamed"))] += cpu - before.get(tid, 0)
    return {"lat": [x for x in lat if x is not None], "errors": errors, "wall": wall, "by_thread": by_thread,
            "server": sum(by_thread.values()), "clients": me.ru_utime + me.ru_stime - mine.ru_utime - mine.ru_stime}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.start_burst", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mode", choices=("alone", "batched"), default="batched")
    a = p.parse_args(argv)
    if a.students < 1 or a.rounds < 1:
        p.error("--students and --rounds must be at least 1")
    from tests.serving import free_port
    work, port = sentences(a.students), free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = launch(a.mode, port)
    try:
        warm = ready(url, proc)
        for key, text in work[:2]:  # each model once: nothing first-time in the measure
            warm.predict(text, 8, False, key, api_name="/start")
        warm.close()
        print(f"{a.students} students press Start at once ({a.mode}); {machine()}", flush=True)
        for r in range(a.rounds):
            time.sleep(2)
            b = burst(url, proc.pid, work)
            split = ", ".join(f"{k} {v:.2f}" for k, v in b["by_thread"].most_common())
            print(f"round {r + 1}: wall {b['wall']:.2f} s, /start p50 {pct(b['lat'], 50):.2f} p95 "
                  f"{pct(b['lat'], 95):.2f} max {max(b['lat'], default=float('nan')):.2f} s, errors "
                  f"{len(b['errors'])}; CPU s: server {b['server']:.2f} ({split}), clients {b['clients']:.2f}",
                  flush=True)
    finally:
        stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
