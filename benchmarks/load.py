"""Load and isolation benchmark of the app (printed figures; the checks are counted, not asserted).

  python -m benchmarks.load [--sessions 32] [--checkpoint DIR] [--data-dir DIR] [--url URL]
  python -m benchmarks.load --memory-steps 1000 [--checkpoint DIR]
  python -m benchmarks.load --mixed 1000 [--warmup 200] [--default-allocator] [--checkpoint DIR]

Default mode: launches the app in this process (unless --url points at a running one), then N
gradio_client Clients in threads, each starting a DIFFERENT sentence with /start and stepping it to
the end with /step, the events the UI sends. Every /step call is timed. Afterwards each session is
checked: its final translation equals Translator.translate(sentence), every payload carried its own
source pieces and a target that grew by one piece per step, and the last payload's maps have the
shapes (and values) of Translator.attend(sentence, the session's target pieces).

--mixed N: the app served in this process and one gradio_client user, in a child process, making N mixed
requests (start, steps, force, run, export, attention on a 2,200-character input, ablation, beam); prints the
server's RSS growth after the warm-up and the hooks left on the model (any module). Every mode sets up the
allocator as app.py does (attention_lens/shell/memory.py) unless --default-allocator keeps glibc's defaults.

--memory-steps N: no HTTP. Runs N+ steps over many sessions through attention_lens.translate.handlers.start/step in this
process, discarding sessions as a user would, and prints the RSS growth after a warm-up, plus the
number of forward hooks left on the model's attention modules (should be 0).
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import threading
import time

import numpy as np

from attention_lens.shell.components import CONCURRENCY, QUEUE_MAX
from attention_lens.translate import handlers as decoding_views
from attention_lens.translate.payload import decode_array
from tests.serving import serving
from transformer.train import data as D

from .common import hooks_left, pct, rss_mb, server_pid

VARIATIONS = ["", "Heute ", "Gestern ", "Hier ", "Dort ", "Wieder ", "Jetzt ", "Morgens ", "Abends ", "Plötzlich "]


# -- sentences -------------------------------------------------------------------------------------

def pick_sentences(n: int, data_dir=None, seed: int = 0) -> list[str]:
    """n different German sentences: from the Multi30k test set when it is there, else the app's
    examples with variations."""
    pool: list[str] = []
    try:
        pool = [de for de, _ in D.load_pairs(data_dir or D.DEFAULT_DATA_DIR, "test_2016_flickr") if de.strip()]
    except (D.DataError, OSError):
        pool = []
    pool = list(dict.fromkeys(pool))  # distinct, in order
    if len(pool) >= n:
        return random.Random(seed).sample(pool, n)
    base = D.read_examples() or ["Ein Hund rennt durch den Schnee."]
    out = list(pool)
    for i in range(n * 2):
        s = base[i % len(base)]
        v = VARIATIONS[(i // len(base)) % len(VARIATIONS)]
        s = v + s[0].lower() + s[1:] if v else s
        if i // (len(base) * len(VARIATIONS)):
            s = f"{s} ({i})"
        if s not in out:
            out.append(s)
        if len(out) >= n:
            break
    return out[:n]


# -- concurrent sessions ---------------------------------------------------------------------------

def _session(url, sentence, expected_source, k, max_steps, barrier, out, auth=None):
    """One user: /start `sentence`, then /step until the payload says done. Fills `out`."""
    from gradio_client import Client
    out.update(sentence=sentence, latencies=[], errors=[], problems=[], steps=0, translation=None, payload=None)
    client = None
    try:
        client = Client(url, verbose=False, auth=auth)
    except Exception as e:  # noqa: BLE001 - counted and reported
        out["errors"].append(f"connect: {type(e).__name__}: {e}")
    try:
        barrier.wait(timeout=300)
    except threading.BrokenBarrierError:
        pass
    if client is None:
        return
    try:
        text, payload, _ = client.predict(sentence, k, api_name="/start")
        _check_payload(out, payload, expected_source, 0, None)
        while not payload["done"] and out["steps"] < max_steps:
            prev = payload["target"]
            t0 = time.perf_counter()
            text, payload, topk = client.predict(k, api_name="/step")
            out["latencies"].append(time.perf_counter() - t0)
            out["steps"] += 1
            _check_payload(out, payload, expected_source, out["steps"], prev)
            if len(topk.get("items", [])) != k:
                out["problems"].append(f"step {out['steps']}: {len(topk.get('items', []))} top-k items, wanted {k}")
        out["translation"], out["payload"] = text, payload
    except Exception as e:  # noqa: BLE001 - counted and reported
        out["errors"].append(f"step {out['steps']}: {type(e).__name__}: {e}")
    finally:
        client.close()


def _check_payload(out, payload, expected_source, step, prev_target):
    if payload.get("source") != expected_source:
        out["problems"].append(f"step {step}: source pieces are not this session's: {payload.get('source')[:8]}...")
    if payload.get("cursor") != step:
        out["problems"].append(f"step {step}: cursor {payload.get('cursor')}")
    tgt = payload.get("target") or []
    if prev_target is not None and (len(tgt) != len(prev_target) + 1 or tgt[:-1] != prev_target):
        out["problems"].append(f"step {step}: target {tgt[-4:]} does not extend the previous one by one piece")


def verify(result: dict, translator, atol: float = 2e-3) -> list[str]:
    """Problems of one finished session against the translator run directly (empty list: all good)."""
    problems = []
    sentence, payload = result["sentence"], result.get("payload")
    if payload is None:
        return ["no final payload"]
    want = translator.translate(sentence)
    if result["translation"] != want:
        problems.append(f"translation {result['translation']!r} != Translator.translate {want!r}")
    target = payload["target"]
    maps = translator.attend(sentence, target)
    if maps.source_tokens != payload["source"]:
        problems.append("source pieces differ from Translator.attend's")
    T = len(target)  # the teacher-forced target always ends in </s>; a session cut at its limit may not
    if maps.target_tokens[:T] != target:
        problems.append(f"target pieces differ from Translator.attend's: {maps.target_tokens[:T][-4:]} "
                            f"vs {target[-4:]}")
    want_maps = {"encoder_self": maps.encoder_self, "decoder_self": maps.decoder_self[:, :, :T, :T],
                 "cross": maps.cross[:, :, :T]}
    for kind, ref in want_maps.items():
        if kind not in payload["maps"]:
            problems.append(f"{kind} missing from the payload")
            continue
        got = decode_array(payload["maps"][kind])
        if got.shape != ref.shape:
            problems.append(f"{kind} shape {got.shape} != {ref.shape}")
        elif not np.allclose(got, ref, atol=atol):
            problems.append(f"{kind} differs from the teacher-forced pass by {float(np.abs(got - ref).max()):.4f}")
    return problems


def run_sessions(url: str, sentences: list[str], translator, k: int = 8, max_steps: int = 1000,
                 check: bool = True, auth=None) -> dict:
    """len(sentences) concurrent gradio_client sessions against `url`, each stepping its own sentence to
    the end. Returns a report: sessions, steps, errors, problems (isolation / correctness), wall_s,
    steps_per_s, latency percentiles (s) and the per-session results."""
    results = [{} for _ in sentences]
    expected = [translator.tokenizer.pieces(translator.source_ids(s)) for s in sentences]
    barrier = threading.Barrier(len(sentences) + 1)
    threads = [threading.Thread(target=_session, args=(url, s, e, k, max_steps, barrier, r, auth), daemon=True)
               for s, e, r in zip(sentences, expected, results)]
    for t in threads:
        t.start()
    try:
        barrier.wait(timeout=300)
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if check:
        for r in results:
            if r.get("payload") is not None:
                r["problems"] = r["problems"] + verify(r, translator)
    lat = [x for r in results for x in r["latencies"]]
    steps = sum(r["steps"] for r in results)
    return {"sessions": len(sentences), "steps": steps,
            "errors": [f"session {i}: {e}" for i, r in enumerate(results) for e in r["errors"]],
            "problems": [f"session {i}: {p}" for i, r in enumerate(results) for p in r["problems"]],
            "wall_s": wall, "steps_per_s": steps / wall if wall > 0 else float("nan"),
            "p50_s": pct(lat, 50), "p95_s": pct(lat, 95), "max_s": max(lat) if lat else float("nan"),
            "results": results}


def print_report(rep: dict, rss_before=None, rss_after=None, file=sys.stdout):
    p = lambda *a: print(*a, file=file, flush=True)
    ms = lambda s: f"{s * 1e3:.1f} ms"
    p(f"sessions: {rep['sessions']}   total steps: {rep['steps']}   errors: {len(rep['errors'])}   "
      f"check failures: {len(rep['problems'])}")
    p(f"throughput: {rep['steps_per_s']:.1f} steps/s over {rep['wall_s']:.1f} s")
    p(f"/step latency: p50 {ms(rep['p50_s'])}   p95 {ms(rep['p95_s'])}   max {ms(rep['max_s'])}")
    fmt = lambda x: "n/a" if x is None else f"{x:.0f} MB"
    p(f"server RSS: before {fmt(rss_before)}   after {fmt(rss_after)}" +
      (f"   (+{rss_after - rss_before:.0f} MB)" if rss_before is not None and rss_after is not None else ""))
    for line in (rep["errors"] + rep["problems"])[:20]:
        p("  ", line)


# -- memory: many sessions through the handlers, no HTTP ------------------------------------------

def memory_run(translator, sentences: list[str], steps: int, warmup_steps: int | None = None,
               k: int = 8, log=print) -> dict:
    """>= `steps` steps over as many sessions as it takes, through app.start/app.step, each session
    dropped once finished. RSS is read after `warmup_steps` and at the end (both after gc)."""
    warmup_steps = max(50, steps // 10) if warmup_steps is None else warmup_steps
    done_steps, sessions, rss_warm, i = 0, 0, None, 0
    t0 = time.perf_counter()
    while done_steps < steps + warmup_steps:
        state = decoding_views.start(translator, sentences[i % len(sentences)], k)[0]
        i += 1
        sessions += 1
        while not state.done:
            state = decoding_views.step(translator, state, k)[0]
            done_steps += 1
            if rss_warm is None and done_steps >= warmup_steps:
                gc.collect()
                rss_warm = rss_mb()
        del state
    gc.collect()
    rss_end = rss_mb()
    rep = {"sessions": sessions, "steps": done_steps - warmup_steps, "warmup_steps": warmup_steps,
           "seconds": time.perf_counter() - t0, "rss_warm_mb": rss_warm, "rss_end_mb": rss_end,
           "growth_mb": rss_end - rss_warm, "hooks_left": hooks_left(translator.model)}
    log(f"memory: {rep['steps']} steps over {sessions} sessions (after {warmup_steps} warm-up steps) "
        f"in {rep['seconds']:.1f} s")
    log(f"RSS after warm-up {rss_warm:.1f} MB, at the end {rss_end:.1f} MB: growth {rep['growth_mb']:+.1f} MB")
    log(f"forward hooks left on the attention modules: {rep['hooks_left']}")
    return rep


# -- memory: 1,000+ mixed requests against the served app ------------------------------------------

LONG = "Ein Hund rennt durch den tiefen Schnee und bellt laut. " * 40  # ~2,200 characters: cut to 2,000


def mixed_cycle(client, sentence: str, k: int = 8) -> int:
    """One user's visit through the public API: start, steps, a forced piece, run, export, attention on a long
    input, head ablation, beam search. Returns the number of requests made."""
    _, _, topk = client.predict(sentence, k, api_name="/start")
    for _ in range(3):
        client.predict(k, api_name="/step")
    client.predict(topk["items"][1][0], k, api_name="/force")
    client.predict(k, api_name="/run")
    client.predict(api_name="/export")
    client.predict(LONG, api_name="/attention_compact")
    client.predict([], [], ["L1 H1"], k, api_name="/ablate")
    client.predict(sentence, 4, api_name="/beam")
    return 10


def mixed_client(url: str, sentences: list[str], requests: int, warmup: int, out=sys.stdout, go=sys.stdin) -> None:
    """The user of --mixed, in its own process: mixed visits until `warmup` requests, then prints "WARM n" and
    waits for a line on `go` (the server measures), then visits until `requests` more. Prints progress lines
    ("DONE requests visits seconds-of-this-visit"), one "ERROR ..." line per failed visit, and "END" last."""
    from gradio_client import Client
    say = lambda line: print(line, file=out, flush=True)
    client = Client(url, verbose=False)
    done, i, warm = 0, 0, False
    try:
        while done < requests + warmup:
            t0 = time.perf_counter()
            try:
                done += mixed_cycle(client, sentences[i % len(sentences)])
            except Exception as e:  # noqa: BLE001 - counted and reported
                say(f"ERROR {type(e).__name__}: {str(e)[:200]}".replace("\n", " "))
                done += 1
            i += 1
            say(f"DONE {done} {i} {time.perf_counter() - t0:.4f}")
            if not warm and done >= warmup:
                warm = True
                say(f"WARM {done}")
                go.readline()
    finally:
        client.close()
        say(f"END {done} {i} 0")


def mixed_run(url: str, model, sentences: list[str], requests: int, warmup: int, log=print) -> dict:
    """>= `requests` mixed requests (plus `warmup` first) from a gradio_client user in a child process, so
    that this process's RSS is the server's alone (when served here): read after the warm-up (the user
    waits meanwhile) and at the end, both after gc; and the hooks left on the model."""
    import json
    import subprocess
    cmd = [sys.executable, "-m", "benchmarks.load", "--mixed-client", url, "--mixed", str(requests),
           "--warmup", str(warmup)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root, env=env)
    child.stdin.write(json.dumps(sentences) + "\n")
    child.stdin.flush()
    done, visits, rss_warm, errors, t0, last_log, visit_s = 0, 0, None, [], time.perf_counter(), 0, []
    for line in child.stdout:
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind == "ERROR":
            errors.append(rest)
        elif kind in ("DONE", "END"):
            n, v, secs = rest.split()
            done, visits = int(n), int(v)
            if kind == "DONE" and rss_warm is not None:
                visit_s.append(float(secs))
            if kind == "DONE" and visits - last_log >= 10:
                last_log = visits
                log(f"  {done} requests, RSS {rss_mb():.1f} MB, {time.perf_counter() - t0:.0f} s")
        elif kind == "WARM":
            gc.collect()
            rss_warm = rss_mb()
            child.stdin.write("go\n")
            child.stdin.flush()
    child.wait()
    if child.returncode:
        errors.append(f"the client process exited with status {child.returncode}")
    gc.collect()
    rss_end = rss_mb()
    rss_warm = float("nan") if rss_warm is None else rss_warm  # the user stopped before the warm-up ended
    rep = {"requests": done - warmup, "warmup": warmup, "visits": visits, "errors": errors,
           "seconds": time.perf_counter() - t0, "rss_warm_mb": rss_warm, "rss_end_mb": rss_end,
           "growth_mb": rss_end - rss_warm, "hooks_left": hooks_left(model),
           "visit_p50_s": pct(visit_s, 50), "visit_p95_s": pct(visit_s, 95)}
    log(f"mixed: {rep['requests']} requests in {visits} visits (start, steps, force, run, export, attention on "
        f"{len(LONG):,} characters, ablation, beam) after {warmup} warm-up requests, {rep['seconds']:.0f} s, "
        f"{len(errors)} errors; the user is a separate process")
    log(f"one visit (10 requests) after the warm-up: p50 {rep['visit_p50_s'] * 1e3:.0f} ms, "
        f"p95 {rep['visit_p95_s'] * 1e3:.0f} ms")
    log(f"server RSS after warm-up {rss_warm:.1f} MB, at the end {rss_end:.1f} MB: growth {rep['growth_mb']:+.1f} MB")
    log(f"hooks left on the model (any module, recorder and ablation alike): {rep['hooks_left']}")
    return rep


# -- CLI -------------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=32)
    p.add_argument("--checkpoint", default=None, help="checkpoint directory (default: checkpoints/de-en)")
    p.add_argument("--device", default="auto")
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--url", default=None, help="an already running app (its checkpoint must be --checkpoint)")
    p.add_argument("--k", type=int, default=8, help="top-k sent with every step, as the UI does")
    p.add_argument("--memory-steps", type=int, default=0, help="run the in-process memory check instead")
    p.add_argument("--mixed", type=int, default=0, help="N mixed requests against the app served in-process")
    p.add_argument("--warmup", type=int, default=200, help="warm-up requests before --mixed measures")
    p.add_argument("--default-allocator", action="store_true",
                   help="keep glibc's malloc defaults instead of the settings the app makes "
                        "(attention_lens/shell/memory.py)")
    p.add_argument("--mixed-client", metavar="URL", help=argparse.SUPPRESS)  # the user process of --mixed
    a = p.parse_args(argv)
    if a.mixed_client:
        import json
        mixed_client(a.mixed_client, json.loads(sys.stdin.readline()), a.mixed, a.warmup)
        return 0
    if not a.default_allocator:
        from attention_lens.shell.memory import tune_allocator
        print(f"allocator: {tune_allocator() or 'defaults'} (as app.py sets it)", flush=True)
    if a.sessions < 1:
        p.error("--sessions must be at least 1")
    from transformer.decode.decoding import Translator
    tr = Translator.load(a.checkpoint, a.device)
    if a.memory_steps:
        sentences = pick_sentences(max(64, a.sessions), a.data_dir)
        rep = memory_run(tr, sentences, a.memory_steps, k=a.k)
        if rep["hooks_left"]:
            print("FAIL: forward hooks were left on the attention modules", file=sys.stderr)
            return 1
        return 0
    if a.mixed:
        with serving(tr) as url:
            rep = mixed_run(url, tr.model, pick_sentences(64, a.data_dir), a.mixed, a.warmup)
        return 1 if rep["errors"] or rep["hooks_left"] else 0
    sentences = pick_sentences(a.sessions, a.data_dir)
    print(f"{len(sentences)} sessions, {len(set(sentences))} different sentences; checkpoint "
          f"{tr.checkpoint_dir}; device {tr.device}", flush=True)

    def go(url, pid):
        print(f"app at {url} (queue: concurrency {CONCURRENCY}, max size {QUEUE_MAX})", flush=True)
        before = rss_mb(pid) if pid else None
        rep = run_sessions(url, sentences, tr, k=a.k)
        after = rss_mb(pid) if pid else None
        print_report(rep, before, after)
        return rep

    if a.url:
        rep = go(a.url, server_pid(a.url))
    else:
        with serving(tr) as url:
            rep = go(url, os.getpid())
    return 1 if rep["errors"] or rep["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
