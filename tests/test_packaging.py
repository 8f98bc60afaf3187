"""`pip install .` gives a working library and the `attention-lens` command, away from the checkout."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target, src = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("src")
    for name in ("app.py", "pyproject.toml", "README.md", "transformer", "ui", "benchmarks", "assets", "checkpoints"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__", "epochs", "*.log")}
                                         if (ROOT / name).is_dir() else {}))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


def run_there(installed, code: str, cwd: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(installed), PYTHONNOUSERSITE="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_installed_package_translates_and_builds_the_app_from_elsewhere(installed, tmp_path):
    out = run_there(installed, """
import transformer, ui
from transformer import Translator
from transformer.data import read_examples
tr = Translator.load()
print(transformer.__file__)
print(tr.translate("Ein Hund rennt durch den Schnee."))
print(len(read_examples()))
ui.build_demo(tr)
print("built")
""", tmp_path)
    lines = out.strip().splitlines()
    assert lines[0].startswith(str(installed)), "imported the checkout instead of the installed package"
    assert lines[1] == "A dog runs through the snow." and int(lines[2]) > 0 and lines[3] == "built"


def test_console_script_has_the_app_flags(installed, tmp_path):
    script = installed / "bin" / "attention-lens"
    assert script.exists()
    env = dict(os.environ, PYTHONPATH=str(installed))
    r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    for flag in ("--host", "--port", "--share", "--auth-file", "--checkpoint", "--device"):
        assert flag in r.stdout
