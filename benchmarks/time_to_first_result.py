"""Time to first result: process start, import, first step, new shapes, and the CLI.

Everything native (``TORCHNEURON_NO_FALLBACK=1``: a graph that cannot run on the
device raises instead of running on the CPU) and single-threaded
(``TORCHNEURON_XLA_SINGLE_THREADED=1``, ``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``). Every cache is a fresh temporary directory; the
user's caches are never touched. Four sections (``--only a,b,c,d``):

a. cold and warm processes: a small CNN training step (conv-relu-pool-conv-relu-linear
   on 8x3x32x32, cross-entropy, SGD) eager on ``neuron``, and the zoo's small GPT
   training step under ``torch.compile(backend="neuron")``. Each run is a fresh
   subprocess (this script with ``--child``) that reports, as JSON, its interpreter
   start, ``import torch`` (which autoloads the device), ``import torchneuron``, model
   setup, first and second step, and the seconds from spawn to its first result.
   Cold: an empty ``TORCHNEURON_CACHE_DIR``; warm: a second process on the same, now
   filled, directory. Beside them: eager CPU, and Inductor cold and warm (its own
   ``TORCHINDUCTOR_CACHE_DIR``, shared by its two runs).
b. eager cost per new and per repeated batch size: an MLP training step on ``neuron``,
   warmed up at batch 16, then batch sizes 3, 5, 7, ..., 33 each run three times (first
   sighting, second, third), synchronized, in ascending order and shuffled (a second
   model of another width, so that no program of one order serves the other); a size
   "compiled" when it specialized or created a padded program. CPU the same.
c. ``torch.compile(dynamic=True)`` per new sequence length: a GPT (the zoo's
   ``GPTBlockLM`` with a 128-token context) inference and training step, the first
   call of each new length against a repeated call; Inductor ``dynamic=True`` in the
   same process. Run in a fresh process, then in a second one on the same caches
   (are the specializations reused across processes?).
d. command-line start-up: ``neuronc --help`` and ``neuronc inspect`` of a small NEFF,
   next to ``python -c "import torch"`` (median of 5 processes each).

The machine is noisy: a process-level figure is one sample (sections a and c) or a
median of 5 (section d); compare ratios, not absolute times.

    python benchmarks/time_to_first_result.py [--quick] [--only a,b,c,d]

A child can be run alone, e.g. under a profiler (``TTFR_CACHE_DIR`` names its NEFF
cache; run it twice on one folder for a warm process):

    python -m cProfile -s cumtime benchmarks/time_to_first_result.py --child cnn-neuron
"""

from __future__ import annotations

import time

SCRIPT_START = time.time()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

# Read at start-up or at first use: set before torch is imported (and inherited by
# every child process).
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["TORCHNEURON_XLA_SINGLE_THREADED"] = "1"
os.environ["TORCHNEURON_NO_FALLBACK"] = "1"
os.environ["TORCHNEURON_CACHE_DIR"] = os.environ.get("TTFR_CACHE_DIR") or tempfile.mkdtemp(
    prefix="ttfr-neuron-"
)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.environ.get("TTFR_INDUCTOR_DIR") or tempfile.mkdtemp(
    prefix="ttfr-inductor-"
)

PYTHON = sys.executable
NEURONC = os.path.join(os.path.dirname(PYTHON), "neuronc")
SPAWN = "TTFR_SPAWN_TIME"  # the parent's time.time() just before it started the child
WARNED: set[str] = set()  # the warnings of child processes already printed
# Section c's model: dynamic_shapes.py's (gpt_stack's GPT, its causal mask cut to the
# tokens' length) at its default sizes. Not the zoo's GPTBlockLM: its
# arange(sequence length) leaves dynamic_iota in the specialized program, which the
# runtime refuses (LoweringError). The loss is the zoo's next-token loss, shifted
# (logits[:, :-1]), as a language model is trained: its backward scatters along the
# symbolic length (lowered as a concatenation since 2026-12-07; before, that graph was
# compiled per shape and the training rows used an unshifted loss).
DYNAMIC_GPT = {"vocab": 512, "d": 128, "heads": 4, "layers": 2, "seq": 128}


# -- helpers ----------------------------------------------------------------------------


