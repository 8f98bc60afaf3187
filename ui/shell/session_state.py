"""A new user's Gradio session, made without configuring every block of the page (issue 42).

Gradio makes a user's SessionState at their first event (gradio/state_holder.py): beside the state, it builds the
config of every block of the page (`config_values`, read back only for a deep link and for the blocks an event
updates). On the server's event loop, where nothing else is served meanwhile, that is 20 ms for this page's 200
blocks; thirty students pressing Start pay it one after another, and it was 73 % of the event loop's busy samples
in a py-spy profile of 30 Starts (`python -m benchmarks.sessions --first-event`, docs/benchmarks.md). Here each
block's config is made when first read, from the same call, so what Gradio reads is what it built before
(tests/test_session_state.py compares them with Gradio's own SessionState).
"""
from __future__ import annotations

from types import SimpleNamespace

import gradio.state_holder as gradio_state


class BlockConfigs(dict):
    """SessionState.config_values: {block id: its config}, each made by `BlocksConfig.config_for_block` on first
    read (or set by Gradio as an event updates it), iterated in the page's order as Gradio's eager dict was."""

    def __init__(self, blocks_config, ids: list[int]):
        super().__init__()
        self._blocks_config, self._ids, self._known = blocks_config, ids, set(ids)

    def __missing__(self, key):
        if key not in self._known:
            raise KeyError(key)
        value = self[key] = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
        return value

    def __contains__(self, key) -> bool:
        return key in self._known or dict.__contains__(self, key)

    def keys(self):
        return self._ids + [k for k in dict.keys(self) if k not in self._known]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]

    def get(self, key, default=None):
        return self.get(key, default)


class LazySessionState(gradio_state.SessionState):
    """Gradio's SessionState, but for `config_values`, whose blocks are configured when first read."""

    def __init__(self, blocks):
        super().__init__(SimpleNamespace(default_config=blocks.default_config, blocks={}))  # configures nothing
        self.config_values = BlockConfigs(self.blocks_config,
                                          [k for k in self.blocks_config.blocks if k in blocks.blocks])


def install() -> None:
    """Every StateHolder makes its new sessions lazily from now on (the class Gradio's StateHolder looks up)."""
    gradio_state.SessionState = LazySessionState
