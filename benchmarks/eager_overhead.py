"""Eager-mode overhead of the neuron device, measured in one process as ratios to CPU.

Prints:
- per-op latency of a small ``add`` on ``neuron`` (compiled-op cache hit) vs CPU,
  with where the time goes (dispatch + bookkeeping vs the runtime's execute);
- first-time compile latency of a new elementwise op (trace, compile, load);
- one training step of the zoo MLP (forward, backward, SGD) on ``neuron`` vs CPU.

Targets (measured, not asserted): cache-hit per-op overhead under 50 us; first
compile of an elementwise op under 200 ms. The machine is noisy: each figure is
the median of several repeats, single-threaded.

    python benchmarks/eager_overhead.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))

import torch

import torchneuron  # noqa: F401  (registers the device if autoload is off)


def per_call_seconds(fn, calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def bench_add(repeats: int) -> None:
    a_cpu, b_cpu = torch.randn(16, 16), torch.randn(16, 16)
    a, b = a_cpu.to("neuron"), b_cpu.to("neuron")
    torch.add(a, b)  # compile once
    neuron = per_call_seconds(lambda: torch.add(a, b), 300, repeats)
    cpu = per_call_seconds(lambda: torch.add(a_cpu, b_cpu), 3000, repeats)

    from torchneuron.device import arrays, compiled

    keys = compiled.cache.keys()
    entry = compiled.cache.get(next(k for k in reversed(keys) if str(k[0]) == "aten.add.Tensor"))
    import numpy as np

    # add.Tensor's alpha (=1) is the schema's default: a constant, no program input
    inputs = [arrays.host_array(a), arrays.host_array(b)] + [
        np.asarray(1, dtype=dtype) for dtype in entry.scalar_dtypes
    ]
    runtime = per_call_seconds(lambda: entry.compiled.execute(0, inputs), 300, repeats)
    print("add (16x16 f32), compiled-op cache hit")
    print(
        f"  neuron {neuron * 1e6:8.1f} us/op   cpu {cpu * 1e6:6.1f} us/op   "
        f"ratio {neuron / cpu:6.1f}x"
    )
    print(
        f"  of which runtime execute {runtime * 1e6:6.1f} us; eager overhead "
        f"(neuron - cpu - execute) {(neuron - cpu - runtime) * 1e6:6.1f} us "
        f"(target < 50 us per op, all non-compute time: {(neuron - cpu) * 1e6:.1f} us)"
    )


def bench_first_compile(repeats: int) -> None:
    from torchneuron.compiler import eager

    samples, parts = [], []
    for trial in range(repeats):
        x = torch.randn(8, 8 + trial, device="neuron")  # a new shape: a new compile
        start = time.perf_counter()
        torch.sigmoid(x)
        samples.append(time.perf_counter() - start)
        t = eager.last_timings
        parts.append((t.trace, t.compile, t.load))
    median = statistics.median(samples)
    trace, compile_, load = (statistics.median(p[i] for p in parts) for i in range(3))
    print("first call of a new elementwise op (sigmoid, new shape, empty disk cache)")
    print(
        f"  {median * 1e3:8.1f} ms   (trace {trace * 1e3:.1f} ms, compile {compile_ * 1e3:.1f} ms, "
        f"load {load * 1e3:.1f} ms; target < 200 ms)"
    )


def bench_training_step(repeats: int) -> None:
    from torchneuron.zoo import ZOO

    entry = ZOO["mlp"]

    def make(device):
        model = entry.build().to(device)
        inputs = tuple(t.to(device) for t in entry.example_inputs())
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad()
            entry.loss(model(*inputs), inputs).backward()
            opt.step()

        return step

    neuron_step, cpu_step = make("neuron"), make("cpu")
    for _ in range(3):
        neuron_step()  # compile every op of the step
    neuron = per_call_seconds(neuron_step, 10, repeats)
    cpu = per_call_seconds(cpu_step, 50, repeats)
    print("MLP training step (forward + backward + SGD momentum), warm")
    print(
        f"  neuron {neuron * 1e3:8.2f} ms/step   cpu {cpu * 1e3:6.2f} ms/step   "
        f"ratio {neuron / cpu:6.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from torchneuron.runtime import set_single_threaded

    set_single_threaded(True)
    bench_add(args.repeats)
    bench_first_compile(args.repeats)
    bench_training_step(args.repeats)


if __name__ == "__main__":
    main()