def synchronize(device: str) -> None:
    if device == "neuron":
        import torch

        torch.neuron.synchronize()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.1f}" if not math.isnan(seconds) else "        -"


def ratio(a: float, b: float) -> str:
    return f"{a / b:7.2f}x" if b > 0 and not math.isnan(a) else "      -"


def run_child(kind: str, cache_dir: str, inductor_dir: str, *extra: str) -> dict:
    """This script as ``--child kind`` in a fresh process; its JSON report, with the
    wall time of the whole process (spawn to exit) added as ``process``."""
    env = dict(os.environ, TTFR_CACHE_DIR=cache_dir, TTFR_INDUCTOR_DIR=inductor_dir)
    env[SPAWN] = repr(time.time())
    start = time.perf_counter()
    done = subprocess.run(
        [PYTHON, os.path.abspath(__file__), "--child", kind, *extra],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"child {kind} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    for line in done.stderr.splitlines():  # say once what the compilers warned about
        if "Warning:" in line and line not in WARNED:
            WARNED.add(line)
            print(f"  [{kind} warned] {line.split('Warning: ', 1)[-1]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["process"] = wall
    return report


# -- the child processes ----------------------------------------------------------------


def import_stack(device: str) -> dict:
    """Seconds to import torch (its autoload registers the device) and torchneuron."""
    now = time.time()
    figures = {"interpreter": SCRIPT_START - float(os.environ.get(SPAWN, SCRIPT_START))}
    start = time.perf_counter()
    import torch

    figures["import torch"] = time.perf_counter() - start
    start = time.perf_counter()
    if device == "neuron":
        import torchneuron  # noqa: F401
    figures["import torchneuron"] = time.perf_counter() - start
    figures["script to import"] = now - SCRIPT_START
    torch.set_num_threads(1)
    return figures


def cnn_step(device: str):
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 16 * 16, 10),
    ).to(device)
    x = torch.randn(8, 3, 32, 32).to(device)
    y = (torch.arange(8) % 10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        synchronize(device)

    return step


def lm_with_loss(lm, shifted: bool = True):
    """A language model and a cross-entropy loss as one module (the whole forward in one
    compiled graph): the zoo's next-token loss, or (``shifted`` False) the loss against
    the input tokens themselves."""
    import torch.nn.functional as F
    from torch import nn

    from torchneuron.zoo import ZOO

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, idx):
            logits = self.lm(idx)
            if shifted:
                return ZOO["gpt"].loss(logits, (idx,))
            return F.cross_entropy(logits.flatten(0, 1), idx.flatten())

    return WithLoss()


def gpt_step(model, backend: str | None, dynamic: bool | None = None):
    """One training step (a function of the tokens) of ``model`` (a language model with
    its loss), eager (backend None) or compiled; and the compiled model."""
    import torch

    fn = model if backend is None else torch.compile(model, backend=backend, dynamic=dynamic)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(idx):
        opt.zero_grad(set_to_none=True)
        loss = fn(idx)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def child_first_step(kind: str) -> dict:
    """A (cold or warm) process: imports, setup, first and second step."""
    device = "neuron" if kind in ("cnn-neuron", "gpt-neuron") else "cpu"
    figures = import_stack("neuron")  # torchneuron.zoo is imported for the GPT anyway
    start = time.perf_counter()
    if kind.startswith("cnn"):
        step = cnn_step(device)
    else:
        from torchneuron.zoo import ZOO

        (idx,) = ZOO["gpt"].example_inputs()
        backend = {"gpt-neuron": "neuron", "gpt-inductor": "inductor", "gpt-cpu": None}[kind]
        gpt = gpt_step(lm_with_loss(ZOO["gpt"].build()), backend)

        def step():
            gpt(idx)

    figures["setup"] = time.perf_counter() - start
    figures["first step"] = timed(step)
    figures["to first result"] = time.time() - float(os.environ.get(SPAWN, SCRIPT_START))
    figures["second step"] = timed(step)
    return figures


