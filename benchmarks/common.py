"""What the benchmarks share: percentiles, and what a process holds (its resident memory, the pid serving a
URL, the hooks left on a model)."""
from __future__ import annotations

import math
import os
import statistics
import urllib.parse


def pct(xs, q: float) -> float:
    """The q-th percentile (nearest rank) of xs; nan for no values."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


def ms(xs) -> str:
    """'median X ms, p95 Y ms' of durations in seconds."""
    return f"median {statistics.median(xs) * 1e3:6.2f} ms, p95 {pct(xs, 95) * 1e3:6.2f} ms"


def server_pid(url: str):
    """The pid listening on url's port when it is on this machine, else None."""
    import psutil
    u = urllib.parse.urlparse(url)
    if u.hostname not in ("127.0.0.1", "localhost", "0.0.0.0", "::1"):
        return None
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return c.pid
    except (psutil.AccessDenied, PermissionError):
        pass
    return None


def rss_mb(pid=None):
    """The resident memory of process `pid` (this one by default) in MB; None when it cannot be read."""
    import psutil
    try:
        return psutil.Process(pid or os.getpid()).memory_info().rss / 2**20
    except (psutil.Error, ValueError):
        return None


def hooks_left(model) -> int:
    """Every forward hook and pre-hook on any module of the model (recorder and ablation alike)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def alike(x, y, tol: float) -> bool:
    """Two answers (payloads, as JSON gives them) alike: maps (16-bit, attention_lens.translate.payload.encode_array)
    within `tol`
    and one unit of their rounding, other numbers within `tol` (relative) and one unit of a 4-decimal rounding,
    everything else equal. `tol`: transformer.decode.step's tolerance of a batched row against the same row alone."""
    if isinstance(x, dict) and isinstance(y, dict):
        if "b64" in x and "b64" in y:
            import numpy as np

            from attention_lens.translate.payload import decode_array
            a, b = decode_array(x), decode_array(y)
            return a.shape == b.shape and float(np.abs(a - b).max(initial=0)) <= tol + 1.01 / 65535
        return x.keys() == y.keys() and all(alike(x[k], y[k], tol) for k in x)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(alike(a, b, tol) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, (int, float)) and not isinstance(y, bool):
        return abs(x - y) <= tol * max(1.0, abs(x)) + 1.01e-4
    return x == y


def batch_tolerance() -> float:
    """transformer.decode.step.TOLERANCE: how far a batched answer may lie from the same answer alone; 0 for the
    code before
    issue 56 (benchmarks.against), whose batched rows were the same bits."""
    try:
        from transformer.decode.step import TOLERANCE
    except ImportError:
        return 0.0
    return TOLERANCE
