"""The developers' guide's code shape: no function of the app, the library or the benchmarks is over 80 lines
(docstring and comments included: what a reader has to hold at once); no import circles; no long files; a view's
script made of several files keeps each file in a scope of its own."""
import ast
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

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
    files = [ROOT / "app.py", *sorted((ROOT / "attention_lens").rglob("*.py")),
             *sorted((ROOT / "transformer").rglob("*.py")),
             *sorted((ROOT / "benchmarks").rglob("*.py"))]
    assert len(files) > 20
    found = {f"{f.relative_to(ROOT)}:{name}": n for f in files for name, n in long_functions(f.read_text("utf-8"))}
    assert not found, f"functions over {LIMIT} lines (split them): {found}"


# -- no import circles: the import graph of transformer/ and attention_lens/ (every import statement, those inside
# functions too: a function-level import only delays a circle to the first call) has no cycle

PACKAGES = ("transformer", "attention_lens")
# circles tolerated for now, each a pair of modules (the test fails once one is gone: then drop it from here)
KNOWN_CIRCLES: set[frozenset[str]] = set()


def module_files(packages=PACKAGES) -> dict[str, Path]:
    """{dotted module name: file} of every module of the packages and their subpackages (a package's __init__.py is
    the package)."""
    out = {}
    for package in packages:
        for f in sorted((ROOT / package).rglob("*.py")):
            parts = f.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if f.stem == "__init__" else parts)] = f
    return out


def imports_of(name: str, source: str, modules, is_package: bool | None = None) -> set[str]:
    """The modules of `modules` that the module `name` imports, anywhere in `source` (not under TYPE_CHECKING);
    `is_package`: `name` is a package (its __init__.py; default: one of PACKAGES)."""
    package = name if (name in PACKAGES if is_package is None else is_package) else name.rsplit(".", 1)[0]
    tree = ast.parse(source)
    skipped = {id(n) for node in ast.walk(tree)
               if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for stmt in node.body for n in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports_of(name, f.read_text("utf-8"), files, f.stem == "__init__") for name, f in files.items()}


