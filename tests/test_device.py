"""Device hygiene, checked on the CPU: what would mix devices or stall a GPU is visible as torch calls.

`DeviceAudit` is a TorchFunctionMode that sees every torch call made while it is entered. It fails on a
factory call (torch.tensor, torch.full, ...) without an explicit device: next to a CUDA model that tensor
would be on the CPU ("Expected all tensors to be on the same device"). And it counts copies to the host
(.cpu(), .item(), .tolist(), int(t), ... of a tensor that is not already a host copy) and uploads
(torch.tensor/as_tensor of host data, Tensor.to(device), torch.from_numpy), so a test can pin how many a
step makes. On the CPU these are all no-ops, which is why they have to be counted rather than timed.

The second half runs every handler and API function on an accelerator emulated on the CPU
(tests/emulated_device.py): numpy refuses its tensors as it refuses CUDA ones, and its host transfers are
counted per decoding step.
"""
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import Tensor

from tests.conftest import DEVICE
from tests.device_audit import DeviceAudit
from transformer.decode.beam import beam_search, beam_translate_batch
from transformer.decode.decoding import greedy_decode, pad_batch


@pytest.fixture()
def audit(monkeypatch):
    a = DeviceAudit()
    from_numpy = torch.from_numpy
    monkeypatch.setattr(torch, "from_numpy", lambda x: a.uploads.append("from_numpy") or from_numpy(x))
    return a


def test_the_audit_sees_what_it_claims(audit):
    with audit:
        with pytest.raises(AssertionError, match="without device"):
            torch.tensor([1, 2])
        t = torch.tensor([1, 2], device="cpu")
        t.cpu().numpy()  # one copy; reading the copy is free
        int(t[0])
        torch.from_numpy(np.zeros(2)).to("cpu")
    assert audit.reads == ["cpu", "__int__"] and audit.uploads == ["tensor", "from_numpy", "to"]


def test_every_tensor_is_made_on_the_models_device(tiny_translator, audit):
    """The whole inference surface, with no factory call that forgets its device."""
    tr, text = tiny_translator, "Ein Hund rennt."
    model = tr.model
    with audit:
        src = tr.source_ids(text)
        tr.translate(text)
        tr.translate_batch([text, "Eine Katze schläft."])
        greedy_decode(model, pad_batch([src, src[:2]], tr.config.pad_id, tr.device))
        s = tr.start(text, ablate=[("cross", 0, 1), ("encoder_self", 1, 0)])
        s.step()
        s.topk(3)
        s.next_distribution(0)
        s.force(s.topk(2)[1][0])
        s.fork().run().attention  # noqa: B018 (the property's reads are what the audit counts)
        tr.token_probs(src, s.target_ids)
        tr.attend(text, "A dog runs.")
        for k in (1, 3):
            beam_search(model, src, k)
        beam_translate_batch(tr, [text], 2)


def test_a_step_uploads_its_token_and_copies_to_the_host_once(tiny_translator, audit):
    """The session keeps its keys/values and states on the device: a step builds its cache there, uploads
    the one token it feeds, and copies its attention rows and greedy choice back in one transfer."""
    tr = tiny_translator
    with audit:
        s = tr.start("Ein Hund rennt.")
    assert len(audit.reads) == 2 and len(audit.uploads) == 2, (audit.reads, audit.uploads)  # encode + BOS step
    for move in ("step", "step", "force", "fork"):
        assert not s.done
        piece = s.topk(2)[1][0]
        audit.reads.clear(), audit.uploads.clear()
        with audit:
            if move == "step":
                s.step()
            elif move == "force":
                s.force(piece)
            else:
                s.fork().step()
        assert audit.reads == ["cpu"] and audit.uploads == ["tensor"], (move, audit.reads, audit.uploads)
    audit.reads.clear(), audit.uploads.clear()
    with audit:
        s.topk(5)
        s.attention  # noqa: B018 (the audited read: host arrays only)
    assert audit.reads == ["cpu"] and audit.uploads == []


