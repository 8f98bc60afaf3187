"""ruff, its default rules plus a 120-column line (pyproject.toml [tool.ruff]), over the whole checkout: the app, the
library, the benchmarks and these tests. What it stands for: code a reader can follow (no unused or shadowed names,
no line that runs off the screen), instead of caps on file or README lengths."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                       cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
