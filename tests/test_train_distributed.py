"""Data-parallel training: 2 processes under torchrun equal one process stepping on the union of their batches.

On CPU over gloo by default; ATTENTION_LENS_DDP_DEVICE=cuda runs the processes on cuda:0, cuda:1, ... over NCCL
and the single-process reference on cuda:0. ATTENTION_LENS_DDP_PROCS sets how many (default 2): the GPU lane
(.ci/gpu) runs as many as the machine has GPUs, so one GPU checks NCCL with one torchrun process, which joins
the job (DDP, all-reduces) as every process of a larger one does."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer.model.checkpoint import LOG, TOKENIZER
from transformer.model.metrics import read_metrics
from transformer.model.tokenizer import Tokenizer
from transformer.train import train

ROOT = Path(__file__).resolve().parent.parent
WORLD = int(os.environ.get("ATTENTION_LENS_DDP_PROCS", "2"))
DEVICE = os.environ.get("ATTENTION_LENS_DDP_DEVICE", "cpu")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and torch.cuda.device_count() < WORLD,
                                reason=f"ATTENTION_LENS_DDP_DEVICE=cuda needs {WORLD} GPUs")
# The tiny captions corpus alone (--tatoeba none), the one the single-process reference below reads; two whole
# epochs at --max-tokens 48 (about 7 batches an epoch: how many depends on the tokenizer SentencePiece trains,
# 5 on the GPU lane's machine, so the tests count them from the run's own tokenizer).
ARGS = ["--dry-run", "--tatoeba", "none", "--no-progress", "--epochs", "2", "--max-tokens", "48",
        "--seed", "3", "--dropout", "0", "--attn-dropout", "0", "--average-last", "1", "--label-smoothing", "0.1",
        "--clip", "0.5"]


def torchrun(out: Path, timeout: float = 300, args=ARGS) -> str:  # a guard against a hang (a loaded machine
    # needed > 150 s)
    """Run `torchrun --standalone --nproc_per_node 2 -m transformer.train` on DEVICE and return its output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ATTENTION_LENS_DIST_TIMEOUT_MIN": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={WORLD}",
           "-m", "transformer.train", *args, "--out", str(out), "--device", DEVICE]
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        output, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # torchrun and its workers
        output, _ = p.communicate()
        pytest.fail(f"torchrun did not finish in {timeout} s:\n{output[-3000:]}")
    assert p.returncode == 0, output[-3000:]
    return output


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "ck"
    return out, torchrun(out)


def epoch_steps(out: Path, tiny_dir) -> int:
    """Steps an epoch of ARGS: the batches of the tiny corpus under the run's tokenizer, WORLD a step (a tail of
    fewer than WORLD dropped)."""
    from transformer.train import data as D
    a = train.parse_args(ARGS)
    train.apply_dry_run(a)
    tok = Tokenizer.load(out / TOKENIZER)  # the one process 0 trained
    ex = train.encode_pairs(tok, D.load_pairs(tiny_dir, "train"), train.model_config(a, len(tok)).max_len)
    return len(train.step_groups([(len(s), len(t) + 1) for s, t in ex], a.max_tokens, a.seed, WORLD))


def reference(out: Path, tiny_dir, ranks=range(WORLD)):
    """One process: step i trains on the union of the batches that the processes `ranks` took at step i."""
    from transformer.train import data as D
    a = train.parse_args(ARGS)
    train.apply_dry_run(a)
    tok = Tokenizer.load(out / TOKENIZER)  # the one process 0 trained
    config = train.model_config(a, len(tok))
    ex = train.encode_pairs(tok, D.load_pairs(tiny_dir, "train"), config.max_len)
    lengths = [(len(s), len(t) + 1) for s, t in ex]
    total = len(train.step_groups(lengths, a.max_tokens, a.seed, WORLD)) * a.epochs
    model = train.new_model(config, a.seed, DEVICE)
    opt = train.new_optimizer(model, a)
    step, norms = 0, {}
    for epoch in range(1, a.epochs + 1):
        groups = train.step_groups(lengths, a.max_tokens, a.seed * 1000 + epoch, WORLD)
        for group in groups:
            train.set_lr(opt, train.lr_at(step, a.lr, a.warmup, total))
            batches = [train.make_tensors(ex, group[r], config.pad_id, config.bos_id, config.eos_id, DEVICE)
                       for r in ranks]
            norms.setdefault(epoch, []).append(
                train.train_step(model, opt, batches, config.pad_id, a.label_smoothing, a.clip)[2])
            step += 1
    assert step == total == 2 * epoch_steps(out, tiny_dir)
    return {k: v.cpu() for k, v in model.state_dict().items()}, {e: sum(n) / len(n) for e, n in norms.items()}