def child_dynamic(lengths: list[int]) -> dict:
    """Section c in one process: neuron then Inductor, ``dynamic=True``, inference and
    training, first and repeated call per sequence length."""
    import torch
    from dynamic_shapes import ServedGPT

    from torchneuron.compiler import dynamic, specialize_later

    import_stack("neuron")
    torch._dynamo.config.recompile_limit = 64
    torch._dynamo.config.accumulated_recompile_limit = 256
    torch.compile(lambda t: t + 1, backend="eager")(torch.ones(3))  # Dynamo's own warm-up
    generator = torch.Generator().manual_seed(0)
    inputs = {n: torch.randint(0, 512, (2, n), generator=generator) for n in [16, *lengths]}
    report = {}
    for backend in ("neuron", "inductor"):
        for mode in ("inference", "training"):
            specialize_later.drain()  # the last mode's background builds are done
            torch._dynamo.reset()
            dynamic.reset_stats()
            torch.manual_seed(0)
            model = lm_with_loss(ServedGPT(**DYNAMIC_GPT))
            step = gpt_step(model, backend, dynamic=True)
            if mode == "inference":
                fn = torch.compile(model.eval(), backend=backend, dynamic=True)

                def call(idx, fn=fn):
                    with torch.no_grad():
                        fn(idx).item()

            else:
                call = step
            first = timed(lambda call=call: call(inputs[16]))  # front half + first length
            new, repeated = [], []
            for n in lengths:
                new.append(timed(lambda n=n, call=call: call(inputs[n])))
                repeated.append(timed(lambda n=n, call=call: call(inputs[n])))
            report[f"{backend} {mode}"] = {
                "first": first,
                "new": new,
                "repeated": repeated,
                "stats": dynamic.stats() if backend == "neuron" else {},
            }
    return report


# -- section a ------------------------------------------------------------------------


def section_cold_warm() -> None:
    rows = []
    for kind in ("cnn-neuron", "gpt-neuron"):
        cache = tempfile.mkdtemp(prefix="ttfr-neuron-")
        inductor = tempfile.mkdtemp(prefix="ttfr-inductor-")
        rows.append((f"{kind} cold", run_child(kind, cache, inductor)))
        rows.append((f"{kind} warm", run_child(kind, cache, inductor)))
    inductor = tempfile.mkdtemp(prefix="ttfr-inductor-")
    cache = tempfile.mkdtemp(prefix="ttfr-neuron-")
    rows.append(("gpt-inductor cold", run_child("gpt-inductor", cache, inductor)))
    rows.append(("gpt-inductor warm", run_child("gpt-inductor", cache, inductor)))
    for kind in ("cnn-cpu", "gpt-cpu"):
        rows.append((kind, run_child(kind, tempfile.mkdtemp(), tempfile.mkdtemp())))
    columns = (
        "interpreter",
        "import torch",
        "setup",
        "first step",
        "to first result",
        "second step",
        "process",
    )
    print("\na. cold and warm processes (ms; each one process; 'import torch' autoloads the")
    print("   device; 'to first result': spawn to the end of the first step; 'process': to exit)")
    print(f"{'run':18}" + "".join(f"{c:>16}" for c in columns))
    for label, report in rows:
        print(f"{label:18}" + "".join(f"{ms(report[c]):>16}" for c in columns))
    got = dict(rows)
    print("ratios (first step; to first result):")
    for model, cpu in (("cnn", "cnn-cpu"), ("gpt", "gpt-cpu")):
        for temp in ("cold", "warm"):
            ours = got[f"{model}-neuron {temp}"]
            text = (
                f"  {model} neuron {temp}: first step {ratio(ours['first step'], got[cpu]['first step'])}"
                f" eager CPU; to first result "
                f"{ratio(ours['to first result'], got[cpu]['to first result'])} eager CPU"
            )
            if model == "gpt":
                theirs = got[f"gpt-inductor {temp}"]
                text += (
                    f"; first step {ratio(ours['first step'], theirs['first step'])} Inductor"
                    f" {temp}, to first result "
                    f"{ratio(ours['to first result'], theirs['to first result'])}"
                )
            print(text)


# -- section b ------------------------------------------------------------------------


