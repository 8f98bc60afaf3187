"""The server's allocator settings (ui/memory.py): freed blocks of a few MB go back to the system."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ui import memory

ROOT = Path(__file__).resolve().parents[1]
glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator (Linux)")

# In a fresh process: one freed 8 MB block (with glibc's defaults the mmap threshold then rises to 8 MB), then
# 48 blocks of 2 MB, each followed by a small array that stays alive (as a request's payload lies between
# long-lived objects). Prints the RSS given back when the 2 MB blocks are freed, in MB.
SCRIPT = textwrap.dedent("""
    import sys, numpy as np, psutil
    from ui.memory import tune_allocator
    if sys.argv[1] == "tuned":
        print("set", tune_allocator(environ={}), file=sys.stderr)
    rss = lambda: psutil.Process().memory_info().rss / 2**20
    big = np.ones(2**20); del big
    blocks, pins = [], []
    for _ in range(48):
        blocks.append(np.ones(2**18))        # 2 MB, written
        pins.append(np.ones(1024))           # 8 kB that stays
    before = rss()
    del blocks
    print(f"{before - rss():.1f}")
""")


def given_back_mb(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip())


@glibc_only
def test_freed_megabyte_blocks_go_back_to_the_system():
    tuned = given_back_mb("tuned")
    default = given_back_mb("default")
    assert tuned >= 72, f"only {tuned:.1f} of 96 MB freed went back to the system (glibc's defaults: {default:.1f})"


@glibc_only
def test_tune_allocator_sets_both_and_leaves_what_the_environment_gives():
    assert memory.tune_allocator(environ={}) == {"arena_max": memory.ARENA_MAX,
                                                  "mmap_threshold": memory.MMAP_THRESHOLD}
    assert memory.tune_allocator(environ={"MALLOC_ARENA_MAX": "4"}) == {"mmap_threshold": memory.MMAP_THRESHOLD}
    assert memory.tune_allocator(environ={"MALLOC_ARENA_MAX": "4", "MALLOC_MMAP_THRESHOLD_": "65536"}) == {}


def test_nothing_is_set_off_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert memory.tune_allocator(environ={}) == {}
