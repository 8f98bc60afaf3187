"""A benchmark measured side by side with the code of another commit, in one run on one machine: machines differ
and one host's speed changes by 2x within an hour, so a figure means something only beside a reference measured in
the same run.

    python -m benchmarks.against REV NAME [--pairs 2] [ARGS...]
    python -m benchmarks.against aae5d47 classroom --students 30 --mode batched --flow api --asks start,alti

Runs `python -m benchmarks.NAME ARGS` in a checkout of REV and in this one, alternately (REV, here, here, REV, ...:
`--pairs` of each), and prints each run's table rows (lines "<mode> <endpoint> <n> <p50> <p95> <max>") and its
line of errors, then per
endpoint the p95 of every run and the ratio of their medians, here ÷ REV. The checkout of REV is a git worktree
beside this one (so that both read the same ../shared/data and the same sentences), with this checkout's
benchmarks/ copied in (both are measured by the same rig), removed at the end. aae5d47 is the code issue 42
measured (its "today": 30 students' /start p95 2.73 s, /attribution 2.23 s, on Start then ALTI+: `--asks
start,alti --flow api`). Prints, never asserts.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^(\w+)\s+(\S+(?: \S+)*?)\s+(\d+)\s+([\d.]+|nan)\s+([\d.]+|nan)\s+([\d.]+|nan)\s*$")


def rows(text: str) -> dict[str, float]:
    """{endpoint: p95} of a benchmark's table rows in `text`."""
    return {m.group(2): float(m.group(5)) for m in map(ROW.match, text.splitlines()) if m}


def run(where: Path, name: str, args: list[str]) -> str:
    out = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *args], cwd=where, capture_output=True,
                         text=True, check=False)  # a failure is reported below
    if out.returncode:
        raise RuntimeError(f"benchmarks.{name} in {where} exited {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout


def checkout(rev: str) -> Path:
    """A worktree of `rev` beside this checkout, with this checkout's benchmarks/."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    where = ROOT.parent / f"{ROOT.name}-against-{sha}"
    subprocess.run(["git", "worktree", "add", "--force", "--detach", str(where), sha], cwd=ROOT, check=True,
                   capture_output=True)
    shutil.rmtree(where / "benchmarks", ignore_errors=True)
    shutil.copytree(ROOT / "benchmarks", where / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    return where


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.against", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rev", help="the commit to measure beside this checkout")
    p.add_argument("name", help="the benchmark: python -m benchmarks.NAME")
    p.add_argument("--pairs", type=int, default=2, help="runs of each, in the order REV, here, here, REV, ...")
    a, args = p.parse_known_args(argv)
    where = checkout(a.rev)
    got: dict[str, list[dict[str, float]]] = {"REV": [], "here": []}
    try:
        for i in range(a.pairs):
            for label in (("REV", "here") if i % 2 == 0 else ("here", "REV")):
                text = run(where if label == "REV" else ROOT, a.name, args)
                got[label].append(rows(text))
                print(f"-- {label} ({a.rev if label == 'REV' else 'this checkout'}), run {len(got[label])}")
                shown = [line for line in text.splitlines() if ROW.match(line) or " errors " in line]
                print("\n".join(shown), flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, capture_output=True, check=False)
    print(f"\np95 per endpoint, {a.rev} vs this checkout, runs alternated; ratio of the medians (here / {a.rev})")
    for endpoint in got["REV"][0]:
        old = [r[endpoint] for r in got["REV"] if endpoint in r]
        new = [r[endpoint] for r in got["here"] if endpoint in r]
        if old and new:
            ratio = statistics.median(new) / statistics.median(old)
            print(f"{endpoint:16} {a.rev}: {', '.join(f'{x:.2f}' for x in old)} s | here: "
                  f"{', '.join(f'{x:.2f}' for x in new)} s | {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
