"""The one place every request's values are checked, before any handler runs: by the kind of component (or the
type an API function names) that takes each value, by type and range, with an answer in the page's language.

What a browser or a program sends reaches Gradio's own preprocessing as JSON values. Gradio 6.31 answers a value its
component cannot read (a slider's "8", None, [1], {}) with its generic "The upstream Gradio app has raised an
exception", the reason only in the server's log (Blocks.preprocess_data: ComponentProcessingError), and it sends a
text with a lone surrogate ("\\ud800", which JSON can carry but UTF-8 cannot) back into an answer, which then cuts the
caller's stream ("str is not valid UTF-8"). `guard(demo)` puts `checked_inputs` in front of the demo's
preprocess_data, once for every event of the page and every endpoint (tests/test_gradio_behaviour.py names Gradio's
behaviour; tests/test_requests.py the answers):
- every text anywhere in a value: lone surrogates replaced by U+FFFD (the replacement character "�"), as a browser's
  TextEncoder does; a text longer than TEXT_MAX characters refused;
- Slider, Number: a finite number (not a bool, not a text) in the component's range, whole where its step is;
- Checkbox: true or false; Textbox: a text; Dropdown and CheckboxGroup: the choices the user's page holds;
- HTML: the view's position, the page's one HTML input (attention_lens/translate/tab.py lens_bus): None, "", or
  {"step": t, "ids": [t + 1 ids], "forced": [0/1 ...]} (a dict or its JSON), read here into a dict; whether the
  ids fit the model (its vocabulary, its length limit) is the handler's (attention_lens/translate/handlers.py
  at_position);
- an API function's values (gr.api): by the type its parameter names (str, int, int | None, bool), else only the
  texts are cleaned.
A session's own state (gr.State) never comes from the request and is not checked here.
"""
from __future__ import annotations

import inspect
import json
import math
import re
import typing

import gradio as gr

TEXT_MAX = 200_000  # characters of one text value (the translator cuts inputs at 3,200; a box holds a pasted page)
POSITION_MAX = 20_000  # characters of a position's JSON: 1,024 ids of up to 5 digits with their 0/1 marks
POSITION_IDS = 1024  # ids in a position (a model's max_len is at most this)
DEPTH_MAX = 8  # nesting of lists and dicts in one value (a position is 2 deep)
SURROGATE = re.compile("[\ud800-\udfff]")


def refuse(key: str, what: str = "", got=None, **fill):
    """gr.Error with the [said] text `key` in the page's language; `got`: what the request sent, shown short."""
    from attention_lens.shell.texts import said
    raise gr.Error(said(key, what=what, got=clean(repr(got))[:40], **fill), print_exception=False)


