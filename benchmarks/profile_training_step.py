"""Where the time of a ``torch.compile(backend="neuron")`` training step goes.

Builds a GPT-style stack (token embedding, 4 x [LayerNorm, causal
nn.MultiheadAttention, LayerNorm, 4x MLP], head, cross-entropy), compiles it with
the neuron backend, and splits one training step (forward, backward, SGD) into:

- per NEFF (forward / backward graph): input conversion (``batched_device_put``),
  XLA execute, output conversion (``host_buffers.owned_output`` of each result: numpy
  arrays over XLA's output buffers; ``np.array`` copies before issue 12 part 2);
- the backend wrapper around ``LoadedNeff.execute`` (torch <-> numpy, HBM charge);
- the rest of the compiled call: Dynamo guards, AOTAutograd runtime wrappers and
  the autograd engine;
- the optimizer step; user vs sys CPU time and page faults per step; bytes put
  into XLA and returned from it per step, how many inputs XLA aliased (zero copy) and
  how many outputs were copied; XLA's thread pool (threads named ``tf_XLAEigen``).

The executor's runner is replaced at run time by an instrumented copy (nothing in
the package is edited). Then cProfile over a few steps, and eager CPU / Inductor
steps in the same process for reference. The machine is noisy: each figure is the
median over the timed steps, single-threaded.

    python benchmarks/profile_training_step.py [--steps 20] [--no-inductor] [--model gpt2]

``--model gpt2`` profiles transformers' GPT-2 124M instead (``GPT2LMHeadModel(GPT2Config())``,
dropout 0, batch 1x128; ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import statistics
import tempfile
import time
from collections import defaultdict

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TORCHNEURON_XLA_SINGLE_THREADED", "1")
os.environ.setdefault("TORCHNEURON_CACHE_DIR", tempfile.mkdtemp(prefix="torchneuron-bench-"))

import numpy as np
import torch
from gpt_stack import make_inputs as stack_inputs
from gpt_stack import make_model as stack_model
from gpt_stack import train_step_timed as gpt_train_step

import torchneuron  # noqa: F401  (registers the backend)
from torchneuron import backend
from torchneuron.runtime import executor as executor_module
from torchneuron.runtime import host_buffers, loaded_neff

# -- the model ------------------------------------------------------------------

MODEL = {"name": "stack"}  # set from --model before anything is built


class _GPT2WithLoss(torch.nn.Module):
    """GPT-2 124M as ``fn(tokens, targets) -> loss`` (the stack's calling convention)."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        self.lm = GPT2LMHeadModel(config)

    def forward(self, tokens, targets):
        return self.lm(input_ids=tokens, labels=targets).loss


def make_model():
    torch.manual_seed(0)
    return _GPT2WithLoss() if MODEL["name"] == "gpt2" else stack_model()


def make_inputs():
    if MODEL["name"] == "gpt2":
        tokens = torch.randint(0, 50257, (1, 128), generator=torch.Generator().manual_seed(1))
        return tokens, tokens
    return stack_inputs()


# -- instrumentation ------------------------------------------------------------

# NEFF name -> list of per-call dicts (put, execute, to_host seconds; bytes)
RUNS: dict[str, list[dict]] = defaultdict(list)
CALLS: dict[str, list[float]] = defaultdict(list)  # NEFF name -> NeuronGraphFunction.__call__ s
EXECS: dict[str, list[float]] = defaultdict(list)  # NEFF name -> LoadedNeff.execute s (hook)


def instrumented_make_runner(self, prepared, argument_plan, input_types, weight_buffers):
    """executor.XlaCpuExecutor.make_runner, timing each phase of every run."""
    self._start()
    put = self._xla_client.batched_device_put
    sharding, devices, zero_copy = self._sharding, [self._device], self._zero_copy
    execute_sharded = prepared.executable.execute_sharded
    numpy_dtype = executor_module.numpy_dtype
    avals = [executor_module._Aval(t.shape, numpy_dtype(t.dtype)) for t in input_types]
    handlers, readers = self.output_plan(prepared.signature)
    weights = iter(list(weight_buffers))
    template = [next(weights) if s is None else None for s in argument_plan]
    slots = [(pos, s) for pos, s in enumerate(argument_plan) if s is not None]
    record = {"name": None}

    def address(buffer):
        # Through the buffer protocol (unsafe_buffer_pointer imports jax); None for a
        # type it cannot name (bfloat16, float8).
        try:
            return np.asarray(memoryview(buffer)).ctypes.data
        except BufferError:
            return None

    def run(arrays, copy=True):
        t0 = time.perf_counter()
        args = list(template)
        aliased = 0
        for position, source in slots:
            buffer = put(
                avals[source], sharding, [arrays[source]], devices, True, False, zero_copy, True
            )
            args[position] = buffer
            aliased += address(buffer) == arrays[source].ctypes.data  # None: not counted
        t1 = time.perf_counter()
        results = execute_sharded(args).consume_with_handlers(handlers)
        for r in results:
            r.block_until_ready()
        t2 = time.perf_counter()
        outs = host_buffers.host_arrays(results, readers, copy)
        t3 = time.perf_counter()
        # outputs whose address the buffer protocol cannot give (bfloat16, float8) are
        # left out of the count rather than counted as copies
        addresses = [address(r) for r in results]
        copied = sum(
            o.size > 0 and a is not None and o.ctypes.data != a for o, a in zip(outs, addresses)
        )
        RUNS[record["name"]].append(
            {
                "put": t1 - t0,
                "xla": t2 - t1,
                "to_host": t3 - t2,
                "in_bytes": sum(a.nbytes for a in arrays),
                "in_count": len(arrays),
                "aliased": aliased,
                "out_bytes": sum(o.nbytes for o in outs),
                "out_copied": copied,
                "out_count": len(outs),
            }
        )
        return outs

    run.record = record
    return run


def install_instrumentation():
    executor_module.XlaCpuExecutor.make_runner = instrumented_make_runner
    original_init = loaded_neff.LoadedNeff.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if hasattr(self._run, "record"):
            self._run.record["name"] = self.name

    loaded_neff.LoadedNeff.__init__ = init
    loaded_neff.add_execute_hook(lambda loaded, start, seconds: EXECS[loaded.name].append(seconds))
    original_call = backend.NeuronGraphFunction.__call__

    def call(self, *args):
        t0 = time.perf_counter()
        out = original_call(self, *args)
        CALLS[self.loaded.name].append(time.perf_counter() - t0)
        return out

    backend.NeuronGraphFunction.__call__ = call


def clear_records():
    for table in (RUNS, CALLS, EXECS):
        table.clear()


# -- measurement ------------------------------------------------------------------


def train_step_timed(fn, model, opt, tokens, targets):
    return gpt_train_step(fn, opt, tokens, targets)[:3]


def median_step_ms(fn, model, opt, tokens, targets, steps):
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter()
        train_step_timed(fn, model, opt, tokens, targets)
        samples.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(samples)


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + sys) per thread of this process, keyed by "tid name"."""
    ticks = os.sysconf("SC_CLK_TCK")
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        times[f"{tid} {name}"] = (int(fields[11]) + int(fields[12])) / ticks
    return times


def med(values):
    return statistics.median(values) if values else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--profile-steps", type=int, default=5)
    parser.add_argument("--model", choices=("stack", "gpt2"), default="stack")
    args = parser.parse_args()
    MODEL["name"] = args.model
    torch.set_num_threads(1)
    install_instrumentation()
    tokens, targets = make_inputs()

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, backend="neuron")
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        train_step_timed(compiled, model, opt, tokens, targets)
    print(f"neuron compile + {args.warmup} warm-up steps: {time.perf_counter() - t0:.1f} s")
    clear_records()

    steps = []
    threads_before = thread_cpu()
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    for _ in range(args.steps):
        n_before = {k: len(v) for k, v in CALLS.items()}
        fw, bw, opt_s = train_step_timed(compiled, model, opt, tokens, targets)
        steps.append((fw, bw, opt_s, n_before))
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_SELF)
    threads_after = thread_cpu()

    names = sorted(RUNS)
    fw_names = [n for n in names if "forward" in n]
    bw_names = [n for n in names if "backward" in n]
    print(
        f"\nNEFFs executed per step: {', '.join(f'{n} x{len(RUNS[n]) // args.steps}' for n in names)}"
    )

    def per_step(table_getter, group):
        # median over steps of the sum over the group's NEFFs (one call each per step)
        totals = [0.0] * args.steps
        for n in group:
            values = table_getter(n)
            per = len(values) // args.steps
            for i in range(args.steps):
                totals[i] += sum(values[i * per : (i + 1) * per])
        return med(totals)

    rows = []
    step_total = med([fw + bw + o for fw, bw, o, _ in steps])
    fw_total = med([s[0] for s in steps])
    bw_total = med([s[1] for s in steps])
    opt_total = med([s[2] for s in steps])
    for label, group, outer in (("forward", fw_names, fw_total), ("backward", bw_names, bw_total)):
        put = per_step(lambda n: [r["put"] for r in RUNS[n]], group)
        xla = per_step(lambda n: [r["xla"] for r in RUNS[n]], group)
        host = per_step(lambda n: [r["to_host"] for r in RUNS[n]], group)
        execute = per_step(lambda n: EXECS[n], group)
        call = per_step(lambda n: CALLS[n], group)
        rows += [
            (f"{label}: XLA execute", xla),
            (f"{label}: inputs -> XLA (device_put)", put),
            (f"{label}: outputs -> numpy arrays", host),
            (f"{label}: rest of LoadedNeff.execute", execute - put - xla - host),
            (f"{label}: backend wrapper (torch<->numpy)", call - execute),
            (
                f"{label}: Dynamo/AOTAutograd/autograd outside the graph",
                outer - call,
            ),
        ]
    rows.append(("optimizer step + zero_grad", opt_total))
    print(f"\nCompiled training step, median of {args.steps} steps: {1e3 * step_total:.1f} ms")
    print(f"  (forward call {1e3 * fw_total:.1f} ms, loss.backward {1e3 * bw_total:.1f} ms)")
    print(f"{'part':58s} {'ms':>8s} {'%':>6s}")
    for label, seconds in rows:
        print(f"{label:58s} {1e3 * seconds:8.2f} {100 * seconds / step_total:6.1f}")
    print(f"{'sum of medians':58s} {1e3 * sum(s for _, s in rows):8.2f}")

    user = (after.ru_utime - before.ru_utime) / args.steps
    sys_ = (after.ru_stime - before.ru_stime) / args.steps
    print(
        f"\nCPU per step: user {1e3 * user:.1f} ms, sys {1e3 * sys_:.1f} ms, wall "
        f"{1e3 * wall / args.steps:.1f} ms; minor page faults/step "
        f"{(after.ru_minflt - before.ru_minflt) / args.steps:.0f}, major "
        f"{(after.ru_majflt - before.ru_majflt) / args.steps:.1f}, vol/invol ctx switches/step "
        f"{(after.ru_nvcsw - before.ru_nvcsw) / args.steps:.0f}/"
        f"{(after.ru_nivcsw - before.ru_nivcsw) / args.steps:.0f}"
    )
    busy = sorted(
        ((threads_after[t] - threads_before.get(t, 0.0), t) for t in threads_after), reverse=True
    )
    print(
        "CPU per step by thread: "
        + ", ".join(f"{t} {1e3 * s / args.steps:.1f} ms" for s, t in busy[:4] if s > 0)
    )
    for n in names:
        r = RUNS[n][-1]
        print(
            f"{n}: {r['in_count']} inputs, {r['in_bytes'] / 2**20:.2f} MiB put, "
            f"{r['aliased']} aliased zero-copy; {r['out_count']} outputs, "
            f"{r['out_bytes'] / 2**20:.2f} MiB, {r['out_copied']} copied"
        )
    pool = [t for t in threads_after if t.endswith(" tf_XLAEigen")]
    print(
        f"XLA thread pool: {len(pool)} tf_XLAEigen threads "
        f"(executor.threads = {getattr(executor_module.get_executor(), 'threads', '?')})"
    )
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"parameters: {params / 2**20:.2f} MiB")

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.profile_steps):
        train_step_timed(compiled, model, opt, tokens, targets)
    profiler.disable()
    for key in ("cumulative", "tottime"):
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats(key).print_stats(15)
        text = stream.getvalue()
        print(f"\ncProfile over {args.profile_steps} steps, top 15 by {key}:")
        print(text[text.find("   ncalls") :].rstrip())

    # references, same process and inputs
    eager_model = make_model()
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=1e-3)
    for _ in range(args.warmup):
        train_step_timed(eager_model, eager_model, eager_opt, tokens, targets)
    eager_ms = median_step_ms(eager_model, eager_model, eager_opt, tokens, targets, args.steps)
    split = [
        train_step_timed(eager_model, eager_model, eager_opt, tokens, targets)
        for _ in range(args.steps)
    ]
    print(
        f"  eager CPU forward {1e3 * med([s[0] for s in split]):.1f} ms, backward "
        f"{1e3 * med([s[1] for s in split]):.1f} ms, optimizer {1e3 * med([s[2] for s in split]):.1f} ms"
    )
    neuron_ms = median_step_ms(compiled, model, opt, tokens, targets, args.steps)
    print(f"\nreference, median of {args.steps} steps:")
    print(
        f"  eager CPU {eager_ms:.1f} ms; neuron {neuron_ms:.1f} ms ({neuron_ms / eager_ms:.2f}x eager)"
    )
    if not args.no_inductor:
        ind_model = make_model()
        ind_opt = torch.optim.SGD(ind_model.parameters(), lr=1e-3)
        ind = torch.compile(ind_model)
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            train_step_timed(ind, ind_model, ind_opt, tokens, targets)
        print(f"  inductor compile + warm-up: {time.perf_counter() - t0:.1f} s")
        ind_ms = median_step_ms(ind, ind_model, ind_opt, tokens, targets, args.steps)
        print(f"  inductor {ind_ms:.1f} ms; neuron / inductor {neuron_ms / ind_ms:.2f}x")


if __name__ == "__main__":
    main()
