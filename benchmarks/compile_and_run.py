"""Compile time and steady-state latency of backend="neuron" against eager CPU and Inductor.

Everything runs in one process, single-threaded (``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``, ``TORCHNEURON_XLA_SINGLE_THREADED=1``: XLA's pool has
one thread), and figures are printed as ratios because absolute times on a shared
machine are noisy. Two parts:

- ``stack``: the GPT-style stack of issue 12 (``benchmarks/gpt_stack.py``: 4 layers,
  d=256, 4 heads, causal ``nn.MultiheadAttention``, vocab 2048, batch 4 x 128):
  inference and training step (forward + backward + SGD) for eager CPU, Inductor and
  neuron, the engines' calls interleaved so that the machine's noise falls on all
  three alike; cold and warm compile of the inference graph. Prints the issue's table.
- ``zoo``: a model of ``torchneuron.zoo`` (``--model``, default the small gpt block):
  compile times, ``compile_graph`` alone, inference and training latency.

Both compile caches start empty (a fresh temporary directory for the NEFF cache and
for Inductor's), so "cold" is a first compile.

    python benchmarks/compile_and_run.py [--part stack|zoo|all] [--repeats 30]
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import statistics
import tempfile
import time

# Read once, at start-up (XLA's pool, OpenMP) or at first use (caches): set before imports.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))

import torch
from gpt_stack import Logits, make_inputs, make_model, train_step_timed

import torchneuron  # noqa: F401  (registers the backend)
from torchneuron.zoo import ZOO

ENGINES = ("eager", "inductor", "neuron")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_time(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    return statistics.median(timed(fn) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=("stack", "zoo", "all"))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--model", default="gpt", choices=sorted(ZOO))
    args = parser.parse_args()
    torch.set_num_threads(1)
    from torchneuron.runtime.executor import get_executor

    print(
        f"torch threads {torch.get_num_threads()}, XLA single-threaded "
        f"{os.environ.get('TORCHNEURON_XLA_SINGLE_THREADED')}, OMP_NUM_THREADS "
        f"{os.environ.get('OMP_NUM_THREADS')}"
    )
    if args.part in ("stack", "all"):  # first: its compiles are the process's first
        gpt_stack_table(args.repeats)
        xla = get_executor()
        print(f"XLA thread pool: {getattr(xla, 'threads', None) or 'not sized by torchneuron'}")
    if args.part in ("zoo", "all"):
        zoo_figures(args.model, args.repeats)


def zoo_figures(name: str, repeats: int) -> None:
    torch._dynamo.reset()
    entry = ZOO[name]
    model = entry.build().eval()
    inputs = entry.example_inputs()

    print(
        f"\nzoo model: {name} ({sum(p.numel() for p in model.parameters())} parameters), "
        f"inputs {[tuple(t.shape) for t in inputs]}, torch threads 1, XLA single-threaded"
    )

    # -- compile times -------------------------------------------------------
    compile_rows = []
    for backend in ("neuron", "inductor"):
        torch._dynamo.reset()
        with torch.no_grad():
            compiled = torch.compile(model, backend=backend)
            cold = timed(lambda compiled=compiled: compiled(*inputs))
        torch._dynamo.reset()  # forget Dynamo's code cache; keep the backend's own caches
        with torch.no_grad():
            compiled = torch.compile(model, backend=backend)
            warm = timed(lambda compiled=compiled: compiled(*inputs))
        compile_rows.append((backend, cold, warm))
    torch._dynamo.reset()

    print("\ncompile (first call, inference graph)")
    print(f"{'backend':10} {'cold s':>9} {'second s':>9}")
    for backend, cold, warm in compile_rows:
        print(f"{backend:10} {cold:9.3f} {warm:9.3f}")
    neuron_cold, inductor_cold = compile_rows[0][1], compile_rows[1][1]
    print(f"neuron/inductor cold compile ratio: {neuron_cold / inductor_cold:.2f}")
    print(
        "(second = torch._dynamo.reset() then compile again: Dynamo retraces; the backend's\n"
        " own caches answer the rest)"
    )

    # compile_graph alone, on the ATen forward graph: cold, then the in-memory cache.
    from torch.fx.experimental.proxy_tensor import make_fx

    from torchneuron.compiler.pipeline import clear_memory_cache, compile_graph
    from torchneuron.lowering import decomposition_table

    with torch.no_grad():
        aten_graph = make_fx(model, decomposition_table=decomposition_table())(*inputs)
    clear_memory_cache()
    first = compile_graph(aten_graph, inputs, name="bench")
    hit_seconds = timed(lambda: compile_graph(aten_graph, inputs, name="bench"))
    stage_ms = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in first.stage_seconds.items())
    print(
        f"compile_graph: cold {sum(first.stage_seconds.values()):.3f} s ({stage_ms} ms); "
        f"same graph again {hit_seconds * 1e3:.2f} ms (in-memory cache)"
    )

    # -- steady-state inference --------------------------------------------------
    with torch.no_grad():
        neuron_fn = torch.compile(model, backend="neuron")
        inductor_fn = torch.compile(model, backend="inductor")
        eager = median_time(lambda: model(*inputs), repeats)
        inductor = median_time(lambda: inductor_fn(*inputs), repeats)
        neuron = median_time(lambda: neuron_fn(*inputs), repeats)
    print("\nsteady-state inference latency (median)")
    _print_latencies(eager, inductor, neuron)

    # -- training step -------------------------------------------------------
    def make_step(module, compile_backend):
        module = copy.deepcopy(module).train()
        fn = torch.compile(module, backend=compile_backend) if compile_backend else module
        opt = torch.optim.SGD(module.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            entry.loss(fn(*inputs), inputs).backward()
            opt.step()

        return step

    eager_step = median_time(make_step(model, None), repeats)
    inductor_step = median_time(make_step(model, "inductor"), repeats)
    neuron_step = median_time(make_step(model, "neuron"), repeats)
    print("\ntraining step latency (median, forward + backward + SGD)")
    _print_latencies(eager_step, inductor_step, neuron_step)


# -- the GPT-style stack of issue 12 ---------------------------------------------------


def interleaved_medians(functions: dict, repeats: int, warmup: int = 3) -> tuple[dict, dict]:
    """Median seconds per call of each function, calling them in turn (not one after
    the other) so that a noisy stretch of the machine hits every engine; and each
    one's minor page faults per call (memory the kernel had to map afresh)."""
    for fn in functions.values():
        for _ in range(warmup):
            fn()
    samples: dict = {name: [] for name in functions}
    faults = dict.fromkeys(functions, 0)
    for _ in range(repeats):
        for name, fn in functions.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            samples[name].append(timed(fn))
            faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return medians, {name: count / repeats for name, count in faults.items()}


