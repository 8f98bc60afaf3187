"""An accelerator emulated on the CPU, so that the test suite sees what a GPU would refuse.

A CUDA tensor cannot be read by numpy (`np.asarray`, `np.stack`, `.numpy()` raise "can't convert cuda:0
device type tensor to numpy") and cannot meet a CPU tensor in one op ("Expected all tensors to be on the
same device"); it has to be copied to the host first (`.cpu()`, `.to("cpu")`), while `.tolist()`, `.item()`,
`int(t)`, `bool(t)` read it directly (each a device-to-host copy that waits for the device). On a CPU all of
that silently works, which is how a bug of that kind reaches a GPU untested.

`emulate(translator)` gives a copy of a translator whose parameters and buffers are `OnDevice` tensors: a
torch.Tensor subclass that behaves like a tensor on another device.

- Its results stay on the device (the subclass propagates through every op), and it reports its device as
  `EMULATED` (`cpu:0`, a CPU device with an index, so that the library's `device=translator.device` and
  `.to(translator.device)` mean "the accelerator" while `.to("cpu")` means "the host").
- numpy refuses it (TypeError, CUDA's message); an op mixing it with a host tensor of one or more
  dimensions raises CUDA's RuntimeError.
- `.cpu()` / `.to("cpu")` return a host copy (a plain tensor); `.tolist()`, `.item()`, `int()`, `float()`,
  `bool()` read it. Each of these is a host transfer, counted in `Transfers`.
- A factory call with `device=EMULATED` (torch.tensor, torch.full, torch.arange, ...) makes an `OnDevice`
  tensor, and `host_tensor.to(EMULATED)` uploads one; uploads are counted too.

Counting is per context (`with transfers:`), so a test can pin the host transfers of one handler call.

`EmulatedAccelerator()` is the other half: while it is entered, the library takes `EMULATED` for an
accelerator (`transformer.model.device.is_accelerator`, `describe`), so the branches written for CUDA run on the CPU;
and the accelerator has a random generator of its own that every dropout draws from (F.dropout, and the
fused attention's dropout), as dropout on CUDA draws from the CUDA generator and not the CPU's. Training with
`--device cpu:0` inside it trains on plain CPU tensors, with the accelerator's generator to save and restore.
"""
from __future__ import annotations

import copy
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Self

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import TorchFunctionMode

from transformer.model import device as library_device

EMULATED = torch.device("cpu", 0)
NUMPY_REFUSED = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                 "memory first.")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
READS = {"tolist", "item", "__int__", "__float__", "__bool__", "__index__", "__complex__"}
REFUSED = {"numpy", "__array__", "__array_wrap__"}
# ops whose tensor arguments may legitimately live on either side
NO_MIX_CHECK = {"to", "cpu", "copy_", "__get__", "__set__", "__setstate__", "__reduce_ex__", "__deepcopy__",
                "as_subclass", "__repr__", "__format__", "size", "dim", "numel", "element_size", "untyped_storage"}
FACTORIES = {torch.tensor, torch.as_tensor, torch.full, torch.zeros, torch.ones, torch.empty, torch.arange,
             torch.rand, torch.randn, torch.randint, torch.eye, torch.linspace, torch.scalar_tensor}


@dataclass
class Transfers:
    """The host transfers (device -> host) and uploads (host -> device) made while this object is entered."""

    to_host: list = field(default_factory=list)  # "cpu", "tolist", "item", "__bool__", ...
    uploads: list = field(default_factory=list)  # "tensor", "to", ...
    _token: object = None

    def __enter__(self) -> Self:
        self._token = _counting.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _counting.reset(self._token)

    def clear(self) -> None:
        self.to_host.clear()
        self.uploads.clear()


_counting: ContextVar[Transfers | None] = ContextVar("emulated_transfers", default=None)


def _count(kind: str, name: str) -> None:
    t = _counting.get()
    if t is not None:
        getattr(t, kind).append(name)


def _target(args, kwargs) -> torch.device | None:
    """The device a `.to(...)` call names (None: a dtype change only)."""
    device = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
    return None if device is None else torch.device(device)


def _same_device(t: Tensor, args, kwargs) -> Tensor:
    """`t.to(...)` with the device left out: only the dtype (if any) changes, as a plain tensor."""
    dtype = torch._C._nn._parse_to(*args[1:], **kwargs)[1]
    with torch._C.DisableTorchFunctionSubclass():
        return t if dtype is None or dtype == t.dtype else t.to(dtype)


def _is_emulated(device) -> bool:
    return device is not None and torch.device(device) == EMULATED


def _host_tensors(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor) and not isinstance(x, OnDevice) and x.dim() > 0:
                yield x


def to_device(t: Tensor) -> OnDevice:
    """A copy of a host tensor on the emulated device (no upload is counted: for setting up a test)."""
    with torch._C.DisableTorchFunctionSubclass():
        return t.detach().clone().as_subclass(OnDevice)


