"""Adaptive eager execution: chains of elementwise and reduction launches run as one program.

Eager ops on the device are launches (``launch.Launch``: one compiled op call with
its input tensors and preallocated outputs) queued per device. The ``Fuser`` sits
in front of the queues (``streams.install_fuser``): it holds back consecutive
*fusible* launches of one device and stream as a chain, and hands the chain over
when it ends. A launch is fusible when its op is functional (writes none of its
arguments) and elementwise (``torch.Tag.pointwise``), a dtype conversion or a
reduction (``ALSO_FUSIBLE``), its program computes every output (no empty or
undefined ones), it has no per-call check (integer division by zero), and its
tensors have dtypes of ``FUSIBLE_DTYPES``.
A chain ends at

- a launch that is not fusible, or of another stream (the held launches go first);
- a synchronization (``flush``: ``.item()``, ``.cpu()``, ``print``, ``synchronize``)
  and any op that does not run as a launch;
- an input that overlaps an output of the chain without being that very tensor (a
  view of an intermediate): a program never reads memory it is still to write;
- ``CHAIN_CAP`` launches.

A chain is described by its *structure*: the compiled-cache key of each launch, the
wiring (which input of launch j is output k of launch i, which come from outside;
equal outside tensors are one input) and which outputs are live. Fusion is adaptive:
the first ``SEEN_BEFORE_FUSING - 1`` times a structure is seen it runs launch by
launch, so a one-off sequence never pays for a compile. From then on it runs as one
program (cached by structure) that takes the outside tensors and every launch's
scalars, and writes every output something besides the chain may read: the caller
may hold any intermediate, but one that only the chain references (a temporary of
``0.5 * x * (1 + t)``) is not written, nor kept in memory (``chain.Chain.live`` counts the
references). The program composes the launches' own traced functions
(``compiled._traceable``).

Bit for bit. Compiled together, two ops could lose their rounding points: XLA on the
CPU contracts a multiply and a following add into one FMA, and keeps a bfloat16
intermediate in float32 (excess precision). So every floating value that passes from
one op to another goes through an integer identity the compiler cannot see through
(``_opaque``: its bits xor a zero that is a program input), and each op computes
from exactly the rounded values its own program would read. An optimization barrier
is not enough: XLA removes barriers before fusing, and the FMA survives.

And proven: the first run of a structure's program runs the chain launch by launch
too, and compares every output byte for byte. Only a structure shown equal is fused
from then on; one that differs (or does not compile) is never fused again
(``stats()`` counts both). A fused result that was not shown equal is never returned.

Off switches: ``torch.use_deterministic_algorithms(True)`` and
``TORCHNEURON_EAGER_FUSION=0`` (both read per launch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from torchneuron import settings
from torchneuron.device import _C, arrays, programs
from torchneuron.device.chain import Chain
from torchneuron.device.compiled import _traceable
from torchneuron.device.plan import Route
from torchneuron.lru import LRU

__all__ = ["Fuser", "clear", "enabled", "fusible", "install", "stats"]

CHAIN_CAP = 32
SEEN_BEFORE_FUSING = 2
STRUCTURE_ENTRIES = 1024

aten = torch.ops.aten

# Ops that fuse besides the pointwise-tagged ones: dtype conversions (``x.float()``) and
# reductions (with the elementwise ops that feed them or read them).
ALSO_FUSIBLE = frozenset(
    {
        aten._to_copy.default,
        aten.sum.default,
        aten.sum.dim_IntList,
        aten.mean.default,
        aten.mean.dim,
        aten.amax.default,
        aten.amin.default,
        aten.max.default,
        aten.min.default,
        aten.prod.default,
        aten.prod.dim_int,
    }
)

# Floating dtypes -> the integer dtype of the same width that carries their bits
# across an op boundary (``_opaque``); other fusible dtypes need no such care.
_BITS_AS_INTEGER = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}
FUSIBLE_DTYPES = frozenset(
    [*_BITS_AS_INTEGER, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]
)


def enabled() -> bool:
    """Whether launches may be fused now (deterministic algorithms and the variable say no)."""
    if torch.are_deterministic_algorithms_enabled():
        return False
    return settings.env_flag(settings.EAGER_FUSION, default=True)


_fusible_ops: dict[Any, bool] = {}


def _fusible_op(op: torch._ops.OpOverload) -> bool:
    known = _fusible_ops.get(op)
    if known is None:
        known = op in ALSO_FUSIBLE or torch.Tag.pointwise in op.tags
        _fusible_ops[op] = known
    return known


def fusible(launch) -> bool:
    """True for a launch that may join a chain (see the module docstring)."""
    plan = launch.plan
    if plan.mutated or not _fusible_op(plan.op):
        return False
    entry = launch.entry
    if entry.route is not Route.COMPILED or entry.divisor is not None or not launch.outputs:
        return False  # a padded program (``padded``) runs alone
    # every new output computed by the program (no undefined or empty ones)
    if not len(entry.fresh_metas) == len(entry.fresh) == len(launch.outputs):
        return False
    for tensor in launch.inputs:
        if tensor.dtype not in FUSIBLE_DTYPES:
            return False
    return all(output.dtype in FUSIBLE_DTYPES for output in launch.outputs)


def _short_name(launch) -> str:
    """``aten::add.Tensor`` -> ``add``."""
    return launch.name.split("::")[-1].split(".")[0]


class _Structure:
    """What is known of one chain structure: times seen, its program, whether it is proven."""

    __slots__ = (
        "seen",
        "program",
        "verified",
        "refused",
        "runs",
        "ops",
        "name",
        "written",
        "lock",
    )

    def __init__(self, ops: tuple[str, ...], name: str, live: tuple[bool, ...]):
        self.seen = 0
        self.program = None  # programs.ResidentProgram once compiled
        self.verified = False
        self.refused: str | None = None  # why it is never fused (compile or verification)
        self.runs = 0
        self.ops = ops
        self.name = name
        self.written = (sum(live), len(live))  # outputs the program writes, of all
        self.lock = threading.Lock()


def _forget(key: tuple, structure: _Structure) -> None:
    if structure.program is not None:
        programs.forget(structure.program)


_structures: LRU[tuple, _Structure] = LRU(STRUCTURE_ENTRIES, on_evict=_forget)
_counters_lock = threading.Lock()
_counters = {
    "chains": 0,  # chains of two or more launches handed over
    "fused_runs": 0,  # chains run as one program (after verification)
    "fused_ops": 0,  # launches those programs ran
    "programs": 0,  # fused programs compiled
    "verified": 0,  # programs shown equal to launch-by-launch execution
    "verification_failures": 0,  # programs that were not: their structure is never fused
    "compile_failures": 0,
}

# Tests only: called with the fused program's outputs before they are compared on
# the first run (a way to make verification fail on purpose).
verification_hook: Callable[[list], None] | None = None


def _count(name: str, amount: int = 1) -> None:
    with _counters_lock:
        _counters[name] += amount


def stats() -> dict:
    """Counters (see ``_counters``) and, under ``"structures"``, one row per structure
    fused or refused: its program name, its ops, runs, and its state."""
    with _counters_lock:
        result: dict[str, Any] = dict(_counters)
    rows = []
    for _, structure in _structures.items():
        if structure.program is None and structure.refused is None:
            continue
        state = "refused" if structure.refused else "fused" if structure.verified else "compiled"
        rows.append(
            {
                "name": structure.name,
                "ops": list(structure.ops),
                "outputs_written": structure.written[0],
                "outputs": structure.written[1],
                "runs": structure.runs,
                "state": state,
                "reason": structure.refused,
            }
        )
    result["structures"] = rows
    return result


def clear() -> None:
    """Forget every structure and program, and zero the counters (tests, benchmarks)."""
    _structures.clear()
    with _counters_lock:
        for name in _counters:
            _counters[name] = 0


# ---------------------------------------------------------------------------
# The fused program
# ---------------------------------------------------------------------------


def _opaque(value: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """``value`` itself, through an integer identity the compiler cannot see through."""
    carrier = _BITS_AS_INTEGER.get(value.dtype)
    if carrier is None:
        return value
    return torch.bitwise_xor(value.view(carrier), zero.to(carrier)).view(value.dtype)


def _composed(launches: list, wiring: list, outside_count: int, live: tuple) -> Callable:
    """One function of (outside tensors, every launch's scalars, a zero) returning the
    launches' outputs that are ``live``, in order."""
    parts = []
    for launch in launches:
        entry = launch.entry
        traced = _traceable(
            launch.plan, launch.values, len(launch.inputs), (True,) * len(entry.fresh), ()
        )
        parts.append((traced, len(launch.scalars)))

    def fused(*flat):
        outside = flat[:outside_count]
        zero = flat[-1]
        scalars = iter(flat[outside_count:-1])
        results: list[tuple] = []
        passed: dict[tuple[int, int], torch.Tensor] = {}  # outputs as later ops read them
        for (traced, scalar_count), links in zip(parts, wiring):
            inputs = []
            for link in links:
                if type(link) is int:
                    inputs.append(outside[link])
                    continue
                value = passed.get(link)
                if value is None:
                    value = passed[link] = _opaque(results[link[0]][link[1]], zero)
                inputs.append(value)
            inputs.extend(next(scalars) for _ in range(scalar_count))
            results.append(tuple(traced(*inputs)))
        every = [value for outputs in results for value in outputs]
        return tuple(value for value, wanted in zip(every, live) if wanted)

    return fused


def _compile(structure: _Structure, chain: Chain, live: tuple):
    """The fused program of ``chain`` (``programs.compile_resident``), loaded on its device."""
    from torchneuron.compiler import eager

    # the outside tensors as their launches captured them
    specs = [
        eager.TensorSpec(tuple(view.shape), tuple(view.stride()), view.dtype)
        for view in chain.outside
    ]
    for launch in chain.launches:
        for dtype in launch.entry.scalar_dtypes:
            specs.append(eager.TensorSpec((), (), arrays.torch_dtype(dtype)))
    specs.append(eager.TensorSpec((), (), torch.int64))
    key_parts = (
        "fused",
        tuple(launch.entry.program.key for launch in chain.launches),
        tuple(chain.wiring),
        live,
    )
    function = _composed(chain.launches, chain.wiring, len(chain.outside), live)
    return programs.compile_resident(
        structure.name, key_parts, specs, function, sum(live), chain.device
    )


_ZERO = np.zeros((), dtype=np.int64)


class FusedLaunch:
    """A chain run as one program: the queue item the fuser hands over for it."""

    __slots__ = ("device", "stream", "name", "structure", "chain", "live")

    def __init__(self, structure: _Structure, chain: Chain, live: tuple):
        self.device = chain.device
        self.stream = chain.stream
        self.name = structure.name
        self.structure = structure
        self.chain = chain
        self.live = live  # which outputs the program writes (``chain.Chain.live``)

    def release_tensors(self) -> None:
        """Queued: its launches' Python tensors are no longer needed (``Launch``'s)."""
        for launch in self.chain.launches:
            launch.release_tensors()

    def run(self) -> None:
        structure = self.structure
        program = structure.program  # compiled by the fuser, on the thread that issued
        if program is None or structure.refused is not None:
            self._run_each()  # it does not compile, or differs: launch by launch
            return
        if not structure.verified:
            self._verify(program)
            return
        results = program.execute(self.device, self._inputs())
        _C.write_arrays(self._host_outputs(), results)
        structure.runs += 1
        _count("fused_runs")
        _count("fused_ops", len(self.chain.launches))

    def _compile(self) -> None:
        from torchneuron.compiler import eager

        try:
            self.structure.program = _compile(self.structure, self.chain, self.live)
        except eager.OpCompileError as error:
            self.structure.refused = f"does not compile: {error.reason}"
            _count("compile_failures")
            return
        _count("programs")

    def _run_each(self) -> None:
        for launch in self.chain.launches:
            launch.run()

    def _verify(self, program) -> None:
        """Run the chain launch by launch (its outputs are those results) and the fused
        program; the structure is proven when every output is equal byte for byte."""
        self._run_each()
        results = program.execute(self.device, self._inputs())
        if verification_hook is not None:
            verification_hook(results)
        expected = _C.host_arrays(self._host_outputs())
        structure = self.structure
        for got, want in zip(results, expected, strict=True):
            if np.asarray(got).tobytes() != np.asarray(want).tobytes():
                structure.refused = "its results differ from launch-by-launch execution"
                _count("verification_failures")
                return
        if not structure.verified:
            structure.verified = True
            _count("verified")

    def _inputs(self) -> list:
        inputs = _C.host_arrays(self.chain.outside)
        for launch in self.chain.launches:
            inputs.extend(launch.scalars)
        inputs.append(_ZERO)
        return inputs

    def _host_outputs(self) -> list:
        views = [view for launch in self.chain.launches for view in launch.host_outputs]
        return [view for view, wanted in zip(views, self.live) if wanted]

    def __repr__(self) -> str:
        return f"FusedLaunch({self.name} on neuron:{self.device})"


# ---------------------------------------------------------------------------
# The fuser
# ---------------------------------------------------------------------------


class Fuser:
    """Holds chains of fusible launches per device (``streams.install_fuser``)."""

    def __init__(self) -> None:
        self._chains: dict[int, Chain] = {}
        self._lock = threading.Lock()

    def offer(self, launch) -> list:
        """The items to queue now for ``launch`` (none while it is held in a chain)."""
        device = launch.device
        with self._lock:
            chain = self._chains.get(device)
            if not (enabled() and fusible(launch)):
                if chain is None:
                    return [launch]
                items = self._close(device)
                items.append(launch)
                return items
            items = []
            if chain is not None and chain.stream != launch.stream:
                items = self._close(device)
                chain = None
            if chain is None:
                chain = self._chains[device] = Chain(device, launch.stream)
            if not chain.add(launch):  # it reads a view of an intermediate
                items.extend(self._close(device))
                chain = self._chains[device] = Chain(device, launch.stream)
                chain.add(launch)
            if len(chain.launches) >= CHAIN_CAP:
                items.extend(self._close(device))
            return items

    def held(self, device: int) -> int:
        """How many launches are held back for ``device``."""
        chain = self._chains.get(device)
        return 0 if chain is None else len(chain.launches)

    def flush(self, device: int) -> list:
        """The items held for ``device``, to queue now (a synchronization point)."""
        with self._lock:
            if device not in self._chains:
                return []
            return self._close(device)

    def _close(self, device: int) -> list:
        chain = self._chains.pop(device)
        launches = chain.launches
        if len(launches) < 2:
            return list(launches)
        _count("chains")
        live = chain.live()
        key = (chain.structure(), live)
        structure = _structures.get(key)
        if structure is None:
            ops = tuple(launch.name for launch in launches)
            name = "fused." + ".".join(_short_name(launch) for launch in launches)
            structure = _Structure(ops, name, live)
            _structures.put(key, structure)
        structure.seen += 1
        if structure.refused is not None or structure.seen < SEEN_BEFORE_FUSING:
            return list(launches)
        fused = FusedLaunch(structure, chain, live)
        if structure.program is None:
            # Compiled here, on the thread that issued the ops, never on an execution
            # thread: tracing uses process-wide state (FX's patcher) that a trace on
            # the issuing thread (an op's first compile, torch.compile) also uses.
            with structure.lock:
                if structure.program is None and structure.refused is None:
                    fused._compile()
            if structure.program is None:
                return list(launches)
        return [fused]


_fuser = Fuser()


def install() -> None:
    """Put the fuser before the device queues (``streams.install_fuser``)."""
    from torchneuron.device import streams

    streams.install_fuser(_fuser)
