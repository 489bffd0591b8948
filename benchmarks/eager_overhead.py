"""Eager-mode overhead of the neuron device, measured in one process as ratios to CPU.

Prints:
- per-op cost of a small ``add`` on ``neuron`` (compiled-op cache hit) vs CPU: the
  dispatch cost on the calling thread (ops queued asynchronously, the execution
  thread held so only the caller's work is timed), the end-to-end cost per op
  asynchronous (issue many, then synchronize) and synchronous
  (``NEURON_LAUNCH_BLOCKING`` on), and the runtime's execute alone;
- first-time compile latency of a new elementwise op (trace, compile, load);
- one training step of the zoo MLP (forward, backward, SGD) on ``neuron`` vs CPU;
- the GPT-style stack of issue 12 (``gpt_stack.py``, as ``profile_training_step.py``
  uses it), inference and training step, eager on ``neuron`` vs eager CPU, with
  fusion on and off (``TORCHNEURON_EAGER_FUSION``) and launch blocking on and off
  (``--no-gpt`` skips it).

Targets (measured, not asserted): dispatch <= 15 us per cached op on the calling
thread; first compile of an elementwise op under 200 ms; an eager MLP training step
<= 3x CPU eager. The machine is noisy: each figure is the median of several repeats,
single-threaded.

    python benchmarks/eager_overhead.py [--repeats 7] [--no-gpt]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import threading
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


@contextlib.contextmanager
def launch_blocking(on: bool):
    """Ops synchronous (on) or queued on the execution thread (off) inside the block."""
    from torchneuron.device import streams

    streams.set_launch_blocking(on)
    try:
        yield
    finally:
        streams.set_launch_blocking(None)


class _Hold:
    """A queue item that holds the device's execution thread until released."""

    device, stream, name = 0, None, "benchmark hold"

    def __init__(self) -> None:
        self.released = threading.Event()

    def run(self) -> None:
        self.released.wait(120)


def dispatch_seconds(fn, calls: int, repeats: int) -> float:
    """Calling-thread seconds per ``fn()`` while the execution thread is held (queued
    ops wait, so only the caller's own work is timed); ``calls`` stays under the
    queue bound."""
    from torchneuron.device import streams

    samples = []
    for _ in range(repeats):
        hold = _Hold()
        streams.enqueue(hold)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
        hold.released.set()
        torch.neuron.synchronize()
    return statistics.median(samples)