def test_two_processes_equal_one_process_on_the_union_of_their_batches(two_process_run, tiny_dir):
    out, _ = two_process_run
    got = torch.load(out / "train_state.pt", map_location="cpu", weights_only=True)
    assert got["step"] == 2 * epoch_steps(out, tiny_dir) and got["epoch"] == 2
    want, norms = reference(out, tiny_dir)
    # AdamW all but ignores the scale of the gradient (and clipping hides it), so check that directly:
    # the mean gradient norm (before clipping) of each epoch's steps
    log = json.loads((out / LOG).read_text())
    assert {e["epoch"]: e["grad_norm"] for e in log["epochs"]} == pytest.approx(norms, abs=2e-4)
    assert set(got["model"]) == set(want)
    for k in want:
        torch.testing.assert_close(got["model"][k], want[k], atol=1e-5, rtol=1e-5, msg=k)
    if WORLD > 1:  # the comparison can fail: training on process 0's batches alone ends elsewhere
        alone, _ = reference(out, tiny_dir, ranks=[0])
        assert max((alone[k] - want[k]).abs().max().item() for k in want) > 1e-3


def test_two_process_dry_run_records_world_size_and_only_process_0_writes(two_process_run, tiny_dir):
    out, output = two_process_run
    spe = epoch_steps(out, tiny_dir)
    m = read_metrics(out)
    assert m["world_size"] == WORLD and m["amp"] == "off" and m["steps"] == 2 * spe and m["epochs"] == 2
    log = json.loads((out / LOG).read_text())
    assert log["world_size"] == WORLD and [e["epoch"] for e in log["epochs"]] == [1, 2]
    assert log["epochs"][0]["step"] == spe
    lines = output.splitlines()
    assert sum(l.startswith("done:") for l in lines) == 1 and sum(l.startswith("model:") for l in lines) == 1
    assert f"x {WORLD} processes" in output
    assert f"device {'CUDA' if DEVICE == 'cuda' else 'CPU'}" in output, output[-2000:]  # where the 2 processes ran
    assert (out / "model.pt").exists() and (out / "attention_history.npz").exists()


def test_two_processes_paused_and_resumed_equal_an_uninterrupted_two_process_run(tmp_path):
    """With dropout on, each process draws its own masks: a pause (--stop-after-steps) saves every process's
    generators and --resume gives each its own back, so the weights end where an uninterrupted run's do."""
    args = [*ARGS, "--dropout", "0.3", "--attn-dropout", "0.3"]
    torchrun(tmp_path / "whole", args=args)
    torchrun(tmp_path / "parts", args=[*args, "--stop-after-steps", "1"])  # inside epoch 1 (2 steps or more)
    paused = torch.load(tmp_path / "parts" / "train_state.pt", map_location="cpu", weights_only=True)
    assert paused["step"] == 1 and paused["next_group"] == 1
    torchrun(tmp_path / "parts", args=[*args, "--resume"])
    a, b = (torch.load(tmp_path / d / "train_state.pt", map_location="cpu", weights_only=True)
            for d in ("whole", "parts"))
    assert a["step"] == b["step"] and a["epoch"] == b["epoch"] == 2
    for k in a["model"]:
        torch.testing.assert_close(b["model"][k], a["model"][k], atol=1e-6, rtol=0, msg=k)
    log = json.loads((tmp_path / "parts" / LOG).read_text())
    assert [(e["epoch"], e.get("paused_at_group")) for e in log["epochs"]] == [(1, 1), (1, None), (2, None)]


def test_one_process_under_torchrun_joins_the_job_and_a_plain_process_does_not(monkeypatch):
    """torchrun --nproc_per_node 1 runs the code of N processes (a process group, DDP, all-reduces): how the GPU
    lane checks NCCL on a machine with one GPU. Without torchrun's environment nothing touches torch.distributed."""
    import socket

    from torch.nn.parallel import DistributedDataParallel

    from transformer.train import distributed
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(k, raising=False)
    plain = distributed.init("cpu")
    assert not plain.active and plain.wrap(torch.nn.Linear(2, 2)).__class__ is torch.nn.Linear
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for k, v in {"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "TORCHELASTIC_RUN_ID": "test",
                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}.items():
        monkeypatch.setenv(k, v)
    d = distributed.init("cpu")
    try:
        assert d.active and torch.distributed.is_initialized() and torch.distributed.get_world_size() == 1
        assert isinstance(d.wrap(torch.nn.Linear(2, 2)), DistributedDataParallel)
        assert d.all_sum([2.0, 3.0]) == [2.0, 3.0] and d.broadcast({"a": 1}) == {"a": 1}
    finally:
        d.close()
    assert not torch.distributed.is_initialized()
