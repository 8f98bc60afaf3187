"""A new user's session (ui/shell/session_state.py): made without configuring every block, yet Gradio reads from it
exactly what its own SessionState holds, before and after events update blocks, and for a deep link."""
from __future__ import annotations

import gradio as gr
import gradio.state_holder as gradio_state
import pytest

from tests.serving import launched
from transformer.decode.decoding import Translator
from ui.app import build_demo
from ui.shell import session_state as S
from ui.shell.components import SESSIONS_MAX

EAGER = S.LazySessionState.__mro__[1]  # Gradio's own SessionState, whether or not install() ran


@pytest.fixture(scope="module")
def demo(tiny_trained):
    return build_demo(Translator.load(tiny_trained, device="cpu"))


def test_a_new_session_configures_no_block_until_one_is_read(demo):
    lazy, eager = S.LazySessionState(demo), EAGER(demo)
    assert all(k in lazy.config_values for k in eager.config_values)  # every block is there, as in Gradio's dict
    assert dict.__len__(lazy.config_values) == 0 and len(lazy.config_values) == len(eager.config_values) > 100


def test_the_lazy_session_holds_what_gradios_own_holds(demo):
    eager, lazy = EAGER(demo), S.LazySessionState(demo)
    assert list(lazy.config_values) == list(eager.config_values)
    assert lazy.config_values.items() == list(eager.config_values.items())
    assert list(lazy.components) == list(eager.components)  # what a deep link restores the page from
    assert lazy.blocks_config.blocks == eager.blocks_config.blocks and lazy.state_data == eager.state_data


def test_events_update_the_lazy_session_as_gradios_own(demo):
    """What an event does to a session (gradio/blocks.py): a new value in a block's config, a block replaced
    by an update, a State's value; then the two hold the same configs, block by block."""
    eager, lazy = EAGER(demo), S.LazySessionState(demo)
    box = next(k for k, b in demo.blocks.items() if isinstance(b, gr.Textbox))
    state = next(k for k, b in demo.blocks.items() if isinstance(b, gr.State))
    for s in (eager, lazy):
        s._update_value_in_config(box, "Ein Hund rennt.")
        s[box] = gr.Textbox(value="Ein Hund rennt.", label="changed", render=False)
        s._update_config(box)
        s[state] = {"kept": 1}
    assert lazy.config_values[box] == eager.config_values[box]
    assert lazy.config_values[box]["props"]["label"] == "changed"
    assert lazy.config_values.items() == list(eager.config_values.items())
    assert lazy[state] == {"kept": 1} and box in lazy.config_values and -1 not in lazy.config_values
    with pytest.raises(KeyError):
        lazy.config_values[-1]


def test_the_served_app_makes_its_sessions_lazily(tiny_trained, tiny_pairs):
    from gradio_client import Client
    page = build_demo(Translator.load(tiny_trained, device="cpu"))
    with launched(page, state_session_capacity=SESSIONS_MAX) as url:
        client = Client(url, verbose=False)
        translation, _, topk = client.predict(tiny_pairs[0][0], 5, False, api_name="/start")  # at its 1st step
        sessions = list(page.state_holder.session_data.values())
        client.close()
    assert translation == "" and topk["items"] and gradio_state.SessionState is S.LazySessionState
    assert sessions and all(isinstance(s, S.LazySessionState) for s in sessions)