def test_session_state_lives_on_the_translators_device(tiny_translator):
    tr = tiny_translator
    s = tr.start("Ein Mann sitzt.").run()
    dev = torch.device(DEVICE).type
    assert isinstance(s.cross_k, Tensor) and s.cross_k.device.type == dev and s.cross_v.device.type == dev
    L, H, d = tr.config.n_decoder_layers, tr.config.n_heads, tr.config.d_head
    assert s.cross_k.shape == (L, H, len(s.source_ids), d)
    for t, p in enumerate(s.positions):
        assert p.k.shape == p.v.shape == (L, H, d) and p.hidden.shape == (tr.config.d_model,)
        assert {p.k.device.type, p.v.device.type, p.hidden.device.type} == {dev}
        assert isinstance(p.self_row, np.ndarray) and p.self_row.shape == (L, H, t + 1)
        assert isinstance(p.cross_row, np.ndarray) and p.cross_row.shape == (L, H, len(s.source_ids))
        # each owns its storage: pickling a position never drags a whole cache along
        for t_ in (p.k, p.v, p.hidden):
            assert t_.untyped_storage().nbytes() == t_.numel() * t_.element_size()


# -- an accelerator emulated on the CPU (tests/emulated_device.py): numpy cannot read its tensors, an op cannot
# mix them with host tensors, and every host transfer is counted. Every handler and API function runs under it.

from tests.emulated_device import EMULATED, EmulatedDevice, OnDevice, Transfers, emulate, to_device


@pytest.fixture(scope="module")
def emulated(tiny_trained):
    """The tiny trained model on the emulated device, and the same model on the CPU to compare with."""
    from transformer.decode.decoding import Translator
    cpu = Translator.load(tiny_trained, device="cpu")
    return emulate(cpu), cpu


@pytest.fixture()
def on_device(emulated, monkeypatch):
    """(translator on the emulated device, Transfers being counted, feeds): feeds[0] counts the decoding
    passes computed (session.advance: one a position of one or several sessions), so a test can pin the host
    transfers per step."""
    from transformer.decode import session
    feeds, advance = [0], session.advance

    def counted(*a, **k):
        feeds[0] += 1
        return advance(*a, **k)

    monkeypatch.setattr(session, "advance", counted)
    with EmulatedDevice(), Transfers() as transfers:
        yield emulated[0], transfers, feeds


def test_the_emulated_device_refuses_what_cuda_refuses():
    with EmulatedDevice(), Transfers() as t:
        x = to_device(torch.arange(6, dtype=torch.float32))  # (6,)
        y = x * 2 + 1  # results stay on the device
        assert isinstance(y, OnDevice) and y.device == EMULATED and isinstance(y[1:].sum(), OnDevice)
        for read in (lambda: np.asarray(y), lambda: y.numpy(), lambda: np.stack([y, y]), lambda: np.array(y[0])):
            with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
                read()
        with pytest.raises(RuntimeError, match="same device"):
            y + torch.ones(6)  # a host tensor in a device op
        assert t.to_host == [] and t.uploads == []
        host = y.cpu()
        assert type(host) is Tensor and host.numpy().tolist() == [1, 3, 5, 7, 9, 11]
        assert type(y.to("cpu")) is Tensor and type(y.to(torch.device("cpu"), torch.float64)) is Tensor
        assert y.tolist()[0] == 1 and y[1].item() == 3 and int(y[2]) == 5 and bool(y[0])
        assert t.to_host == ["cpu", "to", "to", "tolist", "item", "__int__", "__bool__"]
        assert isinstance(y.to(EMULATED), OnDevice) and isinstance(y.to(torch.float64), OnDevice)
        made = torch.zeros(2, device=EMULATED), torch.tensor([1, 2], device=EMULATED), torch.ones(2).to(EMULATED)
        assert all(isinstance(m, OnDevice) for m in made) and t.uploads == ["tensor", "to"]
        assert not isinstance(torch.zeros(2), OnDevice)  # the host stays the host
        assert len(t.to_host) == 7  # moving within the device, or making tensors there, copies nothing back


