"""The page's handlers answer by name ({component: value}, Gradio's own way): an event of the page with more than one
output never answers with a list or tuple whose order must match its outputs' (a wrong slot there is silent). The
check reads each handler's code: every value it returns or yields is a dict display, a dict union, dict(...),
gr.skip(), or a call of a function of attention_lens/ whose own answers are such (followed by name). The API's
endpoints for programs (api_visibility "public") answer their clients' positional outputs, as Gradio's API does."""
import ast
import inspect
import textwrap

import gradio as gr

from attention_lens import build_demo
from attention_lens.shell.page_state import written

DICT_CALLS = {dict, gr.skip}  # dict(...) of no zip, gr.skip(): nothing changes


def answers(fn: ast.AST) -> list[ast.expr]:
    """What FN returns or yields (a lambda: its body), not counting its nested functions'."""
    if isinstance(fn, ast.Lambda):
        return [fn.body]
    out, todo = [], list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return | ast.Yield) and node.value is not None:
            out.append(node.value)
        todo.extend(ast.iter_child_nodes(node))
    return out


def assigned(fn: ast.AST, name: str) -> list[ast.expr]:
    return [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]


def names_of(f) -> dict:
    """What the names in F's code are when it runs: its globals, closure, builtins and parameters' defaults."""
    seen = inspect.getclosurevars(f)
    defaults = {p.name: p.default for p in inspect.signature(f).parameters.values() if p.default is not p.empty}
    return {**seen.builtins, **seen.globals, **seen.nonlocals, **defaults}


def resolved(expr: ast.expr, names: dict):
    """The object EXPR (a name or a dotted name) stands for in F's namespace (None: unknown)."""
    if isinstance(expr, ast.Name):
        return names.get(expr.id)
    if isinstance(expr, ast.Attribute):
        return getattr(resolved(expr.value, names), expr.attr, None)
    return None


def by_name(expr: ast.expr, node: ast.AST, names: dict, seen: set) -> bool:
    """Whether EXPR, an answer of the function NODE (its names: `names`), is a {component: value} answer."""
    if isinstance(expr, ast.Dict | ast.DictComp):
        return True
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
        return by_name(expr.left, node, names, seen) and by_name(expr.right, node, names, seen)
    if isinstance(expr, ast.IfExp):
        return by_name(expr.body, node, names, seen) and by_name(expr.orelse, node, names, seen)
    if isinstance(expr, ast.Name):
        values = assigned(node, expr.id)
        return bool(values) and all(by_name(v, node, names, seen) for v in values)
    if isinstance(expr, ast.Call):
        called = resolved(expr.func, names)
        if called in DICT_CALLS:  # dict(zip(outputs, values)) is a list's order again
            return not any(isinstance(a, ast.Call) and getattr(a.func, "id", "") == "zip" for a in expr.args)
        if inspect.isfunction(called) and called.__module__.startswith("attention_lens"):
            return called in seen or positional(called, seen) == []
    return False


def positional(fn, seen: frozenset = frozenset()) -> list[str]:
    """The answers of the function FN that are not by name, as source text."""
    source = textwrap.dedent(inspect.getsource(fn)).strip()
    if fn.__name__ == "<lambda>":
        source = source[source.index("lambda"):].rstrip(")")  # the lambda alone, out of the call it is written in
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))
    names = names_of(fn)
    return [ast.unparse(a) for a in answers(node) if not by_name(a, node, names, seen | {fn})]


def page_events(demo):
    """(event function, its outputs' count) of every event of the page itself (not an endpoint for programs)."""
    for dep in demo.fns.values():
        if dep.fn is not None and dep.api_visibility != "public" and len(dep.outputs) > 1:
            yield inspect.unwrap(dep.fn), len(dep.outputs)


def test_the_check_sees_a_positional_answer():
    def good(a):
        return {1: a} if a else dict(sorted({2: a}.items())) | written(a)  # page_state.written: a dict of its own

    def bad(a):
        if a:
            return {1: a}
        return a, a

    def hidden(a):
        out = [a, a]
        return out

    def zipped(a):
        return dict(zip("ab", a, strict=True))

    assert positional(good) == []
    assert positional(bad) == ["(a, a)"]
    assert positional(hidden) == ["out"]
    assert positional(zipped) == ["dict(zip('ab', a, strict=True))"]


def test_every_event_of_the_page_with_several_outputs_answers_by_name(tiny_translator):
    events = list(page_events(build_demo(tiny_translator)))
    assert len(events) > 20  # the page's events: Start, the examples, a link, each tab's own
    found = {f"{f.__code__.co_filename.split('attention_lens/')[-1]}:{f.__code__.co_firstlineno} "
             f"{f.__qualname__}": p for f, _ in events if (p := positional(f))}
    assert not found, "\n".join(f"{where}: {p}" for where, p in found.items())