def end_to_end_seconds(fn, calls: int, repeats: int) -> float:
    """Seconds per ``fn()`` including its execution: ``calls`` issued, then a synchronize."""
    samples = []
    for _ in range(repeats):
        torch.neuron.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.neuron.synchronize()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def bench_add(repeats: int) -> None:
    from torchneuron.device import streams

    a_cpu, b_cpu = torch.randn(16, 16), torch.randn(16, 16)
    a, b = a_cpu.to("neuron"), b_cpu.to("neuron")
    torch.add(a, b)  # compile once
    torch.neuron.synchronize()
    fusion_modes = (False, True) if _fusion() is not None else (None,)
    dispatch, asynchronous = {}, {}
    fuser = streams._fuser
    streams.install_fuser(None)  # the dispatch path alone, no fuser in front of the queue
    with launch_blocking(False):
        bare = dispatch_seconds(lambda: torch.add(a, b), min(200, streams.MAX_QUEUED), repeats)
    streams.install_fuser(fuser)
    for fused in fusion_modes:
        switch = fusion_switch(fused) if fused is not None else contextlib.nullcontext()
        with switch, launch_blocking(False):
            dispatch[fused] = dispatch_seconds(
                lambda: torch.add(a, b), min(200, streams.MAX_QUEUED), repeats
            )
            asynchronous[fused] = end_to_end_seconds(lambda: torch.add(a, b), 300, repeats)
    with launch_blocking(True):
        synchronous = end_to_end_seconds(lambda: torch.add(a, b), 300, repeats)
    cpu = per_call_seconds(lambda: torch.add(a_cpu, b_cpu), 3000, repeats)

    from torchneuron.device import arrays, compiled

    keys = compiled.cache.keys()
    entry = compiled.cache.get(next(k for k in reversed(keys) if str(k[0]) == "aten.add.Tensor"))
    import numpy as np

    # add.Tensor's alpha (=1) is the schema's default: a constant, no program input
    inputs = [arrays.host_array(a), arrays.host_array(b)] + [
        np.asarray(1, dtype=dtype) for dtype in entry.scalar_dtypes
    ]
    runtime = per_call_seconds(lambda: entry.program.execute(0, inputs), 300, repeats)
    print("add (16x16 f32), compiled-op cache hit")
    names = {None: "", False: ", fusion off", True: ", fusion on"}
    print(
        f"  dispatch on the calling thread (async, no fuser installed) {bare * 1e6:6.1f} us/op "
        f"(target <= 15 us)"
    )
    for fused in fusion_modes:
        print(
            f"  dispatch on the calling thread (async{names[fused]}) "
            f"{dispatch[fused] * 1e6:6.1f} us/op (target <= 15 us; cpu {cpu * 1e6:.1f} us/op)"
        )
    for fused in fusion_modes:
        print(
            f"  end to end, async{names[fused]}: {asynchronous[fused] * 1e6:6.1f} us/op "
            f"({asynchronous[fused] / synchronous:.2f}x launch blocking)"
        )
    print(
        f"  end to end, launch blocking: {synchronous * 1e6:6.1f} us/op, of which runtime "
        f"execute {runtime * 1e6:.1f} us; cpu {cpu * 1e6:.1f} us/op"
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
    cpu = per_call_seconds(cpu_step, 50, repeats)
    print("MLP training step (forward + backward + SGD momentum), warm")
    for blocking in (False, True):
        with launch_blocking(blocking):
            for _ in range(3):
                neuron_step()  # compile every op of the step
            torch.neuron.synchronize()
            neuron = end_to_end_seconds(neuron_step, 10, repeats)
        mode = "blocking" if blocking else "async   "
        print(
            f"  neuron {mode} {neuron * 1e3:8.2f} ms/step   cpu {cpu * 1e3:6.2f} ms/step   "
            f"ratio {neuron / cpu:6.1f}x (target <= 3x)"
        )


def _fusion():
    """The fusion module, installed; None where this build has none."""
    try:
        from torchneuron.device import fusion
    except ImportError:
        return None
    from torchneuron.device import streams

    if streams._fuser is None and hasattr(fusion, "install"):
        fusion.install()
    return fusion


@contextlib.contextmanager
def fusion_switch(on: bool):
    saved = os.environ.get("TORCHNEURON_EAGER_FUSION")
    os.environ["TORCHNEURON_EAGER_FUSION"] = "1" if on else "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TORCHNEURON_EAGER_FUSION", None)
        else:
            os.environ["TORCHNEURON_EAGER_FUSION"] = saved


def bench_gpt(repeats: int) -> None:
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpt_stack import make_inputs, make_model

    tokens_cpu, targets_cpu = make_inputs()

    def workloads(device: str):
        model = make_model().to(device)
        tokens, targets = tokens_cpu.to(device), targets_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def infer():
            with torch.no_grad():
                model.logits(tokens).sum().item()  # reading the value synchronizes

        def train():
            loss = model(tokens, targets)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss.item()

        return infer, train

    cpu_infer, cpu_train = workloads("cpu")
    cpu = {"inference": per_call_seconds(cpu_infer, 1, repeats)}
    cpu["training step"] = per_call_seconds(cpu_train, 1, repeats)
    fusion = _fusion()
    fusion_modes = (True, False) if fusion is not None else (None,)
    if fusion is None:
        print("GPT stack: fusion: not available")
    print("GPT stack (4 layers, d=256, batch 4x128), eager, warm; neuron / cpu eager")
    infer, train = workloads("neuron")
    for name, fn in (("inference", infer), ("training step", train)):
        print(f"  {name}: cpu {cpu[name] * 1e3:8.1f} ms")
        # launch blocking builds no launches, so fusion has nothing to fuse there
        modes = [(fused, False) for fused in fusion_modes] + [(None, True)]
        for fused, blocking in modes:
            switch = fusion_switch(fused) if fused is not None else contextlib.nullcontext()
            with switch, launch_blocking(blocking):
                for _ in range(3):  # compile every op (and fused chain) of the step
                    fn()
                seconds = per_call_seconds(fn, 1, repeats)
            if blocking:
                label = "launch blocking (no fusion)"
            else:
                label = "async, " + {True: "fusion on", False: "fusion off", None: ""}[fused]
            print(
                f"    neuron {label:28s} {seconds * 1e3:8.1f} ms   "
                f"ratio {seconds / cpu[name]:5.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-gpt", action="store_true", help="skip the GPT stack")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from torchneuron.runtime import set_single_threaded

    set_single_threaded(True)
    bench_add(args.repeats)
    bench_first_compile(args.repeats)
    bench_training_step(args.repeats)
    if not args.no_gpt:
        bench_gpt(max(3, args.repeats // 2))


if __name__ == "__main__":
    main()
