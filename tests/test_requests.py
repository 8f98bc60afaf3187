"""Bad requests get a clear answer in the page's language, through the served app (attention_lens/shell/requests.py):
never Gradio's generic error, never a cut stream, and the server answers the next request."""
from __future__ import annotations

import pytest

from tests.conftest import DEVICE
from tests.serving import GENERIC, raw_call, serving
from transformer.decode.decoding import Translator


@pytest.fixture(scope="module")
def url(tiny_trained):
    tr = Translator.load(tiny_trained, device=DEVICE)
    with serving(tr) as u:
        yield u


def still_answers(url):
    kind, data = raw_call(url, "translate", ["Ein Hund rennt.", ""])
    assert kind == "complete" and isinstance(data[0], str) and data[0], (kind, data)


def clear(kind, message):
    assert kind == "error", (kind, message)
    assert isinstance(message, str) and message.strip() and GENERIC not in message, message


def test_a_lone_surrogate_is_cleaned_where_requests_come_in(url):
    """A lone surrogate ("\\ud800": JSON carries it, UTF-8 cannot) in /start's text came back in the answer and cut
    the caller's stream; it is now the replacement character, and the answer is whole."""
    kind, data = raw_call(url, "start", ["\ud800 Hund \udfff", 8, False, None])
    assert kind == "complete", (kind, data)
    kind, message = raw_call(url, "start", ["\ud800", 8, False, None], lang="de")  # nothing left to translate
    clear(kind, message)
    assert "leer" in message
    for name, args in (("translate", ["\ud800", ""]), ("reference", ["Ein \ud800", "A \udc00", None]),
                       ("attention", ["\ud800 Hund", ""])):
        kind, data = raw_call(url, name, args)
        assert kind in ("complete", "error") and (kind == "complete" or (data and GENERIC not in data)), (name, data)
    still_answers(url)


@pytest.mark.parametrize("name,args", [("/export", ["[" * 10000]), ("/layers", ["all layers", 0.15, "[" * 10000]),
                                       ("/ablate", [[], [], ["L1 H1"], 8, "[" * 10000])], ids=lambda v: str(v)[:12])
def test_a_position_of_ten_thousand_brackets_is_refused_with_a_message(url, name, args):
    """`"[" * 10000` as the view's position, in a session with a sentence started: json.loads raised RecursionError in
    the handler (Gradio's generic error)."""
    from gradio_client import Client
    client = Client(url, verbose=False)
    client.predict("Ein Hund rennt.", 8, False, None, api_name="/start")
    with pytest.raises(Exception) as e:
        client.predict(*args, api_name=name)
    assert "position could not be read" in str(e.value) and GENERIC not in str(e.value), str(e.value)
    client.predict(*args[:-1], "", api_name=name)  # the session's own cursor: answered
    kind, message = raw_call(url, name[1:], args, lang="de")
    clear(kind, message)
    assert "Stelle der Ansicht" in message
    still_answers(url)


@pytest.mark.parametrize("size", ["8", None, [1], {}, 9, 0, 2.5, True], ids=repr)
def test_a_beam_size_that_is_not_a_whole_number_in_range_is_named(url, size):
    """/beam with a size of "8", None, [1] or {}: Gradio's Slider compared them with its bounds (TypeError, the
    generic error); out of range or not whole: the same clear message, in the page's language."""
    kind, message = raw_call(url, "beam", ["Ein Hund rennt.", size, None])
    clear(kind, message)
    assert "beam size" in message.lower() and "1" in message and "8" in message, message
    kind, message = raw_call(url, "beam", ["Ein Hund rennt.", size, None], lang="de")
    clear(kind, message)
    assert "ganze Zahl von 1 bis 8" in message, message
    kind, data = raw_call(url, "beam", ["Ein Hund rennt.", 3, None])
    assert kind == "complete", data


@pytest.mark.parametrize("name,args,said", [
    ("step", ["3", False], "top-k"), ("step", [8, "yes"], "true or false"), ("goto", [[1], 8, False], "step index"),
    ("start", [{"a": 1}, 8, False, None], "must be a text"), ("start", ["Ein Hund.", 8, False, "xx-yy"], "choices"),
    ("ablate", [["L9 H9"], [], [], 8, ""], "list of its choices"), ("layers", ["all layers", 5, ""], "to 1;"),
    ("inside", ["Ein Hund.", "cross", "x", 0, None, ""], "whole number"),
    ("translate", [7, ""], "must be a text"),
], ids=lambda v: str(v)[:16])
def test_every_kind_of_value_is_checked_by_its_component(url, name, args, said):
    kind, message = raw_call(url, name, args)
    clear(kind, message)
    assert said in message, message
    still_answers(url)
