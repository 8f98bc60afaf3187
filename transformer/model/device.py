"""The one place where a device is chosen, and where code asks what kind of device it runs on.

Code that behaves differently on an accelerator (its own random generator, its name, CPU threading) asks
`is_accelerator(device)` rather than `device.type == "cuda"`, so that the test suite can take those branches on
the CPU: `EMULATED_ACCELERATORS` holds the devices a test presents as accelerators (tests/emulated_device.py
registers its emulated one there, with a generator of its own that dropout on it draws from, as CUDA's dropout
draws from CUDA's generator). Outside the tests it is empty.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Emulated:
    """An accelerator emulated on the CPU (tests): what `describe` calls it, and its random generator."""

    name: str
    generator: torch.Generator


EMULATED_ACCELERATORS: dict[torch.device, Emulated] = {}


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for, but torch sees no CUDA device")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {device!r}: use auto, cpu or cuda")
    return dev


def is_accelerator(device: str | torch.device) -> bool:
    """True for a device other than the host's CPU: CUDA, or an accelerator a test emulates
    (EMULATED_ACCELERATORS)."""
    device = torch.device(device)
    return device.type == "cuda" or device in EMULATED_ACCELERATORS


def manual_seed(seed: int) -> None:
    """Seed every generator: the CPU's, every CUDA device's (torch.manual_seed does both), and emulated ones'."""
    torch.manual_seed(seed)
    for e in EMULATED_ACCELERATORS.values():
        e.generator.manual_seed(seed)


def rng_state(device: str | torch.device) -> torch.Tensor | None:
    """The state of the generator that random ops on `device` draw from besides the CPU's (CUDA's own
    generator of that device); None for the CPU."""
    device = torch.device(device)
    if device in EMULATED_ACCELERATORS:
        return EMULATED_ACCELERATORS[device].generator.get_state()
    if device.type == "cuda":
        return torch.cuda.get_rng_state(device)
    return None


def set_rng_state(device: str | torch.device, state: torch.Tensor) -> None:
    """Put back a state `rng_state(device)` gave (nothing to do for the CPU)."""
    device = torch.device(device)
    if device in EMULATED_ACCELERATORS:
        EMULATED_ACCELERATORS[device].generator.set_state(state)
    elif device.type == "cuda":
        torch.cuda.set_rng_state(state, device)


def describe(device: torch.device) -> str:
    device = torch.device(device)
    if device in EMULATED_ACCELERATORS:
        return EMULATED_ACCELERATORS[device].name
    if is_accelerator(device):
        return f"CUDA: {torch.cuda.get_device_name(device)}"
    n = torch.get_num_threads()
    return f"CPU ({n} thread{'' if n == 1 else 's'})"
