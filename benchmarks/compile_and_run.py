"""Compile time and steady-state latency of backend="neuron" against eager CPU and Inductor.

Everything runs in one process, single-threaded (PyTorch and XLA), on the
GPT-style stack from ``torchneuron.zoo``; figures are printed as ratios because
absolute times on a shared machine are noisy.

    python benchmarks/compile_and_run.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

# XLA reads its flags once, when the backend starts: set them before any import of jax.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import torch

from torchneuron.zoo import ZOO


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
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--model", default="gpt", choices=sorted(ZOO))
    args = parser.parse_args()
    torch.set_num_threads(1)

    entry = ZOO[args.model]
    model = entry.build().eval()
    inputs = entry.example_inputs()

    print(
        f"model: {args.model} ({sum(p.numel() for p in model.parameters())} parameters), "
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
        eager = median_time(lambda: model(*inputs), args.repeats)
        inductor = median_time(lambda: inductor_fn(*inputs), args.repeats)
        neuron = median_time(lambda: neuron_fn(*inputs), args.repeats)
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

    eager_step = median_time(make_step(model, None), args.repeats)
    inductor_step = median_time(make_step(model, "inductor"), args.repeats)
    neuron_step = median_time(make_step(model, "neuron"), args.repeats)
    print("\ntraining step latency (median, forward + backward + SGD)")
    _print_latencies(eager_step, inductor_step, neuron_step)


def _print_latencies(eager: float, inductor: float, neuron: float) -> None:
    print(f"{'engine':10} {'ms':>9} {'vs eager':>9} {'vs inductor':>12}")
    for name, value in (("eager", eager), ("inductor", inductor), ("neuron", neuron)):
        print(f"{name:10} {value * 1e3:9.3f} {value / eager:9.2f} {value / inductor:12.2f}")


if __name__ == "__main__":
    main()
