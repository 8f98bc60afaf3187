"""Input checks shared by the handlers: each answers bad input with a gr.Error the user can act on."""
from __future__ import annotations

import re

import gradio as gr

from transformer.decode.decoding import DecodingSession
from transformer.interpret.attribution import NOT_APPLICABLE

TOPK = 8  # the top-k list's default length
# the library's messages a page user meets, by the [label] key that says them in the page's language
# (attention_lens/shell/texts.py said: English for programs, which send no page language)
SAID = {"input is empty: type a sentence": "err_empty", "target is empty": "err_target_empty",
        NOT_APPLICABLE: "err_attribution_not_here"}
# the library's notes with numbers in them (transformer/decode/decoding.py: what was cut from an input), by their key
NOTES = ((re.compile(r"^The input was cut from (?P<n>\d+) to (?P<limit>\d+) characters\.$"), "note_cut_chars"),
         (re.compile(r"^The input has (?P<n>\d+) pieces; only the first (?P<limit>\d+) are translated"),
          "note_cut_pieces"))


def told(message: str, **fill) -> str:
    """A library message (or a [label] key) in the user's page's language where the catalogue has it."""
    from attention_lens.shell.texts import said, words
    for pattern, key in NOTES:
        if m := pattern.match(message):  # {read}: the pieces the view counts, the cut ones and the end mark </s>
            return said(key, **m.groupdict(), read=int(m["limit"]) + 1)
    key = SAID.get(message, message)
    return said(key, **fill) if key in words() else message
HEAD_RE = re.compile(r"^L(\d{1,2}) H(\d{1,2})$")


def fail(e: Exception):
    raise gr.Error(told(str(e)), print_exception=False)


def source_problem(tr, text) -> str:
    """Why the model cannot read `text` ("" if it can): the same check as Translator.start (source_ids)."""
    try:
        tr.source_ids(text)
        return ""
    except ValueError as e:
        return told(str(e))


def reference_problem(session, ref) -> str:
    """Why a reference cannot be shown ("" if it can): no sentence started, or a reference the sentence's own
    model cannot read."""
    if not isinstance(session, DecodingSession):
        return told("err_reference_start")
    try:
        session.translator.target_ids_of(ref)
        return ""
    except ValueError as e:
        return told("err_reference", why=told(str(e)))


def need_session(session) -> DecodingSession:
    """A fork of the user's session (handlers never mutate the state they are given)."""
    if not isinstance(session, DecodingSession):
        raise gr.Error(told("err_no_session"), print_exception=False)
    return session.fork()


def check_k(k) -> int:
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 20:
        raise gr.Error(f"top-k must be an integer from 1 to 20, got {k!r}", print_exception=False)
    return k


def check_piece(piece) -> None:
    if not isinstance(piece, str) or not piece or len(piece) > 100:
        fail(ValueError("force needs one piece of the vocabulary"))


def choice_index(text, what: str, n: int) -> int:
    """'layer 2' -> 1 for a dropdown of n '<what> i' choices; gr.Error otherwise."""
    m = re.match(rf"^{what} (\d+)$", str(text))
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < n:
        raise gr.Error(f"{what} must be '{what} 1'..'{what} {n}'", print_exception=False)
    return i


def parse_head_labels(kind: str, labels) -> list[tuple[str, int, int]]:
    """['L1 H2', ...] -> [(kind, 0, 1), ...]."""
    if labels is None:
        return []
    if not isinstance(labels, (list, tuple)):
        raise gr.Error(f"heads must be a list of labels such as 'L1 H2', got {str(labels)[:40]!r}",
                       print_exception=False)
    out = []
    for lab in labels:
        m = HEAD_RE.match(lab) if isinstance(lab, str) else None
        if not m:
            raise gr.Error(f"not a head label (expected e.g. 'L1 H2'): {str(lab)[:40]!r}", print_exception=False)
        out.append((kind, int(m.group(1)) - 1, int(m.group(2)) - 1))
    return out
