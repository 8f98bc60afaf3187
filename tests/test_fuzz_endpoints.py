"""Property-based fuzzing (Hypothesis) of every public endpoint of the served app, the way the page sends requests
(Gradio's queue, tests/serving.py raw_call): any JSON value for each parameter (texts with lone surrogates, numbers,
lists, dicts, None, booleans) and plausible ones. Each request gets an answer or a clear message (never Gradio's
generic error, never a cut stream), and the server still answers the next request.

FUZZ_EXAMPLES examples per endpoint (2,000 for a full run; CI's default is small); tests/test_fuzz.py fuzzes the
handlers themselves."""
from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.serving import GENERIC, fn_indices, raw_call, serving

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
LIVE = {"follow", "class_open", "class_change"}  # attention_lens/live: fuzzed for their answers too

texts = st.one_of(st.text(st.characters(exclude_categories=()), max_size=40),
                  st.sampled_from(["Ein Hund rennt.", "", "all layers", "L1 H1", "cross", "alti", "\ud800", "[" * 300,
                                   '{"step": 1, "ids": [2, 5], "forced": [0, 1]}', "8", "de-en"]))
scalars = st.one_of(texts, st.integers(-10**12, 10**12), st.integers(-2, 25), st.booleans(), st.none(),
                    st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                      max_leaves=8)


@pytest.fixture(scope="module")
def served(tiny_trained):
    from tests.conftest import DEVICE
    from transformer.decode.decoding import Translator
    with serving(Translator.load(tiny_trained, device=DEVICE)) as url:
        yield url, fn_indices(url)


def fuzzed(url, fns, name: str, arity: int, session: str):
    """The fuzz of the endpoint /`name` (`arity` values a client sends) in the session `session`."""
    @FUZZ
    @given(args=st.lists(values, min_size=arity, max_size=arity))
    def check(args):
        kind, out = raw_call(url, name, args, session=session, fns=fns, timeout=300)
        assert kind in ("complete", "error"), (name, args, kind, out)
        if kind == "error":
            assert isinstance(out, str) and out.strip() and GENERIC not in out, (name, args, out)
    return check


def test_every_public_endpoint_answers_anything_with_an_answer_or_a_clear_message(served):
    url, fns = served
    import httpx
    config = httpx.get(f"{url}config", timeout=60).json()
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    served = [d for d in config["dependencies"] if d.get("api_name") in fns and d.get("backend_fn")]  # not js-only
    arity = {d["api_name"]: len([i for i in d["inputs"] if i not in states]) for d in served}
    assert len(arity) > 30, sorted(arity)  # every event of the page and every gr.api, not a few
    seen = set()
    for name in sorted(arity):
        session = uuid.uuid4().hex  # a started session, so that the fuzz reaches past "press Start first"
        raw_call(url, "start", ["Ein Hund rennt.", 8, False, None], session=session, fns=fns)
        fuzzed(url, fns, name, arity[name], session)()
        seen.add(name)
        kind, data = raw_call(url, "translate", ["Ein Hund rennt.", ""], fns=fns)
        assert kind == "complete" and data[0], (name, kind, data)
    assert seen == set(arity), set(arity) - seen
