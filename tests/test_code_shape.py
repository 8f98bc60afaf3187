"""The developers' guide's "short functions": no function of the app, the library or the benchmarks is over
80 lines (docstring and comments included: what a reader has to hold at once)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 80


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(name, lines) of every function or method in `source` longer than `limit` lines."""
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit]


def test_the_check_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 1))
    assert long_functions(f"def short():\n{body}\n") == []  # exactly LIMIT lines
    assert long_functions(f"class A:\n    def long(self):\n{body}\n        y = 1\n    z = 2\n".replace(
        "\n    x", "\n        x")) == [("long", LIMIT + 1)]


def test_no_function_is_over_80_lines():
    files = [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "transformer").glob("*.py")),
             *sorted((ROOT / "benchmarks").glob("*.py"))]
    assert len(files) > 20
    found = {f"{f.relative_to(ROOT)}:{name}": n for f in files for name, n in long_functions(f.read_text("utf-8"))}
    assert not found, f"functions over {LIMIT} lines (split them): {found}"