def test_decoding_state_lives_on_the_emulated_device(on_device, emulated):
    tr, _, _ = on_device
    from attention_lens.translate import handlers as decoding_views
    state, _text, _payload, topk = decoding_views.start(tr, "Ein Hund rennt.")
    assert isinstance(state.cross_k, OnDevice) and isinstance(state.cross_v, OnDevice)
    for p in state.positions:
        assert isinstance(p.k, OnDevice) and isinstance(p.v, OnDevice) and isinstance(p.hidden, OnDevice)
        assert type(p.self_row) is np.ndarray and type(p.cross_row) is np.ndarray
    cpu = emulated[1]
    s = decoding_views.run(tr, state)[0]
    assert s.translation == cpu.translate("Ein Hund rennt.")  # the same answers as on the CPU
    ref = decoding_views.start(cpu, "Ein Hund rennt.")
    assert [p for p, _ in topk["items"]] == [p for p, _ in ref[3]["items"]]
    np.testing.assert_allclose([q for _, q in topk["items"]], [q for _, q in ref[3]["items"]], atol=1e-6)


def test_start_copies_to_the_host_once_per_decoding_step(on_device, tiny_pairs):
    """Start decodes the whole sentence: one host copy per position (its attention rows and greedy choice),
    plus the encoder's self-attention and the top-k rows of every position (one projection)."""
    tr, t, feeds = on_device
    from attention_lens.translate import handlers as decoding_views
    for de in ("Ein Hund rennt.", tiny_pairs[3][0], "Ein Mann. " * 6):
        t.clear()
        feeds[0] = 0
        state = decoding_views.start(tr, de)[0]
        T = len(state.positions)
        assert feeds[0] == T and t.to_host == ["cpu"] * (T + 2), (de, T, t.to_host)
        assert t.uploads == ["tensor"] * (1 + T)  # the source once, then one token id per position


def _handler_calls(tr, s0, fresh, pos, alt, h):
    """(name, call, host copies besides one per decoding position computed). s0: a started session (whole
    history, cursor 0); fresh: a session with only <s> computed; pos: the view at step 1 of s0's history."""
    other = dict(pos, ids=[pos["ids"][0], tr.tokenizer.piece_id(alt)], forced=[0, 1])  # not in the history:
    # at_position decodes it again from the source
    return [("step", lambda: h.step(tr, fresh), 1), ("step along the history", lambda: h.step(tr, s0), 1),
            ("run", lambda: h.run(tr, fresh), 1), ("back", lambda: h.back(tr, s0), 1),
            ("goto", lambda: h.goto(tr, s0, 2), 1), ("reset", lambda: h.reset(tr, s0), 1),  # the history's own step 0
            ("step_view", lambda: h.step_view(tr, s0), 1), ("force", lambda: h.force(tr, fresh, alt), 1),
            ("force_at", lambda: h.force_at(tr, s0, pos, alt), 1),
            ("force_at, decoded again", lambda: h.force_at(tr, s0, other, alt), 2),
            ("at_position", lambda: h.at_position(tr, s0, pos), 0),
            ("at_position, decoded again", lambda: h.at_position(tr, s0, other), 1),
            ("reference", lambda: h.reference(tr, "Ein Hund rennt.", "A dog runs."), 1),
            ("reference_at", lambda: h.reference_at(tr, s0, "A dog runs."), 2),  # encoder, top-k rows
            # three encodings (prefix, intact, ablated), two teacher-forced passes, two top-k
            ("ablate", lambda: h.ablate(tr, s0, ["L1 H1"], ["L1 H2"], ["L2 H1"]), 7),
            ("ablate_at", lambda: h.ablate_at(tr, s0, ["L1 H1"], [], [], 8, pos), 7),
            ("across_layers", lambda: h.across_layers(tr, s0), 0),
            ("across_layers_at", lambda: h.across_layers_at(tr, s0, "layer 1", 0.2, pos), 0),
            ("across_layers_follow", lambda: h.across_layers_follow(tr, s0, "all layers", 0.2, pos), 0),
            ("export_maps", lambda: h.export_maps(tr, s0), 0), ("export_at", lambda: h.export_at(tr, s0, pos), 0),
            ("/attention", lambda: h.api_attention(tr, "Ein Hund rennt."), 1),
            ("/attention_compact", lambda: h.api_attention_compact(tr, "Ein Hund rennt."), 1),
            ("inside_at", lambda: h.inside_at(tr, s0, pos, "cross", 0, 1), 1),  # one teacher-forced pass
            ("/inside", lambda: h.api_inside(tr, "Ein Hund rennt.", "decoder_self", 1, 0, 2), 2),  # encoder, pass
            ("model_card", lambda: h.model_card(tr, {}), 0),
            ("attribution_at", lambda: h.attribution_at(tr, s0, pos, "alti"), 1),  # one pass, one host copy
            ("/attribution", lambda: h.api_attribution(tr, "Ein Hund rennt.", "alti"), 2),  # encoder, the pass
            ("word_alignment_at", lambda: h.word_alignment_at(tr, s0, "alti", pos), 3)]  # the three methods


