"""Handlers of attribution (transformer/interpret/attribution.py) in the app: the Translate view's ALTI+ / saliency
colouring (one request per trajectory and method, answered for every row at once) and the Across layers tab's word
alignment by each method with their agreement (transformer/interpret/agreement.py). Plain functions of (translator,
inputs) -> outputs: the library computes, these only encode; bad input raises gr.Error."""
from __future__ import annotations

import time

import gradio as gr

from attention_lens.shell.figures import figure_words, with_separators
from attention_lens.shell.inputs import fail
from attention_lens.shell.models import of_session
from attention_lens.shell.texts import each, labels, said, text
from attention_lens.shell.texts import words as said_words
from attention_lens.translate.attribution_payload import attribution_payload
from attention_lens.translate.handlers import at_position
from transformer.decode.decoding import DecodingSession, Translator
from transformer.interpret import figures
from transformer.interpret.agreement import session_alignment
from transformer.interpret.attribution import METHOD_TITLES, METHODS

# the methods' names where the page shows them (dropdown, table, matrix): no formula ("Gradient × input" is the
# detailed name, in the word alignment's summary)
LABELS = {**METHOD_TITLES, "saliency": "Saliency"}
ALIGN_METHODS = [(LABELS[m], m) for m in METHODS]  # the Across layers tab's dropdown: (label, value)
# what a cell of the word alignment's matrix holds, by method, for its hover: an attention weight, ALTI+'s share of
# the contribution, a saliency (the catalogue's words; the hover said "weight" for all three)
MEASURE_WORD = {"attention": "fig_weight", "alti": "fig_contribution_share", "saliency": "mname_saliency"}


def check_method(method) -> str:
    if method not in METHODS:
        raise gr.Error(f"method must be one of {', '.join(METHODS)}, got {str(method)[:40]!r}", print_exception=False)
    return method


def whole(tr: Translator, session, position) -> DecodingSession:
    """The trajectory whose last position is `position` (None or "": the session's whole history), as a session
    with its cursor at that last position (at_position decodes it again when the history does not hold it)."""
    s = at_position(tr, session, position)
    if position is None or position == "":
        s.cursor = len(s.positions) - 1
    return s


def attribution_at(tr: Translator, session, position, method, key: str = "") -> dict:
    """The Translate view's attribution payload (attention_lens/translate/attribution_payload.py): `method` over every
    row of the trajectory the view holds, whose last position `position` is ({"step", "ids", "forced"} as
    assets/translate/attribution.js sends it). `key` (the browser's name for the request) is echoed."""
    t0 = time.perf_counter()
    check_method(method)
    s = whole(tr, session, position)
    try:
        att = s.attribution(method)
    except ValueError as e:
        fail(e)
    return attribution_payload(att, s.target_ids, key if isinstance(key, str) else "",
                               (time.perf_counter() - t0) * 1000)


# -- Across layers: the word alignment of the whole sentence ---------------------------------------------------

def alignment_table(wa) -> list[list[str]]:
    """One row per target word: the word, its top source word by each method, and the agreement 'k/n'."""
    n = len(wa.methods)
    return [[word] + [wa.source_words[wa.best[m][w]] if wa.source_words else "" for m in wa.methods]
            + [f"{k}/{n}"] for w, (word, k) in enumerate(zip(wa.target_words, wa.agreement()))]


def alignment_headers(methods=METHODS, lang: str = "en") -> list[str]:
    """The word alignment table's heads in `lang` (attention_lens/shell/texts [label]: th_target_word,
    mname_<method>, th_agree)."""
    w = said_words(lang)
    return [w["th_target_word"]] + [w.get(f"mname_{m}", LABELS[m]) for m in methods] + [w["th_agree"]]


def alignment_summary(wa, method: str) -> str:
    agree = wa.agreement()
    n, total = len(wa.methods), len(agree)

    def said_in(mode, lang):  # the counts in `lang`'s words (attention_lens/texts [label] words_n, in_translation)
        w = labels(lang)
        n_words = lambda c: w["words_1" if c == 1 else "words_n"].format(n=c)
        counts = ", ".join(f"{n_words(sum(a == k for a in agree))} {k}/{n}" for k in range(n, 0, -1))
        total_said = (w["in_translation"].format(words=n_words(total)) if mode == "plain" else
                      w["target_words_1" if total == 1 else "target_words_n"].format(n=total))
        name = (labels(lang).get(f"mname_{method}", LABELS[method]) if mode == "plain"
                else labels(lang).get(f"mtitle_{method}", METHOD_TITLES[method]))
        return text("align.summary", mode, lang).format(total=total_said, counts=counts, method=name)
    return each(said_in)


def word_alignment_at(tr: Translator, session, method, position=None):
    """(the chosen method's word matrix, the table of every method's top source word and their agreement, a
    summary) for the whole trajectory the view holds (its last position `position`)."""
    check_method(method)
    s = whole(tr, session, position)
    try:
        wa = session_alignment(s)
    except ValueError as e:
        fail(e)
    fig = figures.heatmap(wa.scores[method], [figures.label(w) for w in wa.source_words],
                          [figures.label(w) for w in wa.target_words],
                          said("word_align_title", method=said(f"mname_{method}")),
                          words=figure_words() | {"weight": said(MEASURE_WORD[method])})
    fig.update_xaxes(title={"text": said("source_words")})
    fig.update_yaxes(title={"text": said("target_words_axis")})
    return with_separators(fig), alignment_table(wa), alignment_summary(wa, method)  # 0,5 on the German page


def word_alignment_follow(session, method, position=None):
    """word_alignment_at (an event function of the session, with the model it was started with) when the tab is
    shown or the method changes: quietly nothing before Start."""
    if not isinstance(session, DecodingSession):
        return gr.skip(), gr.skip(), gr.skip()
    return of_session(word_alignment_at)(session, method, position)
