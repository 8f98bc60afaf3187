"""The server's memory allocator, set once at start for a process that runs for days.

Measured with `python -m benchmarks.load --mixed` (README, Reliability): with glibc's defaults the server
kept freed memory. In one run its RSS rose 83 MB over 1,000 mixed requests after the warm-up, and
`malloc_trim` then gave 62 MB of it back: free blocks that glibc held, not live objects. Two defaults hold them:
- each of Gradio's worker threads gets its own malloc arena (up to 8 per core), and each arena keeps the
  peak of the requests that ran on it;
- the mmap threshold rises to the size of the largest block freed (up to 32 MB), so after one long input's
  payload every later payload of a few MB comes from the heap, where live objects between the holes pin it.
Either setting alone was not enough (arenas capped: +54 MB and still rising after 400 requests; the
threshold fixed: +40 MB); both: +15 MB. `tune_allocator` caps the arenas at 2 and fixes the threshold at
1 MB, which also stops it rising: payloads of 1 MB and more are mapped and go back to the system when freed,
while the many small tensors of a step still reuse the heap (a 128 kB threshold mapped more blocks and cost
a little more time for the same memory). Only glibc (Linux) has these knobs; elsewhere this does nothing.
An operator's own settings win, given either way glibc reads them: MALLOC_ARENA_MAX /
MALLOC_MMAP_THRESHOLD_, or GLIBC_TUNABLES=glibc.malloc.arena_max=N:glibc.malloc.mmap_threshold=N.

Intel MKL (torch's BLAS on x86 CPUs) keeps a pool of buffers per thread that has called it, until that thread ends
(its "fast memory manager"): 3.5 MB per thread after one Linear of the output projection's size
(tests/test_memory.py). Every handler thread that projects a hidden state (a Start's top-k at each step) keeps one,
and with batching up to 64 Start handlers run at once: 30 students pressing Start held +239 MB while connected, against
+34 MB with it off (2026-12-03, docs/benchmarks.md). `tune_allocator` turns it off (MKL_DISABLE_FAST_MM=1, read when
MKL starts: set before torch runs anything) where the environment does not give MKL_DISABLE_FAST_MM already (MKL
turns the pools off for any value of it).
app.py calls this first thing, before gradio, torch or the library are imported.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_MMAP_THRESHOLD = -3  # mallopt parameters, from glibc's malloc.h
M_ARENA_MAX = -8
ARENA_MAX = 2
MMAP_THRESHOLD = 1024 * 1024
MKL_FAST_MM = "MKL_DISABLE_FAST_MM"  # Intel MKL's switch for its per-thread buffer pools ("1": off)
# each setting, and the two ways an operator gives it to glibc: an environment variable, a tunable
FROM_ENVIRONMENT = {"arena_max": ("MALLOC_ARENA_MAX", "glibc.malloc.arena_max"),
                    "mmap_threshold": ("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold")}


def given_by_environment(environ=os.environ) -> set[str]:
    """The settings ("arena_max", "mmap_threshold") that the environment already gives glibc."""
    tunables = {t.split("=", 1)[0].strip() for t in environ.get("GLIBC_TUNABLES", "").split(":")}
    return {name for name, (variable, tunable) in FROM_ENVIRONMENT.items()
            if variable in environ or tunable in tunables}


def tune_allocator(arena_max: int = ARENA_MAX, mmap_threshold: int = MMAP_THRESHOLD, environ=os.environ) -> dict:
    """Caps glibc's malloc arenas and fixes its mmap threshold for this process, and turns MKL's per-thread buffer
    pools off. Returns what was set ({} where the C library is not glibc, or for settings the environment already
    gives; "mkl_fast_mm": "off" wherever MKL_DISABLE_FAST_MM was not given)."""
    done = {}
    if MKL_FAST_MM not in environ:
        environ[MKL_FAST_MM] = "1"
        done["mkl_fast_mm"] = "off"
    if not sys.platform.startswith("linux"):
        return done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        _ = libc.gnu_get_libc_version  # glibc only (musl has a mallopt that does nothing)
    except (OSError, AttributeError):
        return done
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    given = given_by_environment(environ)
    if "arena_max" not in given and mallopt(M_ARENA_MAX, arena_max) == 1:
        done["arena_max"] = arena_max
    if "mmap_threshold" not in given and mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1:
        done["mmap_threshold"] = mmap_threshold
    return done
