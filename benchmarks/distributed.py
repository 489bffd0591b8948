"""The ``neuron`` process group against plain gloo on CPU tensors, on this machine.

Two ranks (``torch.multiprocessing`` spawn, one process per logical core, as torchrun
would start them), single-threaded, each rank in one process group ``neuron`` for its
neuron tensors and a ``gloo`` group for CPU tensors, so both run in the same processes
over the same loopback TCP:

- ``all_reduce``: SUM of float32 tensors from 4 KiB to 64 MiB, the two engines' calls
  interleaved; median time, algorithm and bus bandwidth by the nccl-tests convention
  (busbw = size / time * 2(p-1)/p), the ratio neuron / gloo (our overhead), and what the
  cost model estimates for the same all_reduce between two logical cores of a trn2 chip.
- ``ddp``: one DistributedDataParallel training step (forward, backward with the bucketed
  gradient all-reduce, SGD) of the GPT-style stack of benchmarks/gpt_stack.py, each rank
  on half the stack's batch: on neuron (eager device, and ``torch.compile(backend=
  "neuron")``) against CPU + gloo (eager and Inductor); steps interleaved, medians.

Times are wall-clock on a shared 2-core machine: read the ratios, not the absolute
figures. Fallback to the CPU is off in the ranks (``TORCHNEURON_NO_FALLBACK=1``).

    python benchmarks/distributed.py [--part all_reduce|ddp|all] [--repeats 20] [--steps 8]
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import sys
import tempfile
import time

# Read at start-up by the spawned ranks too (they inherit the environment).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
os.environ["TORCHNEURON_NO_FALLBACK"] = "1"
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))

import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]  # bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _bus_bandwidth(nbytes: int, seconds: float) -> float:
    return nbytes / seconds * 2 * (WORLD - 1) / WORLD


def bench_all_reduce(rank: int, gloo, repeats: int) -> list[tuple]:
    from torchneuron.estimate.collectives import estimate_collective

    rows = []
    for nbytes in SIZES:
        numel = nbytes // 4
        on_device = torch.ones(numel, device="neuron")
        on_cpu = torch.ones(numel)
        engines = {
            "neuron": lambda t=on_device: dist.all_reduce(t),
            "gloo": lambda t=on_cpu: dist.all_reduce(t, group=gloo),
        }
        for fn in engines.values():  # warm: connections, buffers, first page faults
            fn()
        times = {name: [] for name in engines}
        for _ in range(repeats):
            for name, fn in engines.items():
                dist.barrier(group=gloo)
                times[name].append(_timed(fn))
        # Every rank's median; the slowest rank's is the collective's time.
        medians = torch.tensor([statistics.median(times[n]) for n in engines])
        dist.all_reduce(medians, op=dist.ReduceOp.MAX, group=gloo)
        neuron_s, gloo_s = medians.tolist()
        expected = float(WORLD ** (repeats + 1))  # doubled by the warm-up and each repeat
        if on_device[0].item() != expected or on_cpu[0].item() != expected:
            raise RuntimeError(f"all_reduce of {nbytes} bytes summed wrong")
        estimate = estimate_collective("all_reduce", nbytes, list(range(WORLD)))
        rows.append((nbytes, neuron_s, gloo_s, estimate.seconds))
    return rows


def _ddp_engines(gloo):
    """name -> (DDP model, its optimizer, its inputs)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpt_stack import make_inputs, make_model
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = dist.get_rank()
    tokens, targets = make_inputs()
    per_rank = tokens.shape[0] // WORLD
    rows = slice(rank * per_rank, (rank + 1) * per_rank)
    tokens, targets = tokens[rows], targets[rows]
    engines = {}
    for name, device, group, compiler in (
        ("eager cpu + gloo", "cpu", gloo, None),
        ("inductor cpu + gloo", "cpu", gloo, "inductor"),
        ("eager neuron", "neuron", None, None),
        ("compiled neuron", "neuron", None, "neuron"),
    ):
        ddp = DDP(make_model().to(device), process_group=group)
        fn = torch.compile(ddp, backend=compiler) if compiler else ddp
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        engines[name] = (fn, opt, tokens.to(device), targets.to(device))
    return engines