def gpt_stack_table(repeats: int) -> None:
    tokens, targets = make_inputs()
    base = make_model()
    print(
        f"\nGPT stack: {sum(p.numel() for p in base.parameters())} parameters, "
        f"tokens {tuple(tokens.shape)}"
    )

    # -- compile, inference graph: cold (empty caches), then warm ----------------------
    infer = Logits(base).eval()
    compile_seconds = {}
    for backend in ("neuron", "inductor"):
        for kind in ("cold", "warm"):
            # warm: torch._dynamo.reset() forgets Dynamo's code cache; the backend's
            # own caches (in memory and on disk) answer what they can
            torch._dynamo.reset()
            with torch.no_grad():
                compiled = torch.compile(infer, backend=backend)
                compile_seconds[backend, kind] = timed(lambda c=compiled: c(tokens))
    torch._dynamo.reset()

    # -- steady-state inference ---------------------------------------------------------
    with torch.no_grad():
        inference_fns = {
            "eager": infer,
            "inductor": torch.compile(infer, backend="inductor"),
            "neuron": torch.compile(infer, backend="neuron"),
        }
        expected = infer(tokens)
        for name in ("inductor", "neuron"):
            difference = (inference_fns[name](tokens) - expected).abs().max().item()
            print(f"inference, {name} vs eager: max |difference| {difference:.2e}")
        inference, inference_faults = interleaved_medians(
            {name: (lambda fn=fn: fn(tokens)) for name, fn in inference_fns.items()}, repeats
        )

    # -- training step: forward + backward + SGD, each engine on its own copy ---------
    steps, first_losses = {}, {}
    for name in ENGINES:
        model = copy.deepcopy(base).train()
        fn = model if name == "eager" else torch.compile(model, backend=name)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        start = time.perf_counter()
        first_losses[name] = train_step_timed(fn, opt, tokens, targets)[3].item()
        if name != "eager":
            print(f"training, {name}: compile + first step {time.perf_counter() - start:.1f} s")
        steps[name] = lambda fn=fn, opt=opt: train_step_timed(fn, opt, tokens, targets)
    training, training_faults = interleaved_medians(steps, repeats)
    print(
        "first training loss: "
        + ", ".join(f"{name} {loss:.6f}" for name, loss in first_losses.items())
        + f" (neuron - eager: {first_losses['neuron'] - first_losses['eager']:+.2e})"
    )

    print(f"\nmedian of {repeats} interleaved calls, single-threaded")
    print('| | eager CPU | Inductor | `backend="neuron"` | neuron / Inductor | neuron / eager |')
    print("|---|---|---|---|---|---|")
    for label, row in (("inference", inference), ("training step (fw + bw + SGD)", training)):
        print(
            f"| {label} | {1e3 * row['eager']:.1f} ms | {1e3 * row['inductor']:.1f} ms | "
            f"{1e3 * row['neuron']:.1f} ms | {row['neuron'] / row['inductor']:.2f}x | "
            f"{row['neuron'] / row['eager']:.2f}x |"
        )
    for kind in ("cold", "warm"):
        neuron, inductor = compile_seconds["neuron", kind], compile_seconds["inductor", kind]
        print(
            f"| {kind} compile, inference | — | {inductor:.2f} s | {neuron:.2f} s | "
            f"{neuron / inductor:.3f}x | — |"
        )
    for label, faults in (("inference", inference_faults), ("training step", training_faults)):
        print(
            f"minor page faults per {label}: "
            + ", ".join(f"{name} {count:.0f}" for name, count in faults.items())
        )


def _print_latencies(eager: float, inductor: float, neuron: float) -> None:
    print(f"{'engine':10} {'ms':>9} {'vs eager':>9} {'vs inductor':>12}")
    for name, value in (("eager", eager), ("inductor", inductor), ("neuron", neuron)):
        print(f"{name:10} {value * 1e3:9.3f} {value / eager:9.2f} {value / inductor:12.2f}")


if __name__ == "__main__":
    main()
