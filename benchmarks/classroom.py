"""A class pressing Start at once: N gradio_client users (each its own session) against the app on the shipped
checkpoints, half German -> English and half English -> German, each with its own 10-12-word sentence.

    python -m benchmarks.classroom [--students 30] [--think 1.0] [--mode alone|batched|both] [--seed 0]
                                   [--flow page|api] [--asks start,alti,ablate,beam]
    python -m benchmarks.classroom --students 30 --limits 4,8,16,32
    python -m benchmarks.classroom --lone 8

Each student, after all have connected: /start, ALTI+ as the page asks it (the Translate view's own request on the
started sentence: page_alti), a think time, /ablate (one head off), a think time, /beam (size 3); `--asks` some of
them (issue 42 measured start,alti). `--flow api` asks ALTI+ through /attribution instead, as a program would (it
decodes again; the flow of docs/benchmarks.md's figures before 2026-12-03's fourth session). The app runs as a
subprocess (`app.py`, its own GIL and allocator, as served), once per mode: "alone" serves every request by
itself (ATTENTION_LENS_BATCH=0: today's serving, its queue settings), "batched" with cross-user batching
(transformer/decode/batching.py, settings in attention_lens/shell/components.py). Prints per endpoint p50/p95/max,
throughput, errors,
answers that differ from the same request made alone (translation, the maps and top-k of /start, ALTI+; beyond the
batching tolerance: benchmarks.common.alike), the server's RSS (psutil) idle, at its peak while the students were
connected (sampled every 0.25 s) and after, the CPU seconds it spent over the run, and the batched/alone ratio; with
the machine and what else ran on it. The server's environment passes through (e.g. ATTENTION_LENS_QUEUE_STATUS_S).
--limits: in this process, without HTTP, /start then /attribution through the handlers under each concurrency
limit, batched, beside today's 4 unbatched. Prints, never asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

from .common import alike, batch_tolerance, pct, rss_mb

ROOT = Path(__file__).resolve().parent.parent
ENDPOINTS = ("/start", "ALTI+ (page)", "/attribution", "/ablate", "/beam")  # a flow asks one of the two ALTI+
ASKED = ("start", "alti", "ablate", "beam")  # what each student asks, in this order (--asks)
PAGE_ALTI = "ALTI+ (page)"  # the Translate view's own ALTI+ request on the started sentence (page_alti)
FALLBACK = {"de-en": ["Ein Mann mit einem roten Hut sitzt auf einer Bank vor dem alten Haus.",
                      "Zwei kleine Kinder spielen am Strand mit einem großen bunten Ball."],
            "en-de": ["A man in a red hat is sitting on a bench in front of the house.",
                      "Two little children are playing on the beach with a big ball."]}


def sentences(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n (model, sentence) pairs, alternating de-en and en-de, each a different 10-12-word sentence (Multi30k's
    test set when it is there, else a few fixed ones with a number)."""
    from transformer.train import data as D
    try:
        pairs = D.load_pairs(D.DEFAULT_DATA_DIR, "test_2016_flickr")
    except (D.DataError, OSError):
        pairs = []
    rng = random.Random(seed)
    pools = {"de-en": [de for de, _ in pairs if 10 <= len(de.split()) <= 12],
             "en-de": [en for _, en in pairs if 10 <= len(en.split()) <= 12]}
    for key, pool in pools.items():
        rng.shuffle(pool)
        while len(pool) < (n + 1) // 2:
            pool.append(f"{FALLBACK[key][len(pool) % 2][:-1]} {len(pool)}.")
    return [("de-en" if i % 2 == 0 else "en-de", pools["de-en" if i % 2 == 0 else "en-de"][i // 2]) for i in range(n)]


def answers(start_out, alti: dict) -> dict:
    """What a student's answers are compared on: translation, /start's maps and top-k, ALTI+'s rows (the page's
    payload without its timing, or /attribution's rows)."""
    _, payload, topk = start_out
    rows = [alti["source"], alti["target"]] if "source_rows" not in alti else \
        {k: v for k, v in alti.items() if k != "ms"}
    return {"translation": start_out[0], "maps": payload.get("maps"), "topk": payload.get("topk"),
            "items": topk.get("items"), "alti": rows}


def expected(work: list[tuple[str, str]], flow: str = "page") -> list[dict]:
    """Each student's answers computed alone in this process, one request at a time, by the same handlers."""
    import torch

    from attention_lens.shell import api
    from attention_lens.translate import handlers as decoding_views
    from attention_lens.translate.attribution import attribution_at
    from transformer.decode.decoding import Translator
    torch.set_num_threads(1)
    trs = {key: Translator.load(ROOT / "checkpoints" / key) for key in {k for k, _ in work}}
    out = []
    for key, text in work:
        session, translation, payload, topk = decoding_views.start(trs[key], text, 8)
        alti = attribution_at(trs[key], session, "", "alti", "k") if flow == "page" else \
            api.api_attribution(trs[key], text, "alti")
        got = answers((translation, payload, topk), alti)
        out.append(json.loads(json.dumps(got)))  # as it reaches a client: tuples are lists
    return out


CONNECTING = threading.Lock()  # students open the page one after another, before the class presses Start
TIMEOUT_S = 600  # gradio_client's own is 20 s: a loaded machine's answers would count as errors of the client
_TLS = []  # one TLS context for every client of this process (made at the first)


def client(url: str):
    """A student's gradio_client. Its requests go through httpx.post/stream, which make a new TLS context, loading
    the CA bundle, for each one unless given one: 47 % of the clients' CPU in a py-spy profile of 40 Starts
    (2026-12-03), CPU that the students' own devices would spend and that this run takes from the server's two
    cores. The context is never used (the app is plain HTTP on 127.0.0.1); sharing one removes that cost."""
    import ssl

    from gradio_client import Client
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    return Client(url, verbose=False, ssl_verify=_TLS[0], httpx_kwargs={"timeout": TIMEOUT_S})


def page_event(me, elem_id: str) -> tuple[int, int]:
    """(fn_index, trigger id) of the click event of the page's component `elem_id`, from the app's config."""
    comp = next(c["id"] for c in me.config["components"] if c.get("props", {}).get("elem_id") == elem_id)
    return next((d["id"], comp) for d in me.config["dependencies"] if [comp, "click"] in d["targets"])


def page_alti(me, event: tuple[int, int]) -> dict:
    """What a student's browser asks once Start has answered and ALTI+ is chosen (assets/attribution.js): the hidden
    #attribution view's click, with {method, position, key}, on the student's own session, through Gradio's queue
    as the page sends it (POST queue/join, then the session's event stream); it reads the started sentence and
    decodes nothing. gradio_client cannot send an event's data, so this speaks the protocol itself. -> the payload."""
    import httpx
    fn_index, trigger = event
    kw = {"verify": _TLS[0], "timeout": TIMEOUT_S}
    body = {"data": [None], "event_data": {"method": "alti", "position": "", "key": "k"}, "fn_index": fn_index,
            "trigger_id": trigger, "session_hash": me.session_hash}
    joined = httpx.post(me.sse_data_url, json=body, **kw)  # queue/join
    joined.raise_for_status()
    event_id = joined.json()["event_id"]
    with httpx.stream("GET", me.sse_url, params={"session_hash": me.session_hash}, **kw) as stream:
        for line in stream.iter_lines():
            msg = json.loads(line[5:]) if line.startswith("data:") else {}
            if msg.get("event_id") == event_id and msg.get("msg") == "process_completed":
                if not msg.get("success"):
                    raise RuntimeError(str(msg.get("output"))[:200])
                return msg["output"]["data"][0]
    raise RuntimeError("the event stream ended without an answer")


def student(url, key, text, think, barrier, rng, out, flow="page", asked=ASKED):
    out.update(latency={e: None for e in ENDPOINTS}, errors=[], got=None)
    try:
        with CONNECTING:
            me = client(url)
    except Exception as e:  # noqa: BLE001 - counted and reported
        out["errors"].append(f"connect: {type(e).__name__}: {e}")
        me = None
    try:
        barrier.wait(timeout=1800)
    except threading.BrokenBarrierError:
        pass
    if me is None:
        return
    asks = (PAGE_ALTI, None) if flow == "page" else ("/attribution", (text, "alti", key))
    calls = [c for c, name in zip([("/start", (text, 8, False, key)), asks, ("/ablate", (["L1 H1"], [], [], 8, None)),
                                   ("/beam", (text, 3, key))], ASKED) if name in asked]
    results, alti = {}, page_event(me, "attribution") if flow == "page" else None
    for name, args in calls:
        if name in ("/ablate", "/beam"):
            time.sleep(think * rng.uniform(0.5, 1.5))
        t0 = time.perf_counter()
        try:
            results[name] = page_alti(me, alti) if name == PAGE_ALTI else me.predict(*args, api_name=name)
            if name == PAGE_ALTI and "error" in results[name]:
                raise RuntimeError(results[name]["error"])
            out["latency"][name] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - counted and reported
            out["errors"].append(f"{name}: {type(e).__name__}: {str(e)[:120]}")
            if name == "/start":
                break
    if "/start" in results and asks[0] in results:
        out["got"] = answers(results["/start"], results[asks[0]])
    me.close()


def launch(mode: str, port: int) -> subprocess.Popen:
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False")
    if mode == "alone":
        env["ATTENTION_LENS_BATCH"] = "0"
    return subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> None:
    """The app launched by `launch` ended (killed if it does not end within 30 s)."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def ready(url: str, proc: subprocess.Popen, timeout: float = 240):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited: {proc.stderr.read()[-2000:]}")
        try:
            return client(url)
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(1)
    raise RuntimeError("the app did not start")


def run_mode(mode: str, work, want, think: float, seed: int, flow: str = "page", asked=ASKED) -> dict:
    from tests.serving import free_port
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = launch(mode, port)
    try:
        warm = ready(url, proc)
        for key, text in work[:2]:  # every endpoint once per direction: nothing first-time in the measure
            warm.predict(text, 8, False, key, api_name="/start")
            page_alti(warm, page_event(warm, "attribution"))
            warm.predict(text, "alti", key, api_name="/attribution")
            warm.predict(["L1 H1"], [], [], 8, None, api_name="/ablate")
            warm.predict(text, 3, key, api_name="/beam")
        warm.close()
        idle, cpu0 = rss_mb(proc.pid), server_cpu(proc.pid)
        outs = [{} for _ in work]
        barrier = threading.Barrier(len(work) + 1)
        threads = [threading.Thread(target=student, daemon=True, args=(url, key, text, think, barrier,
                                                                       random.Random(seed + i), outs[i], flow, asked))
                   for i, (key, text) in enumerate(work)]
        for t in threads:
            t.start()
        peak, sampling = [idle or 0.0], threading.Event()

        def sample():  # the server's RSS while the students are connected (it falls as their sessions close)
            while not sampling.wait(0.25):
                peak[0] = max(peak[0], rss_mb(proc.pid) or 0.0)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        barrier.wait(timeout=1800)
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        sampling.set()
        sampler.join()
        after, cpu = rss_mb(proc.pid), server_cpu(proc.pid) - cpu0
    finally:
        stop(proc)
    lat = {e: [o["latency"][e] for o in outs if o.get("latency", {}).get(e) is not None] for e in ENDPOINTS}
    differ = [(i, [k for k in w if not alike(o["got"][k], w[k], tol)]) for i, (o, w) in enumerate(zip(outs, want))
              if o.get("got") is not None and not alike(o["got"], w, tol := batch_tolerance())]
    return {"mode": mode, "lat": lat, "wall": wall, "requests": sum(len(v) for v in lat.values()),
            "errors": [f"student {i}: {e}" for i, o in enumerate(outs) for e in o.get("errors", [])],
            "compared": sum(o.get("got") is not None for o in outs), "differ": differ, "idle": idle, "after": after,
            "peak": peak[0], "cpu": cpu}


def server_cpu(pid: int) -> float:
    """CPU seconds the process `pid` has spent (user and system)."""
    import psutil
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def limits(work, values: list[int], rounds: int = 2) -> None:
    """In this process, no HTTP: the students' /start then /attribution through the handlers, at most C at once
    (a semaphore, as Gradio's concurrency limit), for each C with batching and at 4 without; rounds interleaved."""
    import torch

    from attention_lens.shell import api
    from attention_lens.translate import handlers as decoding_views
    from transformer.decode.decoding import Translator
    torch.set_num_threads(1)
    trs = {key: Translator.load(ROOT / "checkpoints" / key) for key in {k for k, _ in work}}
    for key, text in work[:2]:
        decoding_views.start(trs[key], text, 8)

    def one(batching: bool, c: int):
        for tr in trs.values():
            tr.batcher.configure(batching, 0.05, 32)
        gate, lat, barrier = threading.Semaphore(c), {"/start": [], "/attribution": []}, threading.Barrier(len(work))

        def go(key, text):
            barrier.wait()
            for name, f in (("/start", lambda: decoding_views.start(trs[key], text, 8)),
                            ("/attribution", lambda: api.api_attribution(trs[key], text, "alti"))):
                t0 = time.perf_counter()
                with gate:
                    f()
                lat[name].append(time.perf_counter() - t0)
        threads = [threading.Thread(target=go, args=w) for w in work]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - t0, lat
    for r in range(rounds):
        for batching, c in [(False, 4)] + [(True, c) for c in values]:
            wall, lat = one(batching, c)
            print(f"round {r + 1}: {'batched' if batching else 'alone':8} concurrency {c:2d}: wall {wall:5.2f} s, " +
                  ", ".join(f"{e} p50 {pct(x, 50):.2f} p95 {pct(x, 95):.2f}" for e, x in lat.items()), flush=True)


def lone(rounds: int) -> None:
    """One user alone, in this process: the Start handler with batching off and on, rounds interleaved."""
    import statistics

    import torch

    from attention_lens.translate import handlers as decoding_views
    from transformer.decode.decoding import Translator

    from .decode import SENTENCE
    torch.set_num_threads(1)
    tr = Translator.load(ROOT / "checkpoints" / "de-en")
    decoding_views.start(tr, SENTENCE, 8)
    took = {False: [], True: []}
    for _ in range(rounds):
        for on in (False, True):
            tr.batcher.configure(on, 0.05, 32)
            t0 = time.perf_counter()
            decoding_views.start(tr, SENTENCE, 8)
            took[on].append(time.perf_counter() - t0)
    for on in (False, True):
        print(f"one user's Start, batching {'on ' if on else 'off'}: "
              f"median {statistics.median(took[on]) * 1e3:.1f} ms, "
              f"min {min(took[on]) * 1e3:.1f} ms ({rounds} rounds)")


def machine() -> str:
    import torch
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import psutil
    states = {p.info["status"] for p in psutil.process_iter(["cmdline", "status"])
              if "transformer.train" in " ".join(p.info["cmdline"] or [])}
    state = "none" if not states else "stopped (SIGSTOP)" if states == {psutil.STATUS_STOPPED} else "running"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, torch {torch.__version__}; "
            f"load average {load}; a training process (transformer.train): {state}")


def report(reps: list[dict], n: int, think: float) -> None:
    print(f"\n{n} students, think {think:g} s; {machine()}")
    print(f"{'mode':8} {'endpoint':13} {'n':>3} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    asked = [e for e in ENDPOINTS if any(r["lat"][e] for r in reps)]  # the flow's ALTI+ is one of two
    for r in reps:
        for e in asked:
            xs = r["lat"][e]
            print(f"{r['mode']:8} {e:13} {len(xs):3d} {pct(xs, 50):7.2f} {pct(xs, 95):7.2f} "
                  f"{max(xs) if xs else float('nan'):7.2f}")
    for r in reps:
        fmt = lambda x: "n/a" if x is None else f"{x:.0f} MB"
        grow = (f" (+{r['after'] - r['idle']:.0f} MB; peak +{r['peak'] - r['idle']:.0f} MB)"
                if r["idle"] and r["after"] else "")
        print(f"{r['mode']:8} wall {r['wall']:.1f} s, {r['requests'] / r['wall']:.2f} requests/s, "
              f"errors {len(r['errors'])}, answers differing from alone {len(r['differ'])} of {r['compared']}, "
              f"RSS idle {fmt(r['idle'])} -> after {fmt(r['after'])}{grow}, server CPU {r['cpu']:.1f} s")
        for line in r["errors"][:10] + [f"student {i} differs in {keys}" for i, keys in r["differ"][:10]]:
            print("   ", line)
    if len(reps) == 2:
        a, b = reps
        print("batched / alone:", ", ".join(f"{e} p50 {pct(b['lat'][e], 50) / pct(a['lat'][e], 50):.2f} "
                                            f"p95 {pct(b['lat'][e], 95) / pct(a['lat'][e], 95):.2f}" for e in asked))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.classroom", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--think", type=float, default=1.0, help="seconds between a student's requests (±50%%)")
    p.add_argument("--mode", choices=("alone", "batched", "both"), default="both")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flow", choices=("page", "api"), default="page",
                   help="ALTI+ as the page asks it (default), or through the API's /attribution (decoding again)")
    p.add_argument("--asks", default=",".join(ASKED), help="what each student asks, of start,alti,ablate,beam "
                   "(issue 42's own measurement: start,alti)")
    p.add_argument("--limits", help="instead: concurrency limits to compare in this process, e.g. 4,8,16,32")
    p.add_argument("--lone", type=int, default=0, help="instead: N rounds of one user's Start, batching off and on")
    a = p.parse_args(argv)
    if a.students < 1:
        p.error("--students must be at least 1")
    if not {"start", "alti"} <= set(a.asks.split(",")) <= set(ASKED):
        p.error(f"--asks: start and alti, and any of {', '.join(ASKED)}")
    if a.lone:
        lone(a.lone)
        return 0
    work = sentences(a.students, a.seed)
    print(f"{a.students} students: {sum(k == 'de-en' for k, _ in work)} German -> English, "
          f"{sum(k == 'en-de' for k, _ in work)} English -> German; computing each answer alone first", flush=True)
    if a.limits:
        limits(work, [int(x) for x in a.limits.split(",")])
        return 0
    want = expected(work, a.flow)
    reps = []
    for mode in (("alone", "batched") if a.mode == "both" else (a.mode,)):
        print(f"mode {mode}: launching app.py", flush=True)
        reps.append(run_mode(mode, work, want, a.think, a.seed, a.flow, tuple(a.asks.split(","))))
    report(reps, a.students, a.think)
    return 0


if __name__ == "__main__":
    sys.exit(main())
