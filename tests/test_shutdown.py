"""A server stopped by SIGTERM or SIGINT leaves nothing in the temp directory, as one that exits normally: a real
process of the `attention-lens` command (attention_lens/launch.py), in a temp directory of its own."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.serving import free_port

ROOT = Path(__file__).resolve().parent.parent


def served(tiny_trained, tmp: Path, port: int) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp), GRADIO_ANALYTICS_ENABLED="False", GRADIO_TEMP_DIR=str(tmp / "gradio"))
    p = subprocess.Popen([sys.executable, "-m", "attention_lens.launch", "--checkpoint", str(tiny_trained),
                          "--port", str(port), "--device", "cpu"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise AssertionError(f"the server ended: {p.stdout.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/config", timeout=5).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.5)
    p.kill()
    raise AssertionError("the server did not answer in 240 s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_server_removes_its_page_folder(tiny_trained, tmp_path, sig):
    p = served(tiny_trained, tmp_path, free_port())
    try:
        assert list(tmp_path.glob("attention-lens-page-*")), "the page's bundle folder was made"
        p.send_signal(sig)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert not list(tmp_path.glob("attention-lens-page-*")), p.stdout.read().decode()[-2000:]