# what the emulated-device tests call, and what they need not: the rest of the handlers' functions run no model
# (input checks, file housekeeping) or run inside the called ones (outputs, topk_rows, decoded, beam_payload, ...)
RUN_ON_THE_DEVICE = {"start", "step", "run", "back", "goto", "reset", "step_view", "force", "force_at", "at_position",
                     "reference", "ablate", "ablate_at", "across_layers", "across_layers_at", "across_layers_follow",
                     "export_maps", "export_at", "api_attention", "api_attention_compact", "inside_at", "api_inside",
                     "model_card", "api_translate", "beam", "beam_pick", "beam_started", "learned", "learned_at",
                     "reference_at", "attribution_at", "api_attribution", "word_alignment_at"}
NO_MODEL_OR_INSIDE_THOSE = {"fail", "need_session", "check_k", "check_piece", "choice_index", "parse_head_labels",
                            "head_choices", "noop", "export_root", "gradio_cache", "prune_exports", "end_session",
                            "export_event", "figures_html", "outputs", "trajectory_outputs", "decoded", "for_page",
                            "beam_payload", "source_problem", "reference_problem", "tell_notes",
                            "word_alignment_follow",  # word_alignment_at with the session's own model
                            # helpers of the handlers: text and tables, input checks, files; or run inside the
                            # handlers above (beam_ids in beam, whole in attribution_at)
                            "alignment_headers", "alignment_summary", "alignment_table", "beam_ids", "check_method",
                            "data_rows", "device_words", "epoch_words", "new_export_dir", "plain_set",
                            "prune_dead_processes", "session_key", "set_words", "told", "unreachable",
                            "validation_rows", "weights_words", "whole"}


HANDLER_MODULES = ("shell.api", "translate.attribution", "translate.handlers", "shell.exports", "shell.inputs",
                   "ablation.handlers", "beam.handlers", "layers.handlers", "learned.handlers", "model.handlers")


def handlers() -> SimpleNamespace:
    """Every public function of the modules of attention_lens/ that hold the page's and the API's handlers, by name."""
    import importlib
    out = {}
    for name in HANDLER_MODULES:
        m = importlib.import_module(f"attention_lens.{name}")
        out.update({n: f for n, f in vars(m).items()
                    if callable(f) and not n.startswith("_") and getattr(f, "__module__", None) == m.__name__})
    return SimpleNamespace(**out)


def test_every_handler_is_run_on_the_emulated_device():
    """A new handler joins RUN_ON_THE_DEVICE (and a test above calls it) or says why it need not."""
    h = handlers()
    functions = {n for n in vars(h) if not n.isupper()}
    missing = functions - RUN_ON_THE_DEVICE - NO_MODEL_OR_INSIDE_THOSE
    assert not missing, f"run these under the emulated device (tests/test_device.py): {sorted(missing)}"


