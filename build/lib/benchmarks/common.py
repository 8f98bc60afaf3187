"""What the benchmarks share."""
from __future__ import annotations

import math
import statistics


def pct(xs, q: float) -> float:
    """The q-th percentile (nearest rank) of xs; nan for no values."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, int(math.ceil(q / 100 * len(xs))) - 1))]


def ms(xs) -> str:
    """'median X ms, p95 Y ms' of durations in seconds."""
    return f"median {statistics.median(xs) * 1e3:6.2f} ms, p95 {pct(xs, 95) * 1e3:6.2f} ms"
