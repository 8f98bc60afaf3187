"""DeviceAudit: a TorchFunctionMode that sees every torch call made while it is entered (tests/test_device.py
describes what it checks): a factory call without an explicit device fails, copies to the host and uploads are
counted. Shared by the test modules that audit a code path (no test module imports another)."""
import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

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