def find_cycle(graph: dict[str, set[str]], known=frozenset()) -> list[str] | None:
    """One import circle [a, b, ..., a] of the graph, leaving out the edges between the pairs of `known`; None."""
    edges = {a: {b for b in bs if frozenset({a, b}) not in known} for a, bs in graph.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(a):
        state[a] = 1
        path.append(a)
        for b in sorted(edges.get(a, ())):
            if state.get(b) == 1:
                return path[path.index(b):] + [b]
            if b not in state and (cycle := visit(b)):
                return cycle
        state[a] = 2
        path.pop()
        return None

    for a in sorted(edges):
        if a not in state and (cycle := visit(a)):
            return cycle
    return None


def test_the_import_graph_sees_every_kind_of_import():
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "other"}
    source = ("from . import a as A\nfrom .b import thing\nimport other\nfrom pkg import c, Name\n"
              "def f():\n    from .d import late\nif TYPE_CHECKING:\n    from . import e\n")
    assert imports_of("pkg.x", source, modules) == {"pkg.a", "pkg.b", "other", "pkg.c", "pkg", "pkg.d"}
    sub = {"pkg", "pkg.sub", "pkg.sub.a", "pkg.low", "pkg.low.b"}  # a subpackage's module, and its __init__
    assert imports_of("pkg.sub.x", "from .a import y\nfrom ..low import b\nfrom ..low.b import z\n", sub) == \
        {"pkg.sub.a", "pkg.low.b"}
    assert imports_of("pkg.sub", "from .a import y\nfrom .. import low\n", sub,
                      is_package=True) == {"pkg.sub.a", "pkg.low"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle(graph, {frozenset({"b", "c"})}) is None and find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circles():
    files = module_files()
    graph = import_graph(files)
    assert len(graph) > 30
    # one of them imported inside a function
    assert {"transformer.train.average", "transformer.train.atlas"} <= graph["transformer.train.train"]
    for pair in KNOWN_CIRCLES:  # still a circle: when it goes, so does its exception
        a, b = sorted(pair)
        assert b in graph[a] and a in graph[b], f"{a} <-> {b} is no circle any more: drop it from KNOWN_CIRCLES"
    cycle = find_cycle(graph, KNOWN_CIRCLES)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


# -- a view's script made of several files of assets/ (attention_lens/shell/components.py script): the main file is the
# js_on_load; each part is compiled on its own (new Function("view", body), strict), so it sees no name of another
# file: what it uses of the view and of the parts before it, it takes from `view`; what it gives, it returns.

def scripts() -> dict:
    """{view: (main file, part files)} of every view whose script has parts."""
    from attention_lens.shell.components import LENS_PARTS
    from attention_lens.shell.lesson import LESSON_PARTS
    from attention_lens.shell.texts import TEXTS_PARTS
    from attention_lens.translate.inside_panel import INSIDE_PARTS
    return {"lens": ("shell/lens.js", LENS_PARTS), "inside": ("translate/inside.js", INSIDE_PARTS),
            "lesson": ("shell/lesson.js", LESSON_PARTS), "texts": ("shell/explain.js", TEXTS_PARTS)}


def top_level_names(js: str) -> list[str]:
    """The names a script declares at the start of a line: its top level, as assets/*.js are written."""
    return re.findall(r"^(?:async\s+)?(?:function\*?|const|let|var|class)\s+([A-Za-z_$][\w$]*)", js, re.MULTILINE)


def code_of(js: str) -> str:
    """`js` without its comments and its strings (of a template literal, only its ${...}: code)."""
    js = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', '""', js)
    js = re.sub(r"`(?:[^`\\]|\\.)*`", lambda m: " ".join(re.findall(r"\$\{([^}]*)\}", m.group(0))), js)
    return re.sub(r"//[^\n]*", "", js)


def declared(js: str) -> set[str]:
    """Every name `js` declares anywhere: const/let/var/function/class, destructured, or a parameter."""
    code = code_of(js)
    out = set(re.findall(r"(?:function\*?|const|let|var|class)\s+([A-Za-z_$][\w$]*)", code))
    lists = re.findall(r"(?:const|let|var)\s*[{\[]([^}\]]*)[}\]]\s*=", code)
    lists += re.findall(r"function\*?\s*[\w$]*\s*\(([^)]*)\)", code) + re.findall(r"\(([^()]*)\)\s*=>", code)
    out |= set(re.findall(r"([A-Za-z_$][\w$]*)\s*=>", code))
    for names in lists:
        out |= set(re.findall(r"(?<![\w$.:])([A-Za-z_$][\w$]*)", re.sub(r"=[^,]*", "", names)))
    return out


def borrowed(part: str, others: list[str]) -> list[str]:
    """The names declared at the top level of `others` (the script's other files) that `part` uses but does not
    declare itself: in a scope of its own, each is an error when that line runs (or a page global it reads)."""
    code, own = code_of(part), declared(part) | {"view"}  # its parameter
    names = {n for o in others for n in top_level_names(o)} - own
    return sorted(n for n in names if re.search(rf"(?<![\w$.])\$?{re.escape(n)}(?![\w$])(?!\s*:(?!:))", code))


def test_the_check_sees_a_part_using_a_name_of_another_file():
    main = "const st = {t: 0};\nfunction draw() {}\nconst q = (r) => r;\n"
    assert borrowed("const {st} = view;\nfunction go(t) { st.t = t; draw(); }\nreturn {go};\n", [main]) == ["draw"]
    assert borrowed("function go(draw) { return {st: 1, q: draw}; }  // st, q\nreturn {go};\n", [main]) == []
    assert borrowed("const s = `q: [role=st] ${draw}`;\n", [main]) == ["draw"]  # a template's text is no code


@pytest.mark.parametrize("view", ["lens", "inside", "lesson", "texts"])
def test_each_part_takes_what_it_uses_from_view_and_compiles_alone(view):
    main, parts = scripts()[view]
    text = {n: (ROOT / "assets" / n).read_text("utf-8") for n in (main, *parts)}
    for p in parts:
        assert borrowed(text[p], [t for n, t in text.items() if n != p]) == [], p
    if shutil.which("node") is None:
        pytest.skip("no node to compile the script with")
    from attention_lens.shell.components import script
    check = ('const code = require("fs").readFileSync(0, "utf8");  // as Gradio runs a js_on_load\n'
             'new Function("element", "trigger", "props", "server", "upload", "watch", code);\n'
             'for (const [, body] of code.matchAll(/new Function\\("view", ("(?:[^"\\\\]|\\\\.)*")\\)/g))\n'
             '  if (!new Function("view", JSON.parse(body)) || !JSON.parse(body).startsWith(\'"use strict";\'))\n'
             '    process.exit(4);  // each part compiles as the script compiles it, in strict mode\n'
             f'if ({len(parts)} !== [...code.matchAll(/new Function\\("view", /g)].length) process.exit(3);')
    r = subprocess.run(["node", "-e", check], input=script(main, *parts), check=False, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]


def gives(js: str) -> list[str]:
    """What a part returns: the names of its last line's `return {a, b};`."""
    m = re.search(r"^return \{([^}]*)\};\s*$", js, re.MULTILINE)
    return re.findall(r"[\w$]+", m.group(1)) if m else []


def test_the_lens_parts_give_distinct_names_to_the_view():
    """assets/shell/lens.js puts what each part returns into `view` (Object.assign): a name given twice would replace
    the first part's (what one concatenated scope did with a second function of the same name)."""
    from attention_lens.shell.components import LENS_PARTS
    lens = (ROOT / "assets" / "shell" / "lens.js").read_text("utf-8")
    own = re.findall(r"[\w$]+", re.search(r"^const view = \{([^}]*)\};", lens, re.MULTILINE).group(1))
    given = own + [n for p in LENS_PARTS if p != "shell/payload.js"
                   for n in gives((ROOT / "assets" / p).read_text("utf-8"))]
    assert len(given) > 30 and not [n for n, c in Counter(given).items() if c > 1], Counter(given).most_common(3)


def page_globals_written(js: str) -> set[str]:
    return set(re.findall(r"window\.([\w$]+)\s*(?:\[[^\]]*\]\s*)?=(?!=)", code_of(js)))


# No script of the page keeps anything in a page global (issue 57 item 3, docs/design.md "Where a script keeps
# what it keeps"): a view keeps its instance on its own element (document.getElementById("inside").inside), a value
# of the page on the element it belongs to. Two page globals remain, each with one writer:
PAGE_GLOBALS = {
    # the tests' and benchmarks' handle on the Translate view (= document.getElementById("attention").lens), written
    # by assets/shell/lens.js only and read by no script of the page
    "__lens": {"lens.js"},
    # the bundle's entry (attention_lens/shell/first_load.py): Gradio compiles a js_on_load with new Function(...),
    # which sees
    # no name but the page's globals, so the one-line js_on_load of each view reaches the functions the bundle's
    # <script> loaded (and queues its call while that has not loaded yet) only through a page global; the
    # first-load flags (the gates opened) are part of it
    "__attentionLens": {"first_load.py"},
}


def page_globals_used(path: Path) -> set[str]:
    """The page globals (window.__*, globalThis.__*, self.__*, window["__*"]) a script of assets/ or a file of
    attention_lens/ (its js= and js_on_load strings, its comments too) reads or writes."""
    text = path.read_text("utf-8")
    code = code_of(text) if path.suffix == ".js" else text  # (a string is no code: a name in brackets is a string)
    return set(re.findall(r"(?:window|globalThis|self)\s*\.\s*(__[\w$]+)", code)
               + re.findall(r"(?:window|globalThis|self)\s*\[\s*[\"'`](__[\w$]+)", text))


def view_scripts() -> list[Path]:
    """The views' scripts: assets/<view>/*.js (assets/vendor/ holds libraries, not ours)."""
    return sorted(p for p in (ROOT / "assets").glob("*/*.js") if p.parent.name != "vendor")


def page_scripts() -> list[Path]:
    return [*view_scripts(), *sorted((ROOT / "attention_lens").rglob("*.py"))]


def test_the_check_sees_every_way_of_naming_a_page_global(tmp_path):
    f = tmp_path / "x.js"
    f.write_text('window.__a = 1; const b = window["__b"]; globalThis.__c(); self . __d;\n'
                 '// window.__e in a comment, "window.__f" in a string: not code\n', "utf-8")
    assert page_globals_used(f) == {"__a", "__b", "__c", "__d"}
    g = tmp_path / "x.py"
    g.write_text('JS = "(v) => { window.__picked = v; }"  # window.__said\n', "utf-8")
    assert page_globals_used(g) == {"__picked", "__said"}


def test_no_script_of_the_page_uses_a_page_global_beyond_the_two_named():
    found = {}
    for f in page_scripts():
        for name in page_globals_used(f):
            if f.name not in PAGE_GLOBALS.get(name, ()):
                found.setdefault(name, []).append(str(f.relative_to(ROOT)))
    assert not found, f"page globals used (keep it on its element instead, docs/design.md): {found}"
    # the tests' handle, read by no script: lens.js is its one writer, which reads it nowhere else
    lens = code_of((ROOT / "assets" / "shell" / "lens.js").read_text("utf-8"))
    assert re.findall(r"window\.__lens\b(?!\s*=[^=])", lens) == [] and page_globals_written(lens) == {"__lens"}


def test_a_part_writes_no_page_global():
    """A part gives what it gives by returning it."""
    for main, parts in scripts().values():
        for p in parts:
            assert page_globals_written((ROOT / "assets" / p).read_text("utf-8")) == set(), p


def test_no_test_module_imports_another():
    """Shared fixtures live in tests/conftest.py and shared helpers in modules that hold no tests (tests/browser.py,
    tests/helpers.py, tests/device_audit.py, tests/emulated_device.py): importing a test module would also collect
    its tests and fixtures into the importer."""
    found = {}
    for f in sorted((ROOT / "tests").glob("test_*.py")):
        names = imports_of(f"tests.{f.stem}", f.read_text("utf-8"),
                           {f"tests.{g.stem}" for g in (ROOT / "tests").glob("test_*.py")})
        if names:
            found[f.name] = sorted(names)
    assert not found, f"test modules importing test modules: {found}"


# -- how a view finds another, and its own element (docs/design.md "Where a script keeps what it keeps"): the bundle
# (attention_lens/shell/first_load.py) gives every view's js_on_load `find(id, name)` and `home`, and a view with parts
# hands
# both to them in `view`; no file of assets/ writes its own lookup of another view's instance, nor of its own element.

LOOKUP = re.compile(r"document\s*\.\s*getElementById\([^()]*\)\s*\?\.\s*(?:\[|(?!dataset\b)[A-Za-z_$])")  # #id's .name
HOME = re.compile(r"\.closest\(\s*['\"]\[id\]")  # the element with an id of its own, by hand


def own_lookups(js: str) -> list[str]:
    """The lines of `js` (its code) that look another view's instance up, or this view's own element, by hand."""
    code = code_of(js.replace("'[id]:not([id^=\"html-\"])'", "HOME_SELECTOR"))  # the selector is a string: keep a mark
    return [line.strip() for line in code.splitlines() if LOOKUP.search(line) or "HOME_SELECTOR" in line]


def test_the_check_sees_a_view_writing_its_own_lookup():
    assert own_lookups('const explainer = () => document.getElementById("explain_box")?.explain;  // texts\n')
    assert own_lookups('const I = MAIN && document.getElementById("inside")?.inside, r = 1;\n')
    assert own_lookups('get: () => document.getElementById(tab)?.[tab]?.linkView});\n')
    assert own_lookups("(element.closest('[id]:not([id^=\"html-\"])') || element).lesson = lesson;\n")
    assert not own_lookups('const m = document.getElementById("model")?.dataset;  // the picker\'s data-*\n'
                           'const e = find("explain_box", "explain"); home.lesson = lesson;\n'
                           '// document.getElementById("explain_box")?.explain, in a comment\n')


def test_no_view_writes_its_own_lookup():
    found = {f.name: own_lookups(f.read_text("utf-8")) for f in view_scripts()}
    found = {n: lines for n, lines in found.items() if lines}
    assert not found, f"use the find(id, name) and home each view is given (attention_lens/shell/first_load.py): " \
                      f"{found}"