def test_every_handler_runs_on_the_device_with_one_host_copy_per_step(on_device):
    tr, t, feeds = on_device
    from attention_lens.translate import handlers as decoding_views
    s0 = decoding_views.start(tr, "Ein Hund rennt.")[0]
    assert len(s0.positions) >= 3, "the tiny model should translate this into a few pieces"
    fresh = tr.start_ids(s0.source_ids)
    tok = tr.tokenizer
    alt = next(p for p, _ in fresh.topk(5)[1:] if tok.piece_id(p) not in (tok.pad_id, tok.bos_id, tok.eos_id))
    pos = {"step": 1, "ids": [p.token for p in s0.positions[:2]], "forced": [0, 0]}
    for name, call, fixed in _handler_calls(tr, s0, fresh, pos, alt, handlers()):
        t.clear()
        feeds[0] = 0
        call()
        assert set(t.to_host) <= {"cpu"} and len(t.to_host) == feeds[0] + fixed, (name, feeds[0], t.to_host)


def test_greedy_decoding_and_beam_search_read_the_device_once_per_step(on_device, emulated):
    """translate / translate_batch / the atlas's BLEU (batched greedy decoding): one `bool` per step that
    asks whether every sentence has ended, plus three fixed reads (padding present, lengths, the ids).
    Beam search: one copy of the candidates per step, and the best hypothesis's maps once."""
    tr, t, _ = on_device
    from attention_lens.beam import handlers as beam_handlers
    from attention_lens.shell import api
    from attention_lens.translate import handlers as decoding_views
    from transformer.train import atlas
    texts = ["Ein Hund rennt.", "Eine Katze schläft.", "Ein Mann sitzt."]
    ids = [tr.translate_ids([tr.source_ids(x)])[0] for x in texts]
    for name, call, steps in [
            ("translate", lambda: tr.translate(texts[0]), len(ids[0])),
            ("/translate", lambda: api.api_translate(tr, texts[1]), len(ids[1])),
            ("translate_batch", lambda: tr.translate_batch(texts), max(map(len, ids))),
            ("atlas corpus_bleu", lambda: atlas.corpus_bleu(tr, [(x, "A dog runs.") for x in texts]),
             max(map(len, ids)))]:
        t.clear()
        call()
        assert len(t.to_host) == steps + 3 and t.to_host.count("__bool__") == steps + 1, (name, t.to_host)
    assert tr.translate_batch(texts) == emulated[1].translate_batch(texts)
    t.clear()
    state = beam_handlers.beam(tr, texts[0], 3)[0]
    beam_steps = len(state["tree"]) - 1
    assert t.to_host == ["tolist"] * beam_steps + ["cpu"], t.to_host
    t.clear()
    beam_handlers.beam_pick(tr, state, "2.")
    assert t.to_host == ["cpu"]
    started = decoding_views.start(tr, texts[1])[0]
    t.clear()
    state = beam_handlers.beam_started(tr, started, 2)[0]  # the Beam tab's button: the sentence started in Translate
    assert t.to_host == ["tolist"] * (len(state["tree"]) - 1) + ["cpu"], t.to_host


def test_history_and_inside_on_the_device(on_device, tmp_path):
    """Training's attention snapshot (it runs on the training device) and the Learned tab reading it back,
    and the inside-one-head pass."""
    tr, t, _ = on_device
    from attention_lens.learned import handlers as learned_handlers
    from attention_lens.translate import handlers as decoding_views
    from transformer.interpret.history import AttentionHistory, save_history
    from transformer.train.train import snapshot_attention
    texts = ["Ein Hund rennt.", "Eine Katze schläft."]
    snap = snapshot_attention(tr.model, tr.tokenizer, texts, tr.config.max_len)
    save_history(tmp_path / "h.npz", texts, tr.tokenizer, [{"epoch": 1, "snap": snap}])
    history = AttentionHistory.load(tmp_path / "h.npz")
    _fig, text = learned_handlers.learned(history, 0, 1)
    assert text == tr.translate(texts[0]) and learned_handlers.learned_at(history, 1, 1)[1] == tr.translate(texts[1])
    s = decoding_views.start(tr, texts[0])[0]
    t.clear()
    inside = s.inside("cross", 0, 1, norms=True)
    assert t.to_host == ["cpu"] and type(inside.weights) is np.ndarray


