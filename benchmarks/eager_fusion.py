"""Adaptive eager execution: elementwise-heavy eager loops with fusion on and off.

Two workloads on ``neuron``, each timed with fusion on and off (``TORCHNEURON_EAGER_FUSION``,
toggled in this process and interleaved) and on the CPU:

- ``gelu``: GELU written out by hand (9 elementwise ops), applied 8 times in a row, then
  one ``.item()`` (a chain of 72 ops + a sum, cut at the fuser's cap);
- ``adam``: an Adam-like update written functionally (new tensors, no in-place ops) on
  8 parameter tensors, then one ``synchronize``.

Figures are per eager op (wall time of a step over the number of ATen ops it issues),
medians of repeats, single-threaded (OMP_NUM_THREADS=1, torch.set_num_threads(1),
TORCHNEURON_XLA_SINGLE_THREADED=1). Warm-up runs compile and verify every fused program
first; their time is printed apart ("fusion warm-up"), and so is what ``fusion.stats()``
says afterwards.

    python benchmarks/eager_fusion.py [--repeats 7] [--size 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))

import torch

import torchneuron  # noqa: F401  (registers the device if autoload is off)
from torchneuron import settings
from torchneuron.device import fusion

GELU_LAYERS = 8
ADAM_TENSORS = 8


def gelu_by_hand(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def gelu_step(x: torch.Tensor) -> float:
    for _ in range(GELU_LAYERS):
        x = gelu_by_hand(x)
    return x.sum().item()


def adam_step(state: list[list[torch.Tensor]], step: int) -> None:
    beta1, beta2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    correction1 = 1 - beta1**step
    correction2 = 1 - beta2**step
    for entry in state:
        p, g, m, v = entry
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        denominator = (v / correction2).sqrt() + eps
        p = p - (lr / correction1) * m / denominator
        entry[:] = [p, g, m, v]
    if state[0][0].device.type == "neuron":
        torch.neuron.synchronize()


def count_ops(step) -> int:
    """ATen ops one call of ``step`` issues (counted on the CPU)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is not torch.ops.aten._local_scalar_dense.default:  # .item(): a read
                Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step()
    return Count.calls


def per_op_seconds(step, ops: int, repeats: int, calls: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        samples.append((time.perf_counter() - start) / (calls * ops))
    return statistics.median(samples)


def set_fusion(on: bool) -> None:
    os.environ[settings.EAGER_FUSION] = "1" if on else "0"


def measure(name: str, make_step, repeats: int, calls: int) -> None:
    steps = {device: make_step(device) for device in ("neuron", "cpu")}
    ops = count_ops(make_step("cpu"))
    fusion.clear()
    set_fusion(True)
    start = time.perf_counter()
    for _ in range(4):  # every structure seen, compiled and verified
        steps["neuron"]()
    warm_up = time.perf_counter() - start
    counters = fusion.stats()
    timings: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(repeats):  # interleaved: the machine's noise hits both alike
        for mode in ("on", "off"):
            set_fusion(mode == "on")
            timings[mode].append(per_op_seconds(steps["neuron"], ops, 1, calls))
    set_fusion(True)
    on = statistics.median(timings["on"])
    off = statistics.median(timings["off"])
    cpu = per_op_seconds(steps["cpu"], ops, repeats, calls * 10)
    programs = counters["structures"]
    ops_per_program = statistics.mean(len(row["ops"]) for row in programs) if programs else 0
    written = sum(row["outputs_written"] for row in programs)
    outputs = sum(row["outputs"] for row in programs)
    print(f"{name} ({ops} ops per step)")
    print(
        f"  neuron, fusion on  {on * 1e6:7.1f} us/op   fusion off {off * 1e6:7.1f} us/op   "
        f"on/off {on / off:5.2f}x"
    )
    print(
        f"  cpu eager          {cpu * 1e6:7.1f} us/op   neuron/cpu: fusion on {on / cpu:6.1f}x, "
        f"off {off / cpu:6.1f}x"
    )
    print(
        f"  fusion warm-up {warm_up:6.2f} s (4 steps): {counters['programs']} programs, "
        f"{ops_per_program:.1f} ops each, writing {written} of their {outputs} outputs; "
        f"{counters['verified']} verified, {counters['verification_failures']} refused"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=64, help="tensors are size x size")
    parser.add_argument("--calls", type=int, default=5, help="steps per timed sample")
    args = parser.parse_args()
    torch.set_num_threads(1)
    fusion.install()
    size = args.size

    def make_gelu(device: str):
        x = torch.randn(size, size).to(device)
        return lambda: gelu_step(x)

    def make_adam(device: str):
        generator = torch.Generator().manual_seed(0)
        state = [
            [torch.randn(size, size, generator=generator).to(device) for _ in range(4)]
            for _ in range(ADAM_TENSORS)
        ]
        for entry in state:
            entry[3] = entry[3].abs()
        counter = iter(range(1, 1_000_000))
        return lambda: adam_step(state, next(counter))

    print(f"tensors {size}x{size} float32, single-threaded, median of {args.repeats}")
    measure("gelu by hand x8, then .item()", make_gelu, args.repeats, args.calls)
    measure(
        f"functional Adam update of {ADAM_TENSORS} tensors, then synchronize",
        make_adam,
        args.repeats,
        args.calls,
    )


if __name__ == "__main__":
    main()
