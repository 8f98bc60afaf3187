"""The models the app serves: loaded once, shared by every user; which one a user sees is theirs alone.

Each user's choice is the value of the picker (a component's value lives in that user's page and is sent with
each event), and a started sentence carries its model with it (`DecodingSession.translator`), so every tab that
reads the sentence follows the model it was started with, whatever another user picks meanwhile.
"""
from __future__ import annotations

import gradio as gr

from attention_lens.shell.inputs import need_session
from attention_lens.shell.texts import text
from transformer.decode.decoding import Translator
from transformer.decode.language import name

LOOK_FOR = {d: text(f"look_for.{d}", "detail") for d in ("de-en", "en-de")}  # the Model tab's "What to look for"


def direction_label(tr: Translator) -> str:
    """'German → English', from the languages the checkpoint records; a model not ours adds its name and size
    ('German → English · opus-mt-de-en, 74M')."""
    return f"{name(tr.config.src_lang)} → {name(tr.config.tgt_lang)}{name_suffix(tr)}"


def name_suffix(tr: Translator) -> str:
    """' · <name>, <size>' for a model not ours (transformer/hf), '' for ours: names and numbers, no words."""
    if tr.name is None:
        return ""
    n = tr.model.num_parameters()
    return f" · {tr.name}, {n / 1e6:.0f}M" if n >= 1e6 else f" · {tr.name}, {n / 1e3:.0f}k"


class Models:
    """Translators by key (Translator.key: 'de-en', the checkpoint's direction; 'hf-<name>' for a model of
    transformer/hf); the first is the default."""

    def __init__(self, translators: list[Translator]):
        if not translators:
            raise ValueError("no model to serve")
        self.by_key: dict[str, Translator] = {}
        for tr in translators:
            key = tr.key
            if self.by_key.get(key) is tr:  # the same model named twice: served once
                continue
            if key in self.by_key:
                raise ValueError(f"two checkpoints translate {direction_label(tr)}; serve one of them")
            self.by_key[key] = tr
        self.default = next(iter(self.by_key))

    def __iter__(self):
        return iter(self.by_key.items())

    def __len__(self) -> int:
        return len(self.by_key)

    @property
    def first(self) -> Translator:
        return self.by_key[self.default]

    def label(self, key) -> str:
        return direction_label(self.get(key))

    def choices(self) -> list[tuple[str, str]]:
        return [(direction_label(tr), key) for key, tr in self.by_key.items()]

    def get(self, key) -> Translator:
        """The model named `key` ('' or None: the default); an unknown name, or one that is no text (a list, a dict
        sent to the API), is answered with the choices."""
        if key is None or key == "":
            return self.first
        if not self.known(key):
            raise gr.Error(f"unknown model {str(key)[:40]!r}; one of {', '.join(self.by_key)}", print_exception=False)
        return self.by_key[key]

    def known(self, key) -> bool:
        """Whether `key` names a served model (False for anything that is not a str, unhashable ones included)."""
        return isinstance(key, str) and key in self.by_key

    def of_language(self, code: str) -> str | None:
        """The key of the model that reads `code`, if one is served."""
        return next((k for k, tr in self.by_key.items() if tr.config.src_lang == code), None)


def of_session(handler):
    """handler(tr, session, *rest) as an event function of (session, *rest): `tr` is the model the session was
    started with. (No functools.wraps: Gradio reads the signature, and `tr` is not an input.)"""
    def call(session, *rest):
        return handler(need_session(session).translator, session, *rest)
    call.__name__, call.__doc__ = handler.__name__, handler.__doc__
    return call
