"""One rank of the DDP checks: run under torchrun, save what each check saw.

``python -m torch.distributed.run --nproc-per-node N ddp_worker.py train OUT`` trains a
tiny GPT-style stack (the structure of benchmarks/gpt_stack.py at 2 layers, d_model 32,
sequence 16) with ``DistributedDataParallel`` on ``neuron`` tensors, each rank on its
shard of a global batch, and saves ``OUT/rank<R>.pt``: per check, the losses, the
gradients after a backward and the parameters after training, on the CPU.
tests/distributed/test_ddp.py trains the same model in one process on the full batch and
compares, so a wrong value shows as a difference, not as a flag set here.

``ddp_worker.py kill OUT`` (ranks started by the test with torchrun's environment) has
the last rank killed by SIGKILL while the others wait in an ``all_reduce``; each survivor
writes ``OUT/survivor<R>.json`` (the error and how long the collective took to fail) and
exits with the error.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, D, HEADS, LAYERS, SEQ = 64, 32, 2, 2, 16
GLOBAL_BATCH = 8  # sequences per step, split evenly over the ranks (world 2 or 4)
STEPS = 3
LR = 0.5
BUCKET_CAP_MB = 0.01  # ~2600 float32 values a bucket: the model's gradients fill several
KILL_TIMEOUT_S = 20  # the process-group timeout of the kill check
DEVICE = "neuron"


def make_model() -> nn.Module:
    """benchmarks/gpt_stack.py's GPT at the tiny size above (``forward`` returns the
    loss), with the same initial weights in every process."""
    from benchmarks.gpt_stack import GPT

    torch.manual_seed(0)
    return GPT(VOCAB, D, HEADS, LAYERS, SEQ)


def make_batches(count: int, batch: int = GLOBAL_BATCH):
    """``count`` global batches of (tokens, targets), the same in every process."""
    g = torch.Generator().manual_seed(1)
    return [
        (
            torch.randint(0, VOCAB, (batch, SEQ), generator=g),
            torch.randint(0, VOCAB, (batch, SEQ), generator=g),
        )
        for _ in range(count)
    ]


def shard(batch, rank: int, world: int):
    """This rank's contiguous share of a global batch, on the device."""
    tokens, targets = batch
    per_rank = tokens.shape[0] // world
    rows = slice(rank * per_rank, (rank + 1) * per_rank)
    return tokens[rows].to(DEVICE), targets[rows].to(DEVICE)


def _cpu_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().cpu().clone() for name, p in module.named_parameters()}


def _cpu_grads(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().cpu().clone() for name, p in module.named_parameters()}


def _train(ddp: DDP, rank: int, world: int) -> dict:
    """``STEPS`` SGD steps on this rank's shards: losses, first gradients, final weights."""
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    losses, first_grads = [], None
    for step, batch in enumerate(make_batches(STEPS)):
        loss = ddp(*shard(batch, rank, world))
        loss.backward()
        if step == 0:
            first_grads = _cpu_grads(ddp.module)
        opt.step()
        opt.zero_grad(set_to_none=False)
        losses.append(loss.detach().cpu())
    return {
        "losses": torch.stack(losses),
        "grads": first_grads,
        "params": _cpu_state(ddp.module),
        "buckets": len(ddp.reducer._get_zeros_like_grad_buckets()),
    }


def check_bucketed(rank: int, world: int) -> dict:
    ddp = DDP(make_model().to(DEVICE), bucket_cap_mb=BUCKET_CAP_MB)
    assert next(ddp.module.parameters()).device.type == DEVICE
    return _train(ddp, rank, world)


def check_gradient_as_bucket_view(rank: int, world: int) -> dict:
    ddp = DDP(make_model().to(DEVICE), bucket_cap_mb=BUCKET_CAP_MB, gradient_as_bucket_view=True)
    result = _train(ddp, rank, world)
    # The gradients are views of the buckets: fewer storages than parameters.
    storages = {p.grad.untyped_storage().data_ptr() for p in ddp.module.parameters()}
    result["grad_storages"] = len(storages)
    result["parameters"] = len(list(ddp.module.parameters()))
    return result


def check_no_sync(rank: int, world: int) -> dict:
    """One step accumulating two micro-batches, the first under ``no_sync()``: the same
    as one step on the global batch of both."""
    ddp = DDP(make_model().to(DEVICE), bucket_cap_mb=BUCKET_CAP_MB)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    first, second = make_batches(2)
    with ddp.no_sync():
        (ddp(*shard(first, rank, world)) / 2).backward()
    unsynced = _cpu_grads(ddp.module)
    (ddp(*shard(second, rank, world)) / 2).backward()
    grads = _cpu_grads(ddp.module)
    opt.step()
    return {"unsynced_grads": unsynced, "grads": grads, "params": _cpu_state(ddp.module)}


CHECKS = {
    "bucketed": check_bucketed,
    "gradient_as_bucket_view": check_gradient_as_bucket_view,
    "no_sync": check_no_sync,
}


def train(out_dir: str) -> None:
    # As users make it: no backend named; neuron tensors find "neuron" from the device.
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {
        "world": world,
        "backend": dist.get_backend_config(),
        "device": torch.neuron.current_device(),
        "node": os.environ.get("GROUP_RANK"),
    }
    for name, check in CHECKS.items():
        start = time.monotonic()
        try:
            results[name] = check(rank, world)
            results[name]["seconds"] = time.monotonic() - start
        except Exception as error:  # recorded; the test shows it
            results[name] = {"error": f"{type(error).__name__}: {error}"[:2000]}
            traceback.print_exc()
    dist.destroy_process_group()
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))


def kill(out_dir: str) -> None:
    dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=KILL_TIMEOUT_S))
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.ones(1024, device=DEVICE)
    dist.all_reduce(t)  # every rank is up and connected
    if rank == world - 1:
        time.sleep(1.0)  # the others are inside the all_reduce below by now
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        t.cpu()
    except Exception as error:
        report = {"error": f"{type(error).__name__}: {error}", "seconds": time.monotonic() - start}
        with open(os.path.join(out_dir, f"survivor{rank}.json"), "w") as f:
            json.dump(report, f)
        raise
    raise AssertionError("all_reduce completed although a rank was killed")


if __name__ == "__main__":
    {"train": train, "kill": kill}[sys.argv[1]](sys.argv[2])
