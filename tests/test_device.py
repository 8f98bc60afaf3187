"""Device hygiene, checked on the CPU: what would mix devices or stall a GPU is visible as torch calls.

`DeviceAudit` is a TorchFunctionMode that sees every torch call made while it is entered. It fails on a
factory call (torch.tensor, torch.full, ...) without an explicit device: next to a CUDA model that tensor
would be on the CPU ("Expected all tensors to be on the same device"). And it counts copies to the host
(.cpu(), .item(), .tolist(), int(t), ... of a tensor that is not already a host copy) and uploads
(torch.tensor/as_tensor of host data, Tensor.to(device), torch.from_numpy), so a test can pin how many a
step makes. On the CPU these are all no-ops, which is why they have to be counted rather than timed.
"""
import numpy as np
import pytest
import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from tests.conftest import DEVICE
from transformer.beam import beam_search, beam_translate_batch
from transformer.decoding import greedy_decode, pad_batch

FACTORIES = {torch.tensor, torch.as_tensor, torch.full, torch.zeros, torch.ones, torch.empty, torch.arange,
             torch.rand, torch.randn, torch.randint, torch.eye, torch.linspace, torch.scalar_tensor}
READS = {"cpu", "item", "tolist", "numpy", "__int__", "__float__", "__bool__", "__index__", "__array__"}


class DeviceAudit(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.reads, self.uploads = [], []
        self._host = []  # results of .cpu(): reading them again costs nothing (kept alive, so ids stay unique)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if func in FACTORIES:
            data = args[0] if args else kwargs.get("data")
            if kwargs.get("device") is None and not (func is torch.as_tensor and isinstance(data, Tensor)):
                raise AssertionError(f"torch.{name} without device=: a CPU tensor next to a model on another device")
            if func in (torch.tensor, torch.as_tensor) and not isinstance(data, Tensor):
                self.uploads.append(name)
        elif args and isinstance(args[0], Tensor):
            if name in READS and not any(args[0] is h for h in self._host):
                self.reads.append(name)
            elif name in ("to", "cuda") and (name == "cuda" or any(
                    isinstance(a, (str, torch.device)) for a in list(args[1:]) + [kwargs.get("device")])):
                self.uploads.append(name)
        out = func(*args, **kwargs)
        if name == "cpu":
            self._host.append(out)
        return out


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
        s.fork().run().attention
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
        s.attention  # host arrays only
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