# -- the branches written for an accelerator, taken on the CPU: EmulatedAccelerator (tests/emulated_device.py)
# presents EMULATED as an accelerator to transformer.model.device.is_accelerator, with a random generator of its own
# that
# dropout draws from, as CUDA's dropout draws from the CUDA generator

from tests.emulated_device import ACCELERATOR_NAME, EmulatedAccelerator


def test_the_emulated_accelerator_is_one_to_the_library_and_has_its_own_generator():
    from transformer.model import device as D
    x = torch.ones(64)
    assert not D.is_accelerator(EMULATED) and D.rng_state("cpu") is None
    with EmulatedAccelerator() as acc:
        assert D.is_accelerator(EMULATED) and not D.is_accelerator("cpu") and D.describe(EMULATED) == ACCELERATOR_NAME
        D.manual_seed(5)
        state, cpu = D.rng_state(EMULATED), torch.get_rng_state()
        a = torch.nn.functional.dropout(x, 0.5)
        assert torch.equal(torch.get_rng_state(), cpu) and not torch.equal(D.rng_state(EMULATED), state)
        D.set_rng_state(EMULATED, state)
        assert torch.equal(torch.nn.Dropout(0.5)(x), a)  # the same mask again: it came from acc.generator
        acc.generator.manual_seed(6)
        assert not torch.equal(torch.nn.functional.dropout(x, 0.5), a)
    assert not D.is_accelerator(EMULATED) and D.describe(EMULATED).startswith("CPU")


def test_training_on_an_accelerator_pauses_and_resumes_exactly(tmp_path):
    """The accelerator's generator is saved with the state and put back on --resume (new_model reseeds it):
    paused and resumed equals uninterrupted, in bf16 autocast, and the run says which device it trained on."""
    from transformer.train import train
    from transformer.train.train_state import STATE
    common = ["--dry-run", "--no-progress", "--epochs", "2", "--device", str(EMULATED), "--amp", "bf16"]
    with EmulatedAccelerator():
        whole = train.main(common + ["--out", str(tmp_path / "whole")])
        train.main(common + ["--out", str(tmp_path / "parts"), "--stop-after-steps", "5"])
        paused = torch.load(tmp_path / "parts" / STATE, weights_only=True)
        train.main(common + ["--out", str(tmp_path / "parts"), "--resume"])
    assert whole["device"] == ACCELERATOR_NAME and paused["step"] == 5
    assert [sorted(r) for r in paused["rngs"]] == [["cpu", "device"]]
    a, b = (torch.load(tmp_path / d / STATE, weights_only=True) for d in ("whole", "parts"))
    assert a["step"] == b["step"] > 5
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name


def test_the_app_leaves_an_accelerators_threads_alone(monkeypatch, emulated, capsys):
    """app.py keeps a CPU model to one thread per request; on an accelerator it leaves torch's threads be."""
    import attention_lens as ui
    from attention_lens import launch as app
    from attention_lens.shell import memory
    from transformer.decode.decoding import Translator
    threads = []
    monkeypatch.setattr(Translator, "load", lambda *a, **k: emulated[0])
    monkeypatch.setattr(memory, "tune_allocator", dict)
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    monkeypatch.setattr(ui, "build_demo", lambda tr: type("Demo", (), {"launch": lambda self, **k: None})())
    with EmulatedAccelerator():
        app.main([])
    assert threads == [] and f"loaded on {ACCELERATOR_NAME}" in capsys.readouterr().out
    app.main([])  # the same translator, its device no accelerator now
    assert threads == [1] and "loaded on CPU" in capsys.readouterr().out
