"""Property-based fuzzing (Hypothesis) of every handler and API function of the app.

Each handler is driven with generated values — any Unicode text (surrogates, controls, very long),
numbers of every kind (negative, huge, NaN, inf, strings, None, bools, lists), piece strings, head
lists, step indices, sessions and non-sessions — and must either answer normally or raise gr.Error with
a message. Nothing else may escape, and afterwards the shared model's weights and hooks are unchanged.
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_lens.ablation import handlers as ablation_handlers
from attention_lens.beam import handlers as beam_handlers
from attention_lens.layers import handlers as layers_handlers
from attention_lens.learned import handlers as learned_handlers
from attention_lens.shell import api, exports
from attention_lens.translate import handlers as decoding_views
from tests.conftest import DEVICE
from transformer.decode.decoding import Translator
from transformer.interpret.history import AttentionHistory

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

any_char = st.characters(exclude_categories=())  # every code point, lone surrogates included
texts = st.one_of(
    st.text(any_char, max_size=60),
    st.text(st.sampled_from("Ein Hund Katze rennt schläft. <s></s>▁\x00\u200b\ud800\ufffd\n\t"), max_size=200),
    st.builds(lambda s, n: s * n, st.text(any_char, min_size=1, max_size=4), st.integers(1, 3000)),
    st.sampled_from(["Ein Hund rennt.", "Eine Katze schläft.", "", "   ", "▁", "<unk>"]),
)
numbers = st.one_of(st.integers(-10**30, 10**30), st.integers(-3, 25), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.5, 2.0, 1e300, -0.0]), st.text(max_size=6), st.none(), st.booleans(),
                    st.lists(st.integers(0, 5), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                             max_size=2))
anything = st.one_of(texts, numbers)


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


@pytest.fixture(scope="module")
def guarded(tr):
    """Weights and hooks before the module's fuzzing; checked unchanged afterwards."""
    before = {k: v.detach().clone() for k, v in tr.model.state_dict().items()}
    yield tr
    for k, v in tr.model.state_dict().items():
        assert torch.equal(v, before[k]), f"{k} changed"
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in tr.model.modules()) == 0
    assert not tr.model.training


@pytest.fixture(scope="module")
def sessions(tr):
    """Real sessions at several cursors, for the handlers that take one."""
    s0 = tr.start("Ein Hund rennt.")
    done = tr.start("Eine Katze schläft.").run()
    mid = done.fork()
    mid.goto(1)
    return [s0, done, mid]


def session_values(sessions):
    return st.one_of(st.sampled_from(sessions), numbers, texts, st.just({"cursor": 0}))


def answers_or_gr_error(fn, *args):
    try:
        fn(*args)
    except gr.Error as e:
        assert isinstance(e.message, str) and e.message.strip(), f"gr.Error without a message from {fn.__name__}"


def test_start_and_api_functions(guarded):
    tr = guarded

    @FUZZ
    @given(text=texts, k=st.one_of(st.just(8), numbers), words=st.one_of(st.booleans(), anything))
    def check(text, k, words):
        answers_or_gr_error(decoding_views.start, tr, text, k, words)
        answers_or_gr_error(api.api_translate, tr, text)
        answers_or_gr_error(api.api_attention, tr, text)
        answers_or_gr_error(api.api_attention_compact, tr, text)

    check()


def test_moving_handlers(guarded, sessions):
    tr = guarded

    @FUZZ
    @given(session=session_values(sessions), i=st.one_of(st.integers(-2, 12), numbers),
           k=st.one_of(st.integers(1, 20), numbers), words=st.one_of(st.booleans(), anything))
    def check(session, i, k, words):
        for fn in (decoding_views.step, decoding_views.run, decoding_views.back, decoding_views.reset,
                   decoding_views.step_view):
            answers_or_gr_error(fn, tr, session, k, words)
        answers_or_gr_error(decoding_views.goto, tr, session, i, k, words)
        answers_or_gr_error(exports.export_maps, tr, session)

    check()