def clean(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a pair of them is one character in Python already)."""
    return SURROGATE.sub("\ufffd", text) if SURROGATE.search(text) else text


def cleaned(value, what: str, depth: int = 0):
    """`value` with every text in it cleaned; refused when a text is longer than TEXT_MAX or nesting deeper than
    DEPTH_MAX."""
    if isinstance(value, str):
        if len(value) > TEXT_MAX:
            refuse("err_request_long", what, n=TEXT_MAX)
        return clean(value)
    if isinstance(value, (list, dict)):
        if depth >= DEPTH_MAX:
            refuse("err_request_deep", what)
        if isinstance(value, list):
            return [cleaned(v, what, depth + 1) for v in value]
        return {cleaned(k, what, depth + 1) if isinstance(k, str) else k: cleaned(v, what, depth + 1)
                for k, v in value.items()}
    return value


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def number(x, what: str, lo=None, hi=None, whole: bool = False, none: bool = False):
    """A finite number in [lo, hi] (either may be None), a whole one where `whole`; None where `none`."""
    if x is None and none:
        return None
    if not is_number(x) or (lo is not None and x < lo) or (hi is not None and x > hi) or (whole and x != int(x)):
        if lo is not None and hi is not None:
            refuse("err_request_whole" if whole else "err_request_number", what, x, lo=shown_number(lo),
                   hi=shown_number(hi))
        refuse("err_request_whole_any" if whole else "err_request_number_any", what, x)
    return x


def shown_number(x) -> str:
    from attention_lens.shell.texts import number as written
    return str(int(x)) if float(x).is_integer() else written(x, None)


def choices(block) -> list:
    return [v for _, v in getattr(block, "choices", None) or []]


def position(value, what: str):
    """The view's position as a dict (or None / "" for the session's own cursor): its shape checked; see the
    module's docstring."""
    if value is None or value == "":
        return value
    if isinstance(value, str):
        if len(value) > POSITION_MAX:
            refuse("err_request_position", what)
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # "[" * 10,000: nested deeper than the parser's recursion
            refuse("err_request_position", what)
        value = cleaned(value, what)
    if not isinstance(value, dict):
        refuse("err_request_position", what)
    ids, forced, step = value.get("ids"), value.get("forced"), value.get("step")
    if not (isinstance(ids, list) and 1 <= len(ids) <= POSITION_IDS
            and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
        refuse("err_request_position", what)
    if forced is not None and not (isinstance(forced, list) and len(forced) == len(ids)
                                   and all(f in (0, 1) for f in forced)):
        refuse("err_request_position", what)
    if step is not None and step != len(ids) - 1:
        refuse("err_request_position", what)
    return value


def checked_value(block, value, what: str):
    """One value of a request, checked for the component `block` (the user's own copy of it) that takes it."""
    value = cleaned(value, what)
    if isinstance(block, gr.Slider):
        step = block.step if block.step is not None else 1
        whole = float(step).is_integer() and float(block.minimum).is_integer()
        return number(value, what, block.minimum, block.maximum, whole=whole)
    if isinstance(block, gr.Number):
        return number(value, what, block.minimum, block.maximum, none=True)
    if isinstance(block, gr.Checkbox):
        if not isinstance(value, bool):
            refuse("err_request_yes_no", what, value)
    elif isinstance(block, gr.Textbox):
        if value is not None and not isinstance(value, str):
            refuse("err_request_text", what, value)
    elif isinstance(block, gr.CheckboxGroup):
        allowed = choices(block)
        if value is None:
            return []
        if not isinstance(value, list) or any(v not in allowed for v in value):
            refuse("err_request_choices", what, value)
    elif isinstance(block, gr.Dropdown):
        allowed = choices(block)
        listed = value if block.multiselect and isinstance(value, list) else [value]
        if value is not None and not block.allow_custom_value and any(v not in allowed for v in listed):
            refuse("err_request_choice", what, value)
    elif isinstance(block, gr.HTML):
        return position(value, what)
    return value


def api_value(annotation, value, what: str):
    """A value of an API function's parameter, checked by the type it names (str, int, float, bool and their
    `| None`); any other type: as cleaned."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, _UnionType) else ()
    none = type(None) in args
    kinds = [a for a in args if a is not type(None)] if args else [annotation]
    if value is None and none:
        return None
    if len(kinds) != 1:
        return value
    kind = kinds[0]
    if kind is str:
        if not isinstance(value, str):
            refuse("err_request_text", what, value)
    elif kind is int:
        return int(number(value, what, whole=True))
    elif kind is float:
        return number(value, what)
    elif kind is bool and not isinstance(value, bool):
        refuse("err_request_yes_no", what, value)
    return value


_UnionType = type(int | None)


def parameters(fn) -> list[tuple[str, object]]:
    """(name, annotation) of each parameter of `fn`, its annotations resolved (those of a module with
    `from __future__ import annotations` are strings)."""
    try:
        hints = typing.get_type_hints(fn)
        return [(p.name, hints.get(p.name, inspect.Parameter.empty)) for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError, NameError):
        return []


def label_of(block, name: str | None, i: int) -> str:
    """What the user calls value `i`: the component's label in the page's language, else the API's name for it."""
    from attention_lens.shell.texts import labels, said
    key = getattr(block, "label", None)
    m = re.search(r'"key": "([^"]+)"', key) if isinstance(key, str) else None
    if m and m.group(1) in labels():
        return said(m.group(1))
    if isinstance(key, str) and key and not key.startswith("__i18n__"):
        return key
    return name or f"#{i + 1}"


def checked_inputs(block_fn, inputs: list, state) -> list:
    """The request's values for the event `block_fn`, each checked against the component that takes it (the
    user's own copy where their page changed it: its choices, its range) or, for an API function, the type its
    parameter names."""
    if not isinstance(inputs, list):
        return inputs
    names = parameters(block_fn.fn) if block_fn.fn is not None else []
    out = list(inputs)
    for i, block in enumerate(block_fn.inputs):
        if i >= len(out) or getattr(block, "stateful", False):
            continue
        own = state[block._id] if state is not None and block._id in state else block
        name, annotation = names[i] if i < len(names) else (None, inspect.Parameter.empty)
        if type(own).__name__ == "Api":  # gr.api's: named by its function's parameter
            what = name or f"#{i + 1}"
            out[i] = cleaned(out[i], what)
            if annotation is not inspect.Parameter.empty:
                out[i] = api_value(annotation, out[i], what)
        else:
            out[i] = checked_value(own, out[i], label_of(own, name, i))
    return out


def guard(demo: gr.Blocks) -> None:
    """Every request of `demo` checked by `checked_inputs` before Gradio's preprocessing (the module's docstring), its
    messages in the language of the page that sent it (Gradio sets the request for handlers only: here it is set
    for the check too)."""
    from gradio.context import LocalContext
    inner = demo.process_api
    signature = inspect.signature(inner)

    async def process_api(*args, **kw):
        call = signature.bind(*args, **kw)
        block_fn, state = call.arguments["block_fn"], call.arguments.get("state")
        block_fn = demo.fns[block_fn] if isinstance(block_fn, int) else block_fn
        if call.arguments.get("iterator") is None and not block_fn.batch:
            request = call.arguments.get("request")
            token = LocalContext.request.set(request if not isinstance(request, list) else None)
            try:
                call.arguments["inputs"] = checked_inputs(block_fn, call.arguments["inputs"], state)
            finally:
                LocalContext.request.reset(token)
        return await inner(*call.args, **call.kwargs)

    demo.process_api = process_api
