"""Forward hooks registered for one context (transformer.interpret.capture.ContextHooks, the one place where their
registration and removal is written), and how many layers each attention kind has (capture.layers_of)."""
import pytest
import torch

from tests.conftest import small_model
from transformer.interpret.capture import (
    KINDS,
    AttentionRecorder,
    HeadAblation,
    attention_modules,
    layers_of,
    parse_heads,
)
from transformer.interpret.inside import HeadCapture, capture_inside


def hooks_on(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def refuse(monkeypatch, module, method: str):
    """Make `module.<method>` (a hook registration) fail, as a registration may half-way through."""
    def fail(*a, **k):
        raise RuntimeError("registration refused")
    monkeypatch.setattr(module, method, fail)


@pytest.mark.parametrize("make", ["recorder", "ablation", "capture"])
def test_a_registration_failing_half_way_leaves_no_hook_and_no_active_context(make, monkeypatch):
    model = small_model()
    last = list(attention_modules(model))[-1][2]  # the last module a registration reaches
    if make == "recorder":
        refuse(monkeypatch, last, "register_forward_hook")
        hooks = AttentionRecorder(model)
    elif make == "ablation":
        refuse(monkeypatch, last.out_proj, "register_forward_pre_hook")
        hooks = HeadAblation(model, [("encoder_self", 0, 1), ("decoder_self", 1, 0), ("cross", 1, 2)])
    else:
        refuse(monkeypatch, last.v_proj, "register_forward_hook")  # the value-norm hooks come last
        hooks = HeadCapture(model, "encoder_self", 0, norms=True)
    with pytest.raises(RuntimeError, match="registration refused"), hooks:
        pass
    assert hooks_on(model) == 0 and hooks.var.get() is None and not hooks.active()
    monkeypatch.undo()
    with hooks:  # and it can be entered again
        assert hooks_on(model) > 0 and hooks.active()
    assert hooks_on(model) == 0


def test_layers_of_counts_each_kinds_layers_everywhere():
    """An encoder and a decoder of different depths: every per-kind count follows the kind's own stack."""
    from transformer.train.atlas import all_heads
    model = small_model(n_encoder_layers=1, n_decoder_layers=3)
    want = {"encoder_self": 1, "decoder_self": 3, "cross": 3}
    for kind in KINDS:
        assert layers_of(model, kind) == layers_of(model.config, kind) == want[kind]
        assert len(AttentionRecorder(model).calls[kind]) == want[kind]
        assert sum(1 for k, _, _ in all_heads(model) if k == kind) == want[kind] * model.config.n_heads
    assert parse_heads(model, [("cross", 2, 0)]) == {("cross", 2, 0)}
    with pytest.raises(ValueError, match="layers 0..0"):
        parse_heads(model, [("encoder_self", 1, 0)])
    with pytest.raises(ValueError, match="unknown attention kind"):
        layers_of(model, "self")
    out = capture_inside(model, [5, 6, 2], [1, 7], "encoder_self", 0, 0, norms=True)
    assert {k: v.shape[0] for k, v in out["norms"].items()} == want
    with AttentionRecorder(model) as rec:
        model(torch.tensor([[5, 6, 2]]), torch.tensor([[1, 7]]))
    assert [len(rec.calls[k]) for k in KINDS] == [1, 3, 3]