def bench_ddp(rank: int, gloo, steps: int) -> dict[str, tuple[float, float]]:
    engines = _ddp_engines(gloo)

    def step(name):
        fn, opt, tokens, targets = engines[name]
        loss = fn(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach().cpu())  # the step's results are computed

    first, first_loss = {}, {}
    for name in engines:  # the compiled engines compile here
        dist.barrier(group=gloo)
        start = time.perf_counter()
        first_loss[name] = step(name)
        first[name] = time.perf_counter() - start
    # Same weights, same inputs: every engine's first loss is the same number.
    reference = first_loss["eager cpu + gloo"]
    for name, loss in first_loss.items():
        if abs(loss - reference) > 1e-4 * abs(reference):
            raise RuntimeError(f"{name}: first loss {loss} != eager CPU's {reference}")
    times = {name: [] for name in engines}
    for _ in range(steps):
        for name in engines:
            dist.barrier(group=gloo)
            times[name].append(_timed(lambda name=name: step(name)))
    medians = torch.tensor([statistics.median(times[n]) for n in engines])
    firsts = torch.tensor([first[n] for n in engines])
    dist.all_reduce(medians, op=dist.ReduceOp.MAX, group=gloo)
    dist.all_reduce(firsts, op=dist.ReduceOp.MAX, group=gloo)
    return {n: (m, f) for n, m, f in zip(engines, medians.tolist(), firsts.tolist(), strict=True)}


def _rank(rank: int, port: int, args) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(WORLD),
    )
    torch.set_num_threads(1)
    # Dynamo's graph-break notes about DDP's hooks; the figures are what matters here.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\._dynamo")
    import torchneuron  # noqa: F401  (registers the device, the backend and "neuron" group)

    dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=300))
    gloo = dist.new_group(backend="gloo")
    if args.part in ("all_reduce", "all"):
        rows = bench_all_reduce(rank, gloo, args.repeats)
        if rank == 0:
            _print_all_reduce(rows, args.repeats)
    if args.part in ("ddp", "all"):
        result = bench_ddp(rank, gloo, args.steps)
        if rank == 0:
            _print_ddp(result, args.steps)
    dist.destroy_process_group()


def _print_all_reduce(rows, repeats: int) -> None:
    print(f"\nall_reduce SUM float32, {WORLD} ranks on this host, median of {repeats}")
    print(
        f"{'size':>8} | {'neuron us':>10} {'busbw GB/s':>10} | {'gloo us':>9} "
        f"{'busbw GB/s':>10} | {'neuron/gloo':>11} | {'trn2 estimate us':>16}"
    )
    for nbytes, neuron_s, gloo_s, estimate_s in rows:
        size = f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"
        print(
            f"{size:>8} | {neuron_s * 1e6:10.1f} {_bus_bandwidth(nbytes, neuron_s) / 1e9:10.3f} | "
            f"{gloo_s * 1e6:9.1f} {_bus_bandwidth(nbytes, gloo_s) / 1e9:10.3f} | "
            f"{neuron_s / gloo_s:10.2f}x | {estimate_s * 1e6:16.2f}"
        )


def _print_ddp(result: dict[str, tuple[float, float]], steps: int) -> None:
    print(
        f"\nDDP training step of benchmarks/gpt_stack.py, {WORLD} ranks, half the batch each, "
        f"median of {steps}"
    )
    base = result["eager cpu + gloo"][0]
    inductor = result["inductor cpu + gloo"][0]
    print(f"{'engine':>20} | {'step ms':>8} | {'x eager cpu':>11} | {'x inductor':>10} | first s")
    for name, (median, first) in result.items():
        print(
            f"{name:>20} | {median * 1e3:8.1f} | {median / base:10.2f}x | "
            f"{median / inductor:9.2f}x | {first:7.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all_reduce", "ddp", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=20, help="all_reduce calls per size")
    parser.add_argument("--steps", type=int, default=8, help="timed DDP steps per engine")
    args = parser.parse_args()
    mp.start_processes(_rank, args=(_free_port(), args), nprocs=WORLD, start_method="spawn")


if __name__ == "__main__":
    main()