def section_batch_sizes(sizes: list[int]) -> None:
    import random

    import torch
    import torch.nn.functional as F
    from torch import nn

    from torchneuron.compiler import dynamic_program, specialize_later
    from torchneuron.device import padded

    def make(device: str, width: int, order: list[int]):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(width, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        batches = {
            n: (torch.randn(n, width).to(device), (torch.arange(n) % 10).to(device))
            for n in [16, *order]
        }

        def step(n: int) -> float:
            x, y = batches[n]
            start = time.perf_counter()
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            synchronize(device)
            return time.perf_counter() - start

        return step

    def compiles() -> int:
        # a size compiles when it lowers an op's padded program or needs a new bucket's
        # specialization (built at once, or on the background thread while the interpreter
        # runs the bucket's calls)
        return (
            dynamic_program.stats()["specializations"]
            + padded.stats()["padded_programs"]
            + specialize_later.stats()["submitted"]
        )

    shuffled = list(sizes)
    random.Random(0).shuffle(shuffled)
    # each order on its own feature width: no program of one serves the other
    orders = {"ascending": (sizes, 64), "shuffled": (shuffled, 48)}
    figures = {}
    for device, name in [("neuron", "ascending"), ("neuron", "shuffled"), ("cpu", "ascending")]:
        order, width = orders[name]
        specialize_later.drain()  # nothing of the last order builds during this one
        step = make(device, width, order)
        warm = [step(16) for _ in range(5)]
        sightings, compiled = [], []
        for n in order:
            before = compiles()
            sightings.append([step(n) for _ in range(3)])
            compiled.append(compiles() > before)
        new = [s[0] for s in sightings]
        figures[device, name] = {
            "batch 16, warm": statistics.median(warm[2:]),
            "new batch size": statistics.median(new),
            " the first (lowers)": new[0],
            " that compiled": statistics.median(
                [t for t, c in zip(new, compiled) if c] or [math.nan]
            ),
            " that did not": statistics.median(
                [t for t, c in zip(new, compiled) if not c] or [math.nan]
            ),
            "2nd sighting": statistics.median(s[1] for s in sightings),
            "3rd sighting": statistics.median(s[2] for s in sightings),
            "sizes that compiled": [n for n, c in zip(order, compiled) if c],
        }
    print(f"\nb. eager MLP training step per batch size (ms, median over sizes {sizes})")
    for name, (order, _) in orders.items():
        print(f"   {name}: {order}")
        print(f"   sizes that compiled: {figures['neuron', name].pop('sizes that compiled')}")
    figures["cpu", "ascending"].pop("sizes that compiled")
    print(f"{'':20}{'ascending':>11}{'shuffled':>10}{'cpu':>8}{'asc/cpu':>9}{'shuf/cpu':>9}")
    for row, ascending in figures["neuron", "ascending"].items():
        mixed = figures["neuron", "shuffled"][row]
        cpu = figures["cpu", "ascending"][row]
        print(
            f"{row:20}{ms(ascending):>11}{ms(mixed):>10}{ms(cpu):>8}"
            f"{ratio(ascending, cpu):>9}{ratio(mixed, cpu):>9}"
        )


# -- section c ------------------------------------------------------------------------


def section_dynamic(lengths: list[int]) -> None:
    cache = tempfile.mkdtemp(prefix="ttfr-neuron-")
    inductor = tempfile.mkdtemp(prefix="ttfr-inductor-")
    text = ",".join(map(str, lengths))
    runs = [(p, run_child("dynamic", cache, inductor, "--lengths", text)) for p in (1, 2)]
    print(
        f"\nc. torch.compile(dynamic=True), dynamic_shapes.ServedGPT {DYNAMIC_GPT} batch 2,\n"
        f"   inference (loss under no_grad) and training step; first call at length 16 "
        f"(front half + one\n   specialization), then new lengths {lengths} "
        "(ms; medians over lengths);\n   process 2: a fresh process on process 1's caches"
    )
    header = f"{'process':8}{'compiler':22}{'first (16)':>12}{'new length':>12}"
    print(header + f"{'repeated':>10}{'new/rep':>9}{'new/Ind':>9}  neuron stats")
    for process, report in runs:
        for backend, mode in itertools.product(("neuron", "inductor"), ("inference", "training")):
            figures = report[f"{backend} {mode}"]
            new = statistics.median(figures["new"])
            repeated = statistics.median(figures["repeated"])
            inductor_new = statistics.median(report[f"inductor {mode}"]["new"])
            versus = ratio(new, inductor_new) if backend == "neuron" else ""
            print(
                f"{process:<8}{backend + ' ' + mode:22}{ms(figures['first']):>12}{ms(new):>12}"
                f"{ms(repeated):>10}{ratio(new, repeated):>9}{versus:>9}"
                f"  {' '.join(f'{k}={v}' for k, v in figures['stats'].items())}"
            )
    print(f"process wall times: {runs[0][1]['process']:.1f} s, {runs[1][1]['process']:.1f} s")
    for mode in ("inference", "training"):
        # a length whose bucket an earlier length's bucket holds compiles nothing
        each = runs[0][1][f"neuron {mode}"]["new"]
        listed = ", ".join(f"{n}: {t * 1e3:.0f}" for n, t in zip(lengths, each))
        print(f"neuron {mode}, process 1, ms per new length: {listed}")
    for backend, mode in itertools.product(("neuron", "inductor"), ("inference", "training")):
        one, two = (report[f"{backend} {mode}"] for _, report in runs)
        print(
            f"{backend} {mode}: process 2 / process 1: first call "
            f"{ratio(two['first'], one['first'])}, new lengths "
            f"{ratio(statistics.median(two['new']), statistics.median(one['new']))}"
        )


# -- section d ------------------------------------------------------------------------


def small_neff(folder: str) -> str:
    """A NEFF of a small MLP, written by ``neuronc compile`` from a torch.export program."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    program = os.path.join(folder, "mlp.pt2")
    torch.export.save(torch.export.export(model, (torch.randn(4, 32),)), program)
    neff = os.path.join(folder, "mlp.neff")
    subprocess.run([NEURONC, "compile", program, "-o", neff], check=True, capture_output=True)
    return neff


def section_cli(repeats: int) -> None:
    folder = tempfile.mkdtemp(prefix="ttfr-cli-")
    neff = small_neff(folder)
    commands = [
        ("python -c pass", [PYTHON, "-c", "pass"], None),
        ("python -c 'import torch' (no autoload)", [PYTHON, "-c", "import torch"], "0"),
        ("python -c 'import torch'", [PYTHON, "-c", "import torch"], None),
        ("neuronc --help", [NEURONC, "--help"], None),
        ("python -m torchneuron.cli --help", [PYTHON, "-m", "torchneuron.cli", "--help"], None),
        ("neuronc inspect mlp.neff", [NEURONC, "inspect", neff], None),
    ]
    print(f"\nd. command-line start-up (ms, median of {repeats} processes)")
    baseline = None
    for label, argv, autoload in commands:
        env = dict(os.environ)
        if autoload is not None:
            env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = autoload
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            samples.append(time.perf_counter() - start)
        median = statistics.median(samples)
        if label == "python -c 'import torch'":
            baseline = median
        versus = f"{ratio(median, baseline)} import torch" if baseline else ""
        print(f"  {label:42}{ms(median)}  {versus}")


# -- main -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--only", default="a,b,c,d", help="sections, e.g. a,c")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--lengths", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "dynamic":
        report = child_dynamic([int(n) for n in args.lengths.split(",")])
        print(json.dumps(report))
        return
    if args.child:
        print(json.dumps(child_first_step(args.child)))
        return
    sections = set(args.only.split(","))
    sizes = [3 + 2 * i for i in range(5 if args.quick else 16)]  # 3, 5, ..., 33
    lengths = [17, 23, 31, 37, 43, 53, 59, 71][: 3 if args.quick else 8]
    started = time.perf_counter()
    print(
        "single-threaded (torch threads 1, TORCHNEURON_XLA_SINGLE_THREADED=1), "
        "TORCHNEURON_NO_FALLBACK=1, fresh cache directories"
    )
    if "a" in sections:
        section_cold_warm()
    if "b" in sections:
        import torch

        import torchneuron  # noqa: F401

        torch.set_num_threads(1)
        section_batch_sizes(sizes)
    if "c" in sections:
        section_dynamic(lengths)
    if "d" in sections:
        section_cli(3 if args.quick else 5)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