def test_force_and_reference(guarded, sessions):
    tr = guarded
    pieces = st.one_of(st.sampled_from([tr.tokenizer.piece(i) for i in range(len(tr.tokenizer))]), texts, numbers)

    @FUZZ
    @given(session=session_values(sessions), piece=pieces, k=st.one_of(st.just(5), numbers), text=texts, ref=texts)
    def check(session, piece, k, text, ref):
        answers_or_gr_error(decoding_views.force, tr, session, piece, k, False)
        answers_or_gr_error(decoding_views.reference, tr, text, ref)

    check()


def test_ablation_beam_and_layers(guarded, sessions):
    tr = guarded
    labels = st.one_of(st.sampled_from(ablation_handlers.head_choices(tr, "cross")), st.text(max_size=8), numbers)
    head_lists = st.one_of(st.lists(labels, max_size=4), numbers, texts)

    @FUZZ
    @given(session=session_values(sessions), enc=head_lists, dec=head_lists, cross=head_lists,
           k=st.one_of(st.just(5), numbers), text=texts, size=st.one_of(st.integers(0, 9), numbers),
           choice=st.one_of(st.sampled_from(["1. x", "2. y", "9. z"]), anything), layer=anything,
           threshold=st.one_of(st.floats(0, 1.5), numbers))
    def check(session, enc, dec, cross, k, text, size, choice, layer, threshold):
        answers_or_gr_error(ablation_handlers.ablate, tr, session, enc, dec, cross, k)
        try:
            state = beam_handlers.beam(tr, text, size)[0]
        except gr.Error as e:
            assert e.message
            state = None  # gr.State lives on the server: a client cannot forge a beam state
        answers_or_gr_error(beam_handlers.beam_pick, tr, state, choice)
        answers_or_gr_error(beam_handlers.beam_pick, tr, choice, choice)
        answers_or_gr_error(layers_handlers.across_layers, tr, session, layer, threshold)
        answers_or_gr_error(layers_handlers.across_layers, tr, session, "all layers", threshold)

    check()


def test_attention_being_learned(tmp_path_factory):
    from transformer.interpret.history import HISTORY
    from transformer.train.train import main
    out = tmp_path_factory.mktemp("hist")
    main(["--dry-run", "--out", str(out), "--no-progress", "--epochs", "2"])
    history = AttentionHistory.load(out / HISTORY)

    @FUZZ
    @given(example=st.one_of(st.integers(-2, 6), numbers), epoch=st.one_of(st.integers(-1, 4), numbers),
           layer=st.one_of(st.sampled_from(["all layers", "layer 1", "layer 2"]), anything),
           head=st.one_of(st.sampled_from(["mean of heads", "head 1", "head 9"]), anything),
           h=st.sampled_from([history, None]))
    def check(example, epoch, layer, head, h):
        answers_or_gr_error(learned_handlers.learned, h, example, epoch, layer, head)

    check()


def test_handlers_that_take_the_views_position(guarded, sessions):
    """force_at / export_at / ablate / across_layers read the position the browser sends: any JSON or value."""
    import json as _json
    tr = guarded
    V = len(tr.tokenizer)
    ids = st.lists(st.one_of(st.integers(-2, V + 2), st.just(tr.config.bos_id), numbers), min_size=0, max_size=8)
    dicts = st.fixed_dictionaries({"step": st.one_of(st.integers(-1, 9), numbers), "ids": st.one_of(ids, numbers),
                                   "forced": st.one_of(st.lists(st.integers(0, 1), max_size=8), numbers)})
    positions = st.one_of(st.none(), st.just(""), dicts, dicts.map(_json.dumps), texts, numbers)
    pieces = st.one_of(st.sampled_from(["▁A", "▁The", "</s>", "<s>", "zz"]), texts, numbers)

    @FUZZ
    @given(session=session_values(sessions), position=positions, piece=pieces, k=st.one_of(st.just(5), numbers))
    def check(session, position, piece, k):
        answers_or_gr_error(decoding_views.force_at, tr, session, position, piece, k, False)
        answers_or_gr_error(exports.export_at, tr, session, position)
        answers_or_gr_error(ablation_handlers.ablate_at, tr, session, [], [], ["L1 H1"], k, position)
        answers_or_gr_error(layers_handlers.across_layers_at, tr, session, "all layers", 0.15, position)

    check()
