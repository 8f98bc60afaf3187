"""A term compressed: N minutes of 30 clients using a served app at once, as a class and the programs beside it do.

    python -m benchmarks.soak --minutes 10 [--clients 30] [--checkout DIR] [--session-memory MB]

The app runs in a process of its own (`python app.py` in --checkout, default this one: give another checkout, e.g.
main's, for a figure before a change), so its resident memory is the server's alone. Each client, in a loop, does
one of: a Start (a tenth of them 2,000-character inputs), a step, run, back, a step chosen, a forced piece, the
export, head ablation, beam search, the layers' view, ALTI+ (/attribution), /translate, /attention_compact, a
reference, a page load with a link's query (a lesson's view=), a live class (a teacher opens one and changes it,
followers join, read its first snapshot, and leave), or a hostile request (a lone surrogate, a position of 10,000
brackets, a beam size of "8", None, [1] or {}, a top-k of "3", 100,000 characters). Every request goes the page's
way (Gradio's queue, tests/serving.py raw_call).

Prints the server's RSS every minute, then per endpoint the requests, p50 and p95, and the errors by kind:
- wrong: an answer that differs from the same request made alone before the load (translations, beam's best,
  a Start then run to its end);
- generic: Gradio's "The upstream Gradio app has raised an exception" (or an error with no message);
- cut: a stream that ended without an answer;
- clear: a gr.Error with a message (expected for the hostile requests; counted, not a failure);
- other: a client exception (a timeout, a refused connection).
Measures, never asserts.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import httpx

from benchmarks.common import pct, rss_mb
from tests.serving import GENERIC, fn_indices, free_port, raw_call

ROOT = Path(__file__).resolve().parent.parent
SHORT = ["Ein Hund rennt.", "Eine Katze schläft.", "Der Mann liest ein Buch.", "Die Kinder spielen im Park.",
         "Ich trinke gern Kaffee.", "Wir fahren morgen nach Berlin.", "Das Wetter ist heute schön.",
         "Sie hat einen roten Hut.", "Der Zug kommt um acht Uhr.", "Mein Bruder wohnt in Hamburg."]
LONG = " ".join(SHORT * 30)[:2000]
HOSTILE = [("start", ["\ud800 Hund", 8, False, None]), ("export", ["[" * 10000]),
           ("layers", ["all layers", 0.15, "[" * 10000]), ("ablate", [[], [], ["L1 H1"], 8, "[" * 10000]),
           ("beam", ["Ein Hund.", "8", None]), ("beam", ["Ein Hund.", None, None]), ("beam", ["Ein Hund.", [1], None]),
           ("beam", ["Ein Hund.", {}, None]), ("step", ["3", False]), ("translate", ["x" * 100_000, ""]),
           ("goto", [[1], 8, False])]
LINKS = ["?tab=translate&s=Ein%20Hund%20rennt.&step=2", "?lesson=1&view=-3", "?lesson=1&view=99999999999999999999",
         "?tab=compare", "?tab=beam&s=Eine%20Katze%20schl%C3%A4ft."]


class Soak:
    def __init__(self, url: str, fns: dict, expected: dict, beams: dict):
        self.url, self.fns, self.expected, self.beams = url, fns, expected, beams
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, Counter] = defaultdict(Counter)
        self.notes: list[str] = []
        self.lock = threading.Lock()

    def call(self, name: str, data: list, session: str | None = None, hostile: bool = False):
        t0 = time.perf_counter()
        try:
            kind, out = raw_call(self.url, name, data, session=session, fns=self.fns, timeout=300)
        except Exception as e:  # noqa: BLE001  (counted by kind, the soak goes on)
            kind, out = "other", f"{type(e).__name__}: {e}"
        dt = time.perf_counter() - t0
        key = f"{name} (hostile)" if hostile else name
        with self.lock:
            self.times[key].append(dt)
            if kind == "error":
                generic = not isinstance(out, str) or not out.strip() or GENERIC in out
                self.errors[key]["generic" if generic else "clear"] += 1
            elif kind != "complete":
                self.errors[key][kind] += 1
                if len(self.notes) < 20:
                    self.notes.append(f"{key}: {kind}: {str(out)[:200]}")
        return kind, out

    def wrong(self, name: str, what: str):
        with self.lock:
            self.errors[name]["wrong"] += 1
            if len(self.notes) < 20:
                self.notes.append(f"{name}: wrong: {what[:200]}")

    def client(self, stop: float, seed: int):
        rnd = random.Random(seed)
        session, text, forced = uuid.uuid4().hex, None, False
        while time.monotonic() < stop:
            r = rnd.random()
            if text is None or r < 0.12:
                text = LONG if rnd.random() < 0.1 else rnd.choice(SHORT)
                forced = False
                self.call("start", [text, 8, False, None], session)
            elif r < 0.30:
                name = rnd.choice(["step", "back", "run"])
                kind, out = self.call(name, [8, False], session)
                # the page's outputs: (its state, the translation, the view's payload, the top-k)
                if name == "run" and kind == "complete" and not forced and out[1] != self.expected[text]:
                    self.wrong("run", f"{text[:40]!r}: {out[1]!r} != {self.expected[text]!r}")
            elif r < 0.35:
                self.call("goto", [rnd.randint(0, 3), 8, False], session)
            elif r < 0.40:
                if self.call("force", ["▁The", 8, False], session)[0] == "complete":
                    forced = True
            elif r < 0.44:
                self.call("export", [""], session)
            elif r < 0.48:
                self.call("ablate", [[], [], ["L1 H1"], 8, ""], session)
            elif r < 0.52:
                t = rnd.choice(SHORT)
                kind, out = self.call("beam", [t, 3, None])
                best = (out[2] or {}).get("value") if kind == "complete" and isinstance(out[2], dict) else None
                if best is not None and best.split("(")[0] != self.beams[t].split("(")[0]:
                    self.wrong("beam", f"{best!r} != {self.beams[t]!r}")
            elif r < 0.55:
                self.call("layers", ["all layers", 0.15, ""], session)
            elif r < 0.58:
                self.call("attribution", [rnd.choice(SHORT), "alti", ""])
            elif r < 0.66:
                t = rnd.choice(SHORT)
                kind, out = self.call("translate", [t, ""])
                if kind == "complete" and out[0] != self.expected[t]:
                    self.wrong("translate", f"{t!r}: {out[0]!r} != {self.expected[t]!r}")
            elif r < 0.69:
                self.call("attention_compact", [rnd.choice(SHORT), ""])
            elif r < 0.72:
                self.call("reference", [rnd.choice(SHORT), "A dog runs.", None])
            elif r < 0.78:
                self.page(rnd.choice(LINKS))
            elif r < 0.84:
                self.live(rnd)
            else:
                name, data = rnd.choice(HOSTILE)
                self.call(name, data, session, hostile=True)

    def page(self, query: str):
        t0 = time.perf_counter()
        try:
            ok = httpx.get(self.url + query, timeout=120).status_code == 200
        except httpx.HTTPError:
            ok = False
        with self.lock:
            self.times["page load"].append(time.perf_counter() - t0)
            if not ok:
                self.errors["page load"]["other"] += 1

    def live(self, rnd: random.Random):
        """A teacher opens a class and changes its view; 1-3 followers join, read a snapshot and leave."""
        kind, out = self.call("class_open", [])
        if kind != "complete":
            return
        code, token = out[0]
        self.call("class_change", [code, token, "tab=translate&s=Ein%20Hund%20rennt.&step=1", 1])
        for _ in range(rnd.randint(1, 3)):
            self.follow_once(code)

    def follow_once(self, code: str):
        import json
        t0 = time.perf_counter()
        session = uuid.uuid4().hex
        ok = False
        try:
            with httpx.Client(timeout=60) as h:
                fn, _ = self.fns["follow"]
                h.post(f"{self.url}gradio_api/queue/join", json={"data": [code], "fn_index": fn,
                                                                  "session_hash": session})
                with h.stream("GET", f"{self.url}gradio_api/queue/data", params={"session_hash": session}) as s:
                    for line in s.iter_lines():
                        if line.startswith("data:") and json.loads(line[5:]).get("msg") in (
                                "process_generating", "process_completed"):
                            ok = True
                            break  # leaves: the stream closes
        except httpx.HTTPError:
            pass
        with self.lock:
            self.times["follow"].append(time.perf_counter() - t0)
            if not ok:
                self.errors["follow"]["cut"] += 1


def start_server(checkout: Path, port: int, memory: float | None) -> subprocess.Popen:
    cmd = [sys.executable, "app.py", "--port", str(port)]
    if memory is not None:
        cmd += ["--session-memory", str(memory)]
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False")
    p = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(600):
        try:
            if httpx.get(url + "config", timeout=5).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.5)
    p.kill()
    raise SystemExit("the server did not start")


def slope(points: list[tuple[float, float]]) -> float:
    """MB a minute, least squares over (minute, MB)."""
    if len(points) < 2:
        return float("nan")
    mx, my = statistics.fmean(p[0] for p in points), statistics.fmean(p[1] for p in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose app.py is served")
    ap.add_argument("--session-memory", type=float, default=None, help="passed to the app (MB)")
    a = ap.parse_args(argv)
    port = free_port()
    server = start_server(a.checkout, port, a.session_memory)
    url = f"http://127.0.0.1:{port}/"
    try:
        fns = fn_indices(url)
        expected = {t: raw_call(url, "translate", [t, ""], fns=fns)[1][0] for t in SHORT + [LONG]}
        beams = {}
        for t in SHORT:
            out = raw_call(url, "beam", [t, 3, None], fns=fns)[1]
            beams[t] = out[2]["value"]
        soak = Soak(url, fns, expected, beams)
        rss = [(0.0, rss_mb(server.pid))]
        print(f"{a.checkout}: server pid {server.pid}, RSS at start {rss[0][1]:.1f} MB; {a.clients} clients for "
              f"{a.minutes:g} min", flush=True)
        t0 = time.monotonic()
        stop = t0 + a.minutes * 60
        threads = [threading.Thread(target=soak.client, args=(stop, i), daemon=True) for i in range(a.clients)]
        for t in threads:
            t.start()
        minute = 1
        while any(t.is_alive() for t in threads):
            time.sleep(1)
            if time.monotonic() - t0 >= minute * 60:
                rss.append((minute, rss_mb(server.pid)))
                print(f"minute {minute}: RSS {rss[-1][1]:.1f} MB, {sum(map(len, soak.times.values()))} requests",
                      flush=True)
                minute += 1
        rss.append(((time.monotonic() - t0) / 60, rss_mb(server.pid)))
        tail = [p for p in rss if p[0] >= a.minutes - 5]
        print(f"\nRSS: start {rss[0][1]:.1f} MB, peak {max(p[1] for p in rss):.1f} MB, end {rss[-1][1]:.1f} MB; "
              f"slope over the last 5 minutes {slope(tail):+.1f} MB a minute")
        print(f"\n{'endpoint':<24} {'requests':>8} {'p50 s':>7} {'p95 s':>7}  errors by kind")
        for name in sorted(soak.times):
            xs = soak.times[name]
            errs = ", ".join(f"{k} {v}" for k, v in sorted(soak.errors[name].items())) or "-"
            print(f"{name:<24} {len(xs):>8} {pct(xs, 50):>7.2f} {pct(xs, 95):>7.2f}  {errs}")
        total = Counter()
        for c in soak.errors.values():
            total.update(c)
        print(f"\ntotal: {sum(map(len, soak.times.values()))} requests; wrong {total['wrong']}, generic "
              f"{total['generic']}, cut {total['cut']}, other {total['other']}, clear {total['clear']}")
        for n in soak.notes:
            print("  " + n)
    finally:
        server.terminate()  # SIGTERM: the app closes as on Ctrl-C (attention_lens/launch.py)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # requests still queued: ended at once
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