class OnDevice(Tensor):
    """A tensor on the emulated accelerator (see the module's docstring)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in REFUSED:
            raise TypeError(NUMPY_REFUSED)
        if func == Tensor.device.__get__:
            return EMULATED
        if name == "cpu" or (name == "to" and args and isinstance(args[0], OnDevice)):
            return cls._move(func, name, args, kwargs)
        if name in READS and args and isinstance(args[0], OnDevice):
            _count("to_host", name)
        elif name not in NO_MIX_CHECK and any(True for _ in _host_tensors(args, kwargs)):
            raise RuntimeError(f"{MIXED} (in {name})")
        return super().__torch_function__(func, types, args, kwargs)

    @classmethod
    def _move(cls, func, name, args, kwargs):
        target = torch.device("cpu") if name == "cpu" else _target(args, kwargs)
        if target is None or _is_emulated(target):  # a dtype change, or to the device it is on
            return _same_device(args[0], args, kwargs).as_subclass(OnDevice)
        if target.type != "cpu":
            raise RuntimeError(f"the emulated device cannot move a tensor to {target}")
        _count("to_host", name)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs).clone()  # a host copy: a plain tensor of its own


class _Factories(TorchFunctionMode):
    """Factory calls with device=EMULATED make OnDevice tensors; `.to(EMULATED)` of a host tensor uploads it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and _is_emulated(kwargs.get("device")):
            data = args[0] if args else kwargs.get("data")
            if func in (torch.tensor, torch.as_tensor) and isinstance(data, OnDevice):
                return func(*args, **{k: v for k, v in kwargs.items() if k != "device"})
            if func in (torch.tensor, torch.as_tensor):
                _count("uploads", func.__name__)
            out = func(*args, **dict(kwargs, device="cpu"))
            return to_device(out) if not isinstance(out, OnDevice) else out
        if getattr(func, "__name__", "") == "to" and args and isinstance(args[0], Tensor) \
                and not isinstance(args[0], OnDevice) and _is_emulated(_target(args, kwargs)):
            _count("uploads", "to")
            return to_device(_same_device(args[0], args, kwargs))
        return func(*args, **kwargs)


class EmulatedDevice:
    """`with EmulatedDevice():` makes factory calls with device=EMULATED land on the emulated device."""

    def __enter__(self) -> Self:
        self._mode = _Factories()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)


def emulate(translator):
    """A copy of `translator` (sharing its tokenizer) whose model lives on the emulated device: every
    parameter and buffer an OnDevice tensor (tied weights stay tied), `translator.device == EMULATED`."""
    tr = copy.copy(translator)
    tr.model = copy.deepcopy(translator.model).cpu().eval()
    moved: dict[int, OnDevice] = {}
    for module in tr.model.modules():
        for store in (module._parameters, module._buffers):
            for name, t in list(store.items()):
                if t is not None:
                    store[name] = moved.setdefault(id(t), to_device(t))
    tr.device = EMULATED
    return tr


ACCELERATOR_NAME = "emulated accelerator (the CPU, for the tests)"


class _DeviceDropout(TorchFunctionMode):
    """Every dropout draws its mask from `generator` (the emulated accelerator's), never from the CPU's."""

    def __init__(self, generator: torch.Generator):
        super().__init__()
        self.generator = generator

    def dropout(self, x: Tensor, p: float) -> Tensor:
        keep = torch.rand(x.shape, generator=self.generator, device=x.device) >= p
        return x * keep / (1 - p)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.dropout:
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            if training and p > 0:
                return self.dropout(args[0], p)
        elif func is F.scaled_dot_product_attention:
            names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
            a = {**dict(zip(names, args)), **kwargs}
            if a.get("dropout_p", 0.0) > 0:
                if a.get("is_causal") or a.get("enable_gqa"):
                    raise NotImplementedError("the emulated accelerator's attention dropout: no is_causal/enable_gqa")
                q, k, v, mask = a["query"], a["key"], a["value"], a.get("attn_mask")
                scores = q @ k.transpose(-2, -1) * (a.get("scale") or 1 / math.sqrt(q.size(-1)))
                if mask is not None:
                    scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
                return self.dropout(torch.softmax(scores, dim=-1), a["dropout_p"]) @ v
        return func(*args, **kwargs)


class EmulatedAccelerator:
    """`with EmulatedAccelerator() as acc:` EMULATED is an accelerator to the library (is_accelerator, describe,
    its generator in transformer.model.device's seeding and RNG state), and dropout draws from `acc.generator`."""

    def __enter__(self) -> Self:
        self.generator = torch.Generator()
        library_device.EMULATED_ACCELERATORS[EMULATED] = library_device.Emulated(ACCELERATOR_NAME, self.generator)
        self._mode = _DeviceDropout(self.generator)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)
        library_device.EMULATED_ACCELERATORS.pop(EMULATED, None)
