"""The build step of `pip install .` (the project's metadata is in pyproject.toml).

A checkout keeps the layout the product needs: app.py, transformer/, ui/, assets/ and checkpoints/ at the top, as
`python app.py` and a Hugging Face Space run it, with the app importing the library as `transformer` and itself
as `ui`. Installed under those names, generic as they are, they would collide with any other module called `app`,
`ui` or `transformer` in site-packages. So the wheel holds one package, `attention_lens`, that mirrors the checkout:

    attention_lens/app.py           app.py; the `attention-lens` command runs attention_lens.app:main
    attention_lens/transformer/     the library: from attention_lens.transformer import Translator
    attention_lens/ui/              the Gradio app
    attention_lens/assets/          the browser views
    attention_lens/checkpoints/     the shipped model

The library imports its own modules relatively (`from .model import ...`), so it moves as it is. The app's
absolute imports, `from transformer...` and `from ui...`, are rewritten to `from attention_lens.transformer...` /
`from attention_lens.ui...` in the copies that go into the wheel; the sources are never changed. Paths the code
finds next to itself (checkpoints/de-en, assets/) are where they are in a checkout. benchmarks/ and tests/ are
not in the wheel. An editable install (`pip install -e .`) serves the checkout's own tests and `python app.py`.
"""
from __future__ import annotations

import re
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PACKAGE = "attention_lens"
RENAMED = ("transformer", "ui", "app")  # the checkout's top-level names, each PACKAGE.<name> in the wheel
LEFT_OUT = {f"{PACKAGE}.setup"}  # this file
INIT = f'''"""attention-lens, installed: the library is {PACKAGE}.transformer (from {PACKAGE}.transformer import
Translator), the Gradio app {PACKAGE}.ui, and the `attention-lens` command runs {PACKAGE}.app:main."""
'''
IMPORT = re.compile(r"^(?P<indent>[ \t]*)(?P<kind>from|import)[ \t]+(?P<name>" + "|".join(RENAMED) + r")\b",
                    re.MULTILINE)


def rewrite_imports(source: str, where: str = "") -> str:
    """`from transformer.x import y` -> `from attention_lens.transformer.x import y` (and for `ui`, `app`).
    A plain `import transformer` would bind another name once rewritten, so it is refused."""
    def one(m: re.Match) -> str:
        if m["kind"] == "import":
            raise SystemExit(f"{where}: write `from {m['name']} import ...`, not `import {m['name']}...` "
                             f"(setup.py renames {m['name']} to {PACKAGE}.{m['name']} in the wheel)")
        return f"{m['indent']}from {PACKAGE}.{m['name']}"
    return IMPORT.sub(one, source)


class BuildPy(build_py):
    """build_py that leaves LEFT_OUT out, rewrites the app's imports in the copies and writes PACKAGE/__init__.py
    (the package's directory is the checkout's root, which has no __init__.py)."""

    def check_package(self, package, package_dir):
        return None if package == PACKAGE else super().check_package(package, package_dir)

    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir) if f"{m[0]}.{m[1]}" not in LEFT_OUT]

    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        path = Path(outfile)
        text = path.read_text(encoding="utf-8")
        new = rewrite_imports(text, str(module_file))
        if new != text:
            path.write_text(new, encoding="utf-8")
        return outfile, copied

    def run(self):
        super().run()
        if not self.editable_mode:
            init = Path(self.build_lib) / PACKAGE / "__init__.py"
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text(INIT, encoding="utf-8")

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        init = str(Path(self.build_lib) / PACKAGE / "__init__.py")
        return outputs if self.editable_mode or init in outputs else [*outputs, init]


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPy})
