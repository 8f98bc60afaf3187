"""The library's layers, as import-linter contracts (pyproject.toml, [tool.importlinter]): transformer imports neither
gradio nor ui; its subpackages in the order model <- interpret <- decode (a module imports its own subpackage and
those below it, never one above); only transformer.hf imports transformers; training apart (model, interpret and
decode never import transformer.train).
import-linter reads every import statement, those inside functions too."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def lint(root: Path) -> subprocess.CompletedProcess:
    import importlinter  # noqa: F401  (the test extras install it; missing, the run below could not say why)
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, check=False, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def test_the_library_keeps_its_layers():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("KEPT") == 4


@pytest.mark.parametrize("module, line, broken", [
    ("model/tokenizer.py", "from ..decode import step", "model <- interpret <- decode"),
    ("interpret/capture.py", "from ..decode import session", "model <- interpret <- decode"),
    ("decode/beam.py", "from ..train import data", "training apart"),
    ("interpret/figures.py", "import gradio", "transformer imports neither gradio nor attention_lens"),
    ("decode/trajectory.py", "    from attention_lens import payload",
     "transformer imports neither gradio nor attention_lens"),
    ("model/model.py", "    from transformers import MarianMTModel", "only transformer.hf imports transformers"),
])
def test_a_broken_layer_is_seen(tmp_path, module, line, broken):
    """An import against a contract, at the top of a module or inside a function, fails the lint."""
    shutil.copytree(ROOT / "transformer", tmp_path / "transformer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    f = tmp_path / "transformer" / module
    f.write_text(f.read_text() + ("\n\ndef late():\n" if line.startswith(" ") else "\n") + line + "\n")
    out = lint(tmp_path)
    assert out.returncode == 1 and f"{broken} BROKEN" in out.stdout, out.stdout + out.stderr
