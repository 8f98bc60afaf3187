"""`pip install .`: a wheel holding one package, attention_lens (no module named app, ui, transformer or
benchmarks at the top of site-packages, no benchmarks or test helpers), that translates, builds the app and runs
the `attention-lens` command away from the checkout, beside a user's own modules called ui, app and transformer.
And `pip install -e .` (the README's test install) still gives a working command."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("app.py", "setup.py", "pyproject.toml", "README.md", "transformer", "ui", "benchmarks", "tests", "assets",
           "checkpoints")
SENTENCE = "Ein Hund rennt durch den Schnee."
PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]


def load_setup_py():
    spec = importlib.util.spec_from_file_location("attention_lens_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


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
def installed(wheel, tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([*PIP, "install", "--no-deps", "--target", str(target), str(wheel)],
                       check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


@pytest.fixture()
def elsewhere(tmp_path):
    """A directory away from the checkout that holds a user's own modules named like the checkout's top level:
    importing any of them fails loudly."""
    for name in ("ui", "app", "transformer", "benchmarks"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('imported the user\\'s own module {name}')\n")
    return tmp_path


def run_there(paths: list[Path], code: str, cwd: Path) -> str:
    env = dict(os.environ, PYTHONNOUSERSITE="1", PYTHONPATH=os.pathsep.join(map(str, paths)))
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_wheel_holds_one_package_without_benchmarks_or_test_helpers(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"attention_lens", wheel.name.split("-py3")[0] + ".dist-info"}
    files = {n for n in names if n.startswith("attention_lens/")}
    # every module of the library and the app is there, under attention_lens/, the test and bench helpers are not
    want = {f"attention_lens/{p.relative_to(ROOT).as_posix()}" for d in ("transformer", "ui")
            for p in (ROOT / d).rglob("*.py")} | {"attention_lens/app.py", "attention_lens/__init__.py"}
    assert {n for n in files if n.endswith(".py")} == want
    assert not [n for n in names if re.search(r"benchmarks|tests/|conftest|serving|setup\.py", n)]
    for data in ("assets/lens.js", "assets/vendor/plotly-cartesian.min.js", "assets/examples_de.txt",
                 "checkpoints/de-en/model.pt", "checkpoints/de-en/tokenizer.model", "checkpoints/en-de/model.pt",
                 "checkpoints/en-de/head_atlas.json", "assets/examples_en.txt", "assets/vendor/driver.js.iife.js",
                 "assets/vendor/driver.css"):
        assert f"attention_lens/{data}" in files, data
    entry = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-py3')[0]}.dist-info/entry_points.txt").decode()
    assert "attention-lens = attention_lens.app:main" in entry


def test_no_module_in_the_wheel_imports_the_checkouts_top_level_names(wheel):
    z = zipfile.ZipFile(wheel)
    bad = re.compile(r"^\s*(from|import)\s+(transformer|ui|app|benchmarks|tests)\b", re.MULTILINE)
    found = {n: bad.findall(z.read(n).decode()) for n in z.namelist() if n.endswith(".py")}
    assert not {n: f for n, f in found.items() if f}
    assert "from attention_lens.ui.shell import memory" in z.read("attention_lens/app.py").decode()


def test_installed_package_translates_and_builds_the_app_beside_a_users_own_modules(installed, elsewhere):
    from transformer import Translator
    want = Translator.load(device="cpu").translate(SENTENCE)  # the checkout's own answer
    out = run_there([installed], f"""
import sys
import attention_lens.app
print([m for m in ("gradio", "torch", "numpy") if m in sys.modules])  # the allocator is tuned before these load
from attention_lens.transformer import Translator
from attention_lens.transformer.train.data import read_examples
from attention_lens.ui import build_demo
tr = Translator.load(device="cpu")
print(Translator.__module__, sys.modules["attention_lens"].__file__)
print(tr.translate({SENTENCE!r}))
print(len(read_examples()))
build_demo(tr)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("ui", "app", "transformer", "benchmarks")))
""", elsewhere)
    lines = out.strip().splitlines()
    assert lines[0] == "[]"
    module, init = lines[1].split()
    assert module == "attention_lens.transformer.decode.decoding" and init.startswith(str(installed))
    assert lines[2] == want and int(lines[3]) > 0 and lines[4] == "[]"


def test_console_script_has_the_app_flags(installed, elsewhere):
    script = installed / "bin" / "attention-lens"
    assert script.exists()
    env = dict(os.environ, PYTHONPATH=str(installed), PYTHONNOUSERSITE="1")
    r = subprocess.run([sys.executable, str(script), "--help"], check=False, capture_output=True, text=True,
                       cwd=elsewhere, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    for flag in ("--host", "--port", "--share", "--auth-file", "--checkpoint", "--device"):
        assert flag in r.stdout


def test_editable_install_gives_a_working_command(source, tmp_path_factory, tmp_path):
    prefix = tmp_path_factory.mktemp("editable")
    r = subprocess.run([*PIP, "install", "--no-deps", "--no-build-isolation", "-e", str(source), "--prefix",
                        str(prefix)], check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (packages,) = prefix.glob("lib/python*/site-packages")
    out = run_there([], f"""
import site, sys
site.addsitedir({str(packages)!r})  # where pip put the editable install's .pth
from attention_lens.app import main, parse_args
print(parse_args(["--port", "7999"]).port, sys.modules["attention_lens.app"].__file__)
import ui.shell.memory
print(ui.shell.memory.__file__)
""", tmp_path)
    port, app_file, memory_file = out.split()
    assert port == "7999" and Path(app_file) == source / "app.py"
    assert Path(memory_file) == source / "ui" / "shell" / "memory.py"


@pytest.mark.parametrize("before,after", [
    ("from transformer.decode.decoding import Translator\n",
     "from attention_lens.transformer.decode.decoding import Translator\n"),
    ("    from ui import memory\n", "    from attention_lens.ui import memory\n"),
    ("from transformer import analysis, figures\n", "from attention_lens.transformer import analysis, figures\n"),
    ("from app import main\n", "from attention_lens.app import main\n"),
    ("from . import payload as P\nfrom .figures import figure\n", None),
    ("from transformers import AutoModel\nfrom uikit import x\nx = 'from ui import y'\n", None),
])
def test_setup_py_rewrites_the_apps_imports(before, after):
    assert load_setup_py().rewrite_imports(before) == (before if after is None else after)


@pytest.mark.parametrize("line", ["import transformer\n", "import ui.shell.memory\n", "  import app\n"])
def test_setup_py_refuses_an_import_it_cannot_rename(line):
    with pytest.raises(SystemExit, match="write `from"):
        load_setup_py().rewrite_imports(line, "x.py")


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
