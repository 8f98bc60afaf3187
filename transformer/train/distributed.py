"""Data-parallel training across processes with torch.distributed.

    torchrun --nproc_per_node N [--nnodes M ...] -m transformer.train ...

torchrun sets WORLD_SIZE, RANK and LOCAL_RANK; without them training is one plain process and nothing here
touches torch.distributed. Under torchrun every process joins the job, one process too (torchrun
--nproc_per_node 1: the same code path as N, which is how one GPU checks NCCL). On CUDA each process drives
cuda:LOCAL_RANK over NCCL; on CPU the processes talk over gloo.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.distributed as tdist

from ..model.device import resolve_device

# Rank 0 validates and writes checkpoints while the others wait at a barrier: allow for a long validation.
TIMEOUT = timedelta(minutes=float(os.environ.get("ATTENTION_LENS_DIST_TIMEOUT_MIN", "60")))


def env_world() -> tuple[int, int, int]:
    """(world_size, rank, local_rank) from torchrun's environment; (1, 0, 0) without it."""
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", str(rank)))
    except ValueError as e:
        raise ValueError(f"bad torchrun environment (WORLD_SIZE/RANK/LOCAL_RANK): {e}") from None
    if world < 1 or not 0 <= rank < world or local < 0:
        raise ValueError(f"bad torchrun environment: WORLD_SIZE={world} RANK={rank} LOCAL_RANK={local}")
    return world, rank, local


@dataclass
class Dist:
    """This process's place in the job; `active` False is a plain single process."""
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    active: bool = False  # in a torch.distributed process group (launched by torchrun)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over all processes (float64: exact for counts below 2**53)."""
        if not self.active:
            return [float(v) for v in values]
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        tdist.all_reduce(t, op=tdist.ReduceOp.SUM)
        return t.tolist()

    def broadcast(self, obj):
        """Rank 0's `obj` (any picklable object), on every process."""
        if not self.active:
            return obj
        box = [obj if self.is_main else None]
        tdist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]

    def gather(self, obj) -> list:
        """Every process's `obj` (any picklable object), in rank order, on every process."""
        if not self.active:
            return [obj]
        out = [None] * self.world_size
        tdist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.active:
            if self.device.type == "cuda":
                tdist.barrier(device_ids=[self.device.index])
            else:
                tdist.barrier()

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """DistributedDataParallel(model) in a torchrun job (one process too), else the model itself."""
        if not self.active:
            return model
        from torch.nn.parallel import DistributedDataParallel
        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids, output_device=ids[0] if ids else None)

    def close(self) -> None:
        if self.active and tdist.is_initialized():
            tdist.destroy_process_group()


def init(device: str = "auto") -> Dist:
    """Join the torchrun job if there is one (nccl on CUDA, gloo on CPU) and pick this process's device."""
    world, rank, local = env_world()
    dev = resolve_device(device)
    if world == 1 and "TORCHELASTIC_RUN_ID" not in os.environ:  # not launched by torchrun
        return Dist(dev)
    if dev.type == "cuda":
        if local >= torch.cuda.device_count():
            raise ValueError(f"LOCAL_RANK={local} but torch sees only {torch.cuda.device_count()} CUDA device(s)")
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        tdist.init_process_group("nccl", timeout=TIMEOUT, device_id=dev)
    else:
        tdist.init_process_group("gloo", timeout=TIMEOUT)
    if tdist.get_world_size() != world or tdist.get_rank() != rank:
        raise RuntimeError(f"process group disagrees with the environment: {tdist.get_world_size()} "
                           f"processes, rank {tdist.get_rank()}; env says {world}, {rank}")
    return Dist(dev, world, rank, local, active=True)
