"""assets/ is laid out by view, as attention_lens/ is (docs/design.md, "Where things are in attention_lens/"):
assets/<view>/ holds the scripts, styles and templates that attention_lens/<view>/ loads, assets/shell/ those of the
whole page (and of attention_lens/app.py), assets/vendor/ the vendored libraries. Every file there is loaded by
the code, every name the code loads is there, and a view's code loads only its own folder's files or the shell's;
the wheel's data-files list every folder (the wheel itself: tests/test_packaging.py)."""
import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEW_FILE = re.compile(r"^([a-z_]+)/[\w.-]+\.(?:js|css|html)$")  # "translate/inside.js": how the code names one
EXAMPLES = re.compile(r"^examples_([a-z]{2})\.txt$")  # the library's example sentences (transformer/train/data.py)
VENDOR_DOCS = re.compile(r"^(?:LICENSE\.[\w-]+\.txt|README\.md)$")  # the vendored libraries' licences and origin


def views(root: Path) -> set[str]:
    """The app's views: the packages of attention_lens/ (its tabs, live/, shell/)."""
    return {p.name for p in (root / "attention_lens").iterdir() if (p / "__init__.py").is_file()}


def owner(py: Path, root: Path) -> str:
    """The view a file of attention_lens/ belongs to: its package's folder; the package's own top (app.py,
    launch.py) is the shell's."""
    parts = py.relative_to(root / "attention_lens").parts
    return parts[0] if len(parts) > 1 else "shell"


def loaded(root: Path) -> dict[str, set[str]]:
    """{name under assets/: the views whose code names it}: every string of attention_lens/'s code (a literal,
    or a literal piece of an f-string) that names a view's file ("translate/inside.js")."""
    out: dict[str, set[str]] = {}
    for py in sorted((root / "attention_lens").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and VIEW_FILE.match(node.value):
                out.setdefault(node.value, set()).add(owner(py, root))
    return out


def sources(root: Path) -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted((root / "attention_lens").rglob("*.py")))


def layout_problems(root: Path) -> list[str]:
    """What of ROOT/assets/ is not by view: a loose file, a folder no view owns, a file nothing loads, a name the
    code loads that is not there, a view loading another view's file, a vendored library the code never loads."""
    assets, known, names = root / "assets", views(root), loaded(root)
    models = {p.name.split("-")[0] for p in (root / "checkpoints").iterdir() if p.is_dir()}  # de-en: reads de
    problems = []
    for f in sorted(p for p in assets.rglob("*") if p.is_file()):
        rel = f.relative_to(assets).as_posix()
        top = rel.split("/")[0]
        if "/" not in rel:
            m = EXAMPLES.match(rel)
            if not m:
                problems.append(f"{rel}: a loose file at assets/'s top (put it in the folder of the view that owns it)")
            elif m.group(1) not in models:
                problems.append(f"{rel}: no shipped model's source language (checkpoints/)")
        elif top == "vendor":
            if rel.count("/") != 1:
                problems.append(f"{rel}: vendor/ holds files, no folders")
            elif not VENDOR_DOCS.match(f.name) and f.name not in sources(root):
                problems.append(f"{rel}: a vendored file no code of attention_lens/ loads")
        elif top not in known:
            problems.append(f"{rel}: assets/{top}/ is no view of attention_lens/ ({', '.join(sorted(known))})")
        elif rel.count("/") != 1:
            problems.append(f"{rel}: a view's folder holds files, no folders")
        elif rel not in names:
            problems.append(f"{rel}: loaded by no code of attention_lens/")
    for name, by in sorted(names.items()):
        if not (assets / name).is_file():
            problems.append(f"{name}: loaded by {', '.join(sorted(by))} but not in assets/")
        if name.split("/")[0] != "shell" and by - {name.split("/")[0]}:
            problems.append(f"{name}: loaded by {', '.join(sorted(by - {name.split('/')[0]}))}, another view "
                            f"(a file two views load belongs to shell/)")
    return problems


def fake_checkout(tmp: Path) -> Path:
    """A checkout of two views (translate, shell), each loading its one file, and a model reading German."""
    for view, code in (("translate", 'JS = asset("translate/topk.js")\n'),
                       ("shell", 'CSS = asset("shell/lens.css")\nLIB = VENDOR / "plotly.min.js"\n')):
        (tmp / "attention_lens" / view).mkdir(parents=True)
        (tmp / "attention_lens" / view / "__init__.py").write_text("", "utf-8")
        (tmp / "attention_lens" / view / "tab.py").write_text(code, "utf-8")
        (tmp / "assets" / view).mkdir(parents=True)
    (tmp / "attention_lens" / "__init__.py").write_text("", "utf-8")
    (tmp / "assets" / "vendor").mkdir()
    (tmp / "checkpoints" / "de-en").mkdir(parents=True)
    for rel in ("translate/topk.js", "shell/lens.css", "vendor/plotly.min.js", "vendor/LICENSE.plotly.txt",
                "examples_de.txt"):
        (tmp / "assets" / rel).write_text("x", "utf-8")
    return tmp


def test_the_check_sees_each_way_of_leaving_the_layout(tmp_path):
    root = fake_checkout(tmp_path)
    assert layout_problems(root) == []
    (root / "assets" / "stray.js").write_text("x", "utf-8")  # a loose file
    (root / "assets" / "beam").mkdir()
    (root / "assets" / "beam" / "beam.js").write_text("x", "utf-8")  # a folder no view owns
    (root / "assets" / "translate" / "old.js").write_text("x", "utf-8")  # loaded by nothing
    (root / "assets" / "vendor" / "jquery.js").write_text("x", "utf-8")  # a library nothing loads
    (root / "assets" / "examples_fr.txt").write_text("x", "utf-8")  # no model reads French
    (root / "attention_lens" / "shell" / "link.py").write_text('A = asset("shell/gone.js")\n'  # not there
                                                              'B = asset("translate/topk.js")\n', "utf-8")  # not its
    said = "\n".join(layout_problems(root))
    for what in ("stray.js: a loose file", "beam/beam.js: assets/beam/ is no view", "translate/old.js: loaded by no",
                 "vendor/jquery.js: a vendored file no code", "examples_fr.txt: no shipped model",
                 "shell/gone.js: loaded by shell but not in assets/", "translate/topk.js: loaded by shell, another"):
        assert what in said, said
    assert len(layout_problems(root)) == 7


def test_assets_are_by_view_each_loaded_and_each_there():
    problems = layout_problems(ROOT)
    assert problems == [], "\n".join(problems)


def test_the_wheel_lists_every_folder_of_assets():
    """pyproject.toml's data-files: one entry per folder (an entry flattens what its patterns match); a file its
    folder's patterns miss would be missing from an installed app."""
    files = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["data-files"]
    listed = {p for patterns in files.values() for pattern in patterns for p in ROOT.glob(pattern)}
    for dest, patterns in files.items():
        assert {Path(p).parent.as_posix() for p in patterns} == {dest.removeprefix("share/attention-lens/")}, dest
    assert [f.relative_to(ROOT).as_posix() for f in sorted((ROOT / "assets").rglob("*"))
            if f.is_file() and f not in listed] == []
