"""`pip install .`: a wheel of the checkout's own layout, its files copied as they are (nothing rewritten): the
packages transformer and attention_lens (its launch.main the `attention-lens` command; app.py, the checkout's
launcher, is not installed), and assets/ and checkpoints/ as data
(share/attention-lens/). Installed into a fresh virtual environment and run from a folder away from the checkout,
it translates with the shipped model, builds the app from the installed assets and runs its command. And
`pip install -e .` (the README's test install) still gives a working command on the checkout's own files."""
import os
import re
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("app.py", "pyproject.toml", "README.md", "transformer", "attention_lens", "benchmarks", "tests", "assets",
           "checkpoints")
SENTENCE = "Ein Hund rennt durch den Schnee."
PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
DATA = "share/attention-lens/"  # where the wheel puts assets/ and checkpoints/ (pyproject.toml's data-files)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A copy of the checkout, as a fresh clone has it (what pip builds from)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "epochs", "*.log", "train_state.pt"))
        else:
            shutil.copy2(ROOT / name, src / name)
    return src


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
                       check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (path,) = out.glob("attention_lens-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel installed; the dependencies are this interpreter's (a .pth
    naming its site-packages, which are searched after the venv's own)."""
    env = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    (packages,) = env.glob("lib/python*/site-packages")
    (packages / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    r = subprocess.run([*PIP, "--python", str(env / "bin" / "python"), "install", "--no-deps", str(wheel)],
                       check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return env


def source_of(name: str) -> str | None:
    """The checkout path a file of the wheel was copied from (None: the wheel's own metadata)."""
    if ".dist-info/" in name:
        return None
    if ".data/data/" in name:
        data = name.split(".data/data/", 1)[1]
        assert data.startswith(DATA), name
        return data[len(DATA):]
    return name


def run_away(python: Path, code: str, cwd: Path) -> str:
    """Python code run by PYTHON in CWD, with no PYTHONPATH (the checkout is on no path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONNOUSERSITE": "1"}
    r = subprocess.run([str(python), "-c", code], check=False, capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_wheel_holds_the_checkouts_packages_and_its_data_without_benchmarks_or_test_helpers(wheel):
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    dist = wheel.name.split("-py3")[0]
    assert {n.split("/")[0] for n in names} == {"transformer", "attention_lens", f"{dist}.dist-info", f"{dist}.data"}
    want_py = {p.relative_to(ROOT).as_posix() for d in ("transformer", "attention_lens")
               for p in (ROOT / d).rglob("*.py")}
    assert {n for n in names if n.endswith(".py")} == want_py
    assert not [n for n in names if re.search(r"benchmarks|tests/|conftest|serving|setup\.py|\.png$", n)]
    tracked = subprocess.run(["git", "ls-files", "assets", "checkpoints"], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout.split()
    data = {source_of(n) for n in names if ".data/data/" in n}
    assert data == {t for t in tracked if not t.endswith(".png")}  # every view, example and model file; no screenshot
    for must in ("assets/shell/lens.js", "assets/vendor/plotly-cartesian.min.js", "checkpoints/de-en/model.pt",
                 "checkpoints/en-de/tokenizer.model"):
        assert must in data
    assert "attention-lens = attention_lens.launch:main" in z.read(f"{dist}.dist-info/entry_points.txt").decode()


def test_no_file_in_the_wheel_differs_from_its_source(wheel, source):
    """Nothing is rewritten on the way into the wheel: every file is its source file, byte for byte."""
    z = zipfile.ZipFile(wheel)
    copied = {n: source_of(n) for n in z.namelist() if source_of(n)}
    assert len(copied) > 100
    differ = [n for n, src in copied.items() if z.read(n) != (source / src).read_bytes()]
    assert not differ


def test_installed_copy_translates_and_builds_the_app_from_its_installed_data(venv, tmp_path):
    from transformer import Translator
    want = Translator.load(device="cpu").translate(SENTENCE)  # the checkout's own answer
    out = run_away(venv / "bin" / "python", f"""
import sys
from attention_lens import launch
print([m for m in ("gradio", "torch", "numpy") if m in sys.modules])  # the allocator is tuned before these load
import transformer, attention_lens
from transformer import Translator
from transformer.model.checkpoint import SHIPPED
from transformer.train.data import read_examples
from attention_lens import build_demo
from attention_lens.shell.components import ASSETS
tr = Translator.load(device="cpu")
print(launch.__file__, transformer.__file__, attention_lens.__file__)
print(SHIPPED, ASSETS)
print(tr.translate({SENTENCE!r}))
print(len(read_examples()))
build_demo(tr)
print("built")
""", tmp_path)
    lines = out.strip().splitlines()
    assert lines[0] == "[]"
    packages = str(next(venv.glob("lib/python*/site-packages")))
    assert all(f.startswith(packages) for f in lines[1].split())
    assert lines[2].split() == [str(venv / DATA / "checkpoints"), str(venv / DATA / "assets")]
    assert lines[3] == want and int(lines[4]) > 0 and lines[5] == "built"


def test_a_target_install_finds_its_own_data(wheel, tmp_path_factory, tmp_path):
    """`pip install --target DIR`: pip moves the wheel's data beside its packages (DIR/share/attention-lens), and the
    code run from DIR (on PYTHONPATH, as --target is used) finds its checkpoints and assets there."""
    target = tmp_path_factory.mktemp("target")
    r = subprocess.run([*PIP, "install", "--no-deps", "--target", str(target), str(wheel)], check=False,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONNOUSERSITE": "1",
                                                                         "PYTHONPATH": str(target)}
    code = ("from transformer.model.checkpoint import SHIPPED; from attention_lens.shell.components import ASSETS;"
            " from transformer import Translator; print(SHIPPED, ASSETS);"
            f" print(Translator.load(device='cpu').translate({SENTENCE!r}))")
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    where, said = r.stdout.strip().splitlines()
    assert where.split() == [str(target / DATA / "checkpoints"), str(target / DATA / "assets")]
    assert said


def test_console_script_runs_from_the_installed_copy(venv, tmp_path):
    script = venv / "bin" / "attention-lens"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONNOUSERSITE": "1"}
    r = subprocess.run([str(script), "--help"], check=False, capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    for flag in ("--host", "--port", "--share", "--auth-file", "--checkpoint", "--device"):
        assert flag in r.stdout


def test_editable_install_gives_a_working_command_on_the_checkouts_files(source, tmp_path_factory, tmp_path):
    prefix = tmp_path_factory.mktemp("editable")
    r = subprocess.run([*PIP, "install", "--no-deps", "--no-build-isolation", "-e", str(source), "--prefix",
                        str(prefix)], check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (packages,) = prefix.glob("lib/python*/site-packages")
    out = run_away(Path(sys.executable), f"""
import site, sys
site.addsitedir({str(packages)!r})  # where pip put the editable install's .pth
from attention_lens.launch import main, parse_args
import attention_lens.shell.memory
from transformer.model.shipped import shipped
print(parse_args(["--port", "7999"]).port, sys.modules["attention_lens.launch"].__file__,
      attention_lens.shell.memory.__file__)
print(shipped("assets"), shipped("checkpoints"))
""", tmp_path)
    port, launch_file, memory_file, assets, checkpoints = out.split()
    assert port == "7999" and Path(launch_file) == source / "attention_lens" / "launch.py"
    assert Path(memory_file) == source / "attention_lens" / "shell" / "memory.py"
    assert (Path(assets), Path(checkpoints)) == (source / "assets", source / "checkpoints")
    assert (prefix / "bin" / "attention-lens").exists()


def test_gradio_is_pinned_to_the_versions_measured_and_installed():
    """The page leans on Gradio 6.31's behaviours (docs/design.md, tests/test_gradio_behaviour*.py): pyproject.toml
    and requirements.txt pin gradio and gradio_client exactly, to the same versions, which are those installed."""
    import tomllib
    from importlib.metadata import version
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = (ROOT / "requirements.txt").read_text().splitlines()
    for name in ("gradio", "gradio_client"):
        pinned = [d.split("#")[0].strip() for d in deps if re.match(rf"{name}\s*[=<>~!]", d)]
        assert pinned == [f"{name}=={version(name)}"], pinned
        assert f"{name}=={version(name)}" in reqs
