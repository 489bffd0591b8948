"""Per ATen op: how eager mode and torch.compile run it, and which OpInfo entries call it.

The op set is every overload in the ``aten`` namespace that the dispatcher holds a schema
for (``torch._C._dispatch_get_all_op_names()``); the TorchScript scalar built-ins that are
registered as implementations only (``aten::acos.Scalar``, ``aten::log.float``) have no
schema and never take a tensor, so they are left out.

Each op's status in a mode is read from the code's own tables, in the order the code
decides (``Status``: a word from ``WORDS`` and the reason in a few words):

- eager (``device.dispatch``): the PrivateUse1 kernel the dispatcher holds
  (``EagerKernels``). A kernel the device registered itself (the native layer's views,
  copies and allocation; the sparse module's dense-to-sparse conversions): native.
  PyTorch's composite kernel (CompositeExplicitAutograd, CompositeImplicitAutograd): the
  worst status of the ops it sent to the device in the traced samples, else (no sample
  reached it, or none ran it to its end) decomposed; an out= or in-place form never
  reached has its functional form's. Otherwise ``run_op``, whose route
  (``plan.plan_for``) is random or host (the CPU kernel by design; refused where the CPU
  has none), or compiled: a program traced with the lowering's decomposition table and
  lowered (the lowering, below);
- compile (``backend``): AOTAutograd functionalizes and decomposes with the same table,
  then the graph is lowered (the lowering, below), or runs on the CPU as a whole;
- the lowering: what a conformance run saw first (the op in a float32 graph that passed:
  native; named by a fallback: CPU fallback; both: depends); else an in-place or out=
  op is lowered as its functional form (functionalization); an op with one of our
  lowering rules is native; one the decomposition table or a CompositeImplicitAutograd
  kernel rewrites is decomposed; one torch-mlir's dialect does not define is imported
  opaque and falls back (refused where the CPU has no kernel for it either); the rest
  reach torch-mlir's conversion patterns, compiled C++ with no table to read: unknown.

``entry_traces`` traces the OpInfo entries to the ATen ops they call on each mode's
path; ``op_support`` joins it with the tables, the expectations file and the fuzzer.

Private interfaces this reads (a torch or torch-mlir upgrade may move them; the sync
test then fails here, not silently): torch's dispatcher queries
(``torch._C._dispatch_get_all_op_names``, ``_dispatch_get_registrations_for_dispatch_key``,
``_dispatch_has_kernel_for_dispatch_key``, ``_dispatch_has_computed_kernel_for_dispatch_key``,
``_AutoDispatchBelowAutograd``, ``OpOverload._op_dk``), ``torch.testing._internal``'s
seeding, ``torchgen.model``'s schema parser, and torch-mlir's
``fx_importer._get_mlir_op_name_for_schema``; and, of this project, the conformance
runner's sample helpers (``opinfo._cloned``, ``_HOST_ARGUMENTS``,
``_SAMPLE_SEARCH_LIMIT``) and ``fallbacks._op_and_reason``, so that the table reads the
samples and reasons exactly as conformance does.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._python_dispatch import TorchDispatchMode

from torchneuron.testing.conformance.opinfo import _cloned

MODES = ("eager", "compile")
NATIVE = "native"
HOST = "host"
FALLBACK = "CPU fallback"
REFUSED = "refused"
DEPENDS = "depends"
DECOMPOSED = "decomposed"
UNKNOWN = "unknown"
# Each status word and what it means, in the order the summary lists them.
WORDS = {
    NATIVE: "runs on the NeuronCore: a device kernel, a compiled program, or a lowering",
    HOST: "runs its CPU kernel by design, without a fallback warning: random ops (with "
    "the device generator's state), data-dependent output shapes, host values",
    FALLBACK: "cannot be lowered: runs on the CPU with a `CpuFallbackWarning` (an error "
    "with `TORCHNEURON_NO_FALLBACK=1`); in compile mode the whole graph does",
    REFUSED: "raises a clear error: no lowering, and the CPU has no kernel to fall back to",
    DEPENDS: "native for some conformance samples and CPU fallback for others: it "
    "depends on the arguments",
    DECOMPOSED: "runs as the ATen ops a decomposition (PyTorch's kernel, or the "
    "lowering's table) rewrites it into; no conformance sample showed all of them, so "
    "its status is theirs",
    UNKNOWN: "reaches torch-mlir's StableHLO conversion, whose op coverage is compiled "
    "C++ with no table to read, and no conformance sample shows whether it lowers",
}


@dataclass(frozen=True)
class Status:
    word: str  # a key of WORDS
    why: str  # the table or observation that decided it
    form_of: str | None = None  # the functional op whose status an in-place/out= op has

    def __str__(self) -> str:
        return f"{self.word} ({self.why})"


@dataclass(frozen=True)
class OpSupport:
    """One ATen op's row."""

    name: str  # aten::add.Tensor; the default overload without a suffix (aten::abs)
    eager: Status
    compile: Status
    callers: tuple[str, ...]  # OpInfo entries that call it, direct callers first
    verified: tuple[str, ...]  # the modes in which one of them passes (float32)
    fuzzed: bool


def op_name(op: torch._ops.OpOverload) -> str:
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def aten_ops() -> dict[str, torch._ops.OpOverload]:
    """``{name: overload}`` of every ATen op the dispatcher holds a schema for, by name."""
    found = {}
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        base, _, overload = name.partition(".")
        try:
            torch._C._dispatch_find_schema_or_throw(base, overload)
        except RuntimeError:
            continue  # an implementation without a schema (TorchScript's scalar math)
        packet = getattr(torch.ops.aten, base.removeprefix("aten::"))
        found[name] = getattr(packet, overload or "default")
    return found


# -- what each OpInfo entry calls ---------------------------------------------------------


class EagerKernels:
    """The PrivateUse1 kernel the dispatcher holds for an op, as it picks one: a direct
    kernel (the device's own, or ``dispatch.run_op``), else PyTorch's composite kernel,
    else the device's fallback (``run_op`` again)."""

    COMPOSITE_KEYS = (
        torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional,
        torch._C.DispatchKey.CompositeExplicitAutograd,
        torch._C.DispatchKey.CompositeImplicitAutograd,
    )

    def __init__(self):
        from torchneuron.device import dispatch

        # kernels calling ``run_op``: op -> the op they run
        self.run_op: dict[str, str] = dispatch.kernel_ops()
        self.direct = set(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
        self.known = set(torch._C._dispatch_get_all_op_names())

    def device_kernel(self, name: str) -> bool:
        """A kernel the device registered itself (the native layer's; ``device.sparse``'s)."""
        return name in self.direct and name not in self.run_op

    def composite_key(self, name: str) -> torch._C.DispatchKey | None:
        """The key of the PyTorch composite kernel the device runs for the op, if any."""
        if name in self.direct or name not in self.known:
            return None  # (not known: a TorchScript built-in such as aten::size)
        for key in self.COMPOSITE_KEYS:
            if torch._C._dispatch_has_kernel_for_dispatch_key(name, key.name):
                return key
        return None


class _Recorder(TorchDispatchMode):
    """Records each op called at its shallowest depth; used below autograd, so that
    composite ops reach it whole. ``run`` decides how the op is computed."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.ops: dict[str, int] = {}

    def call(self, info, arguments: tuple, kwargs: dict) -> None:
        """Call the entry's function on the sample (on the CPU), recording."""
        with torch._C._AutoDispatchBelowAutograd(), self:
            torch.manual_seed(0)
            info.op(*_cloned(arguments), **_cloned(kwargs))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = op_name(func)
        self.ops[name] = min(self.ops.get(name, len(self.stack)), len(self.stack))
        self.stack.append(name)
        try:
            return self.run(name, func, args, kwargs or {})
        finally:
            self.stack.pop()


class _LoweringPath(_Recorder):
    """torch.compile's path: the decomposition table first, then PyTorch's
    CompositeImplicitAutograd kernel, else the op itself (its CPU kernel)."""

    mode = "compile"

    def __init__(self, table: dict):
        super().__init__()
        self.table = table

    def run(self, name, func, args, kwargs):
        decomposition = self.table.get(func)
        if decomposition is not None:
            with self:
                result = decomposition(*args, **kwargs)
            if result is not NotImplemented:
                return result
        with self:
            result = func.decompose(*args, **kwargs)
        if result is not NotImplemented:
            return result
        return func(*args, **kwargs)


class _EagerPath(_Recorder):
    """The eager device's path: an op with a composite kernel runs that kernel (the ops it
    sends to the device recorded for it in ``calls``; ``finished`` once one ran to its
    end); any other op reaches the device whole (the fake tensor's shape function runs)."""

    mode = "eager"

    def __init__(self, kernels: EagerKernels):
        super().__init__()
        self.kernels = kernels
        self.calls: dict[str, set[str]] = {}  # composite op -> ops it sent to the device
        self.finished: set[str] = set()  # composite ops whose kernel ran to its end
        self.pending: list[set[str]] = []  # the ops sent by the composite kernels running

    def call(self, info, arguments: tuple, kwargs: dict) -> None:
        """Call the entry's function on fake tensors of the neuron device, where
        conformance moves the sample (a composite kernel may pick its callees by device:
        ``_convolution``); an op whose shape depends on values stops the call there."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.utils import _pytree as pytree

        from torchneuron.target.topology import DEVICE_TYPE
        from torchneuron.testing.conformance.opinfo import _HOST_ARGUMENTS

        fake = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())

        def on_device(value):
            if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
                return value
            with fake:
                return torch.empty_strided(
                    value.shape, value.stride(), dtype=value.dtype, device=DEVICE_TYPE
                )

        host = _HOST_ARGUMENTS.get(info.name, ())
        arguments = tuple(
            value if position in host else pytree.tree_map(on_device, value)
            for position, value in enumerate(arguments)
        )
        kwargs = pytree.tree_map(on_device, kwargs)
        with fake, torch._C._AutoDispatchBelowAutograd(), self:
            info.op(*arguments, **kwargs)

    def run(self, name, func, args, kwargs):
        if name in self.stack[:-1]:  # a composite kernel calling its own op (detach)
            return func(*args, **kwargs)
        key = self.kernels.composite_key(name)
        if key is None:
            for sent in self.pending:
                sent.add(name)
            return func(*args, **kwargs)
        sent: set[str] = set()
        self.pending.append(sent)
        try:
            with self:
                result = func._op_dk(key, *args, **kwargs)
            self.finished.add(name)
            return result
        finally:
            self.pending.pop()
            self.calls.setdefault(name, set()).update(sent)


@dataclass(frozen=True)
class Traces:
    """What the OpInfo entries' first float32 samples call ({entry: {op: depth}}, depth 0:
    called by the entry's function itself), on each mode's path."""

    compile: dict[str, dict[str, int]]
    eager: dict[str, dict[str, int]]
    # composite op -> the ops its PyTorch kernel sent to the device, over every entry
    kernel_calls: dict[str, frozenset[str]]
    # the composite ops whose kernel ran to its end at least once (the others stopped at
    # an op whose result depends on values, which fake tensors do not have)
    finished: frozenset[str]


def _samples(info) -> Iterator:
    """The entry's float32 samples on the CPU as ``info.sample_inputs`` yields them, the
    random generators seeded alike before each, but without its walk up the call stack
    looking for a unittest test (seconds per entry under pytest)."""
    from torch.testing._internal.common_utils import SEED, set_rng_seed

    set_rng_seed(SEED)  # (a generator that makes its list at once draws here)
    samples = iter(info.sample_inputs_func(info, "cpu", torch.float32, False))
    while True:
        set_rng_seed(SEED)
        sample = next(samples, None)
        if sample is None:
            return
        yield sample


def _trace_entry(info, recorders: list[_Recorder]) -> None:
    """Run under each recorder the float32 samples its mode's conformance run takes: the
    first ones the CPU accepts."""
    from torchneuron.testing.conformance.opinfo import _SAMPLE_SEARCH_LIMIT, default_samples

    if torch.float32 not in info.supported_dtypes("cpu"):
        return  # conformance skips the entry in float32
    wanted = {recorder: default_samples(recorder.mode, "float32") for recorder in recorders}
    used = 0
    try:
        for index, sample in enumerate(_samples(info)):
            if used >= max(wanted.values()) or index >= _SAMPLE_SEARCH_LIMIT:
                break
            arguments, kwargs = (sample.input, *sample.args), sample.kwargs
            try:
                torch.manual_seed(0)
                info.op(*_cloned(arguments), **_cloned(kwargs))
            except Exception:
                continue  # the CPU refuses it: conformance looks for another sample
            used += 1
            for recorder in recorders:
                if used > wanted[recorder]:
                    continue
                try:
                    recorder.call(info, arguments, kwargs)
                except Exception:
                    pass  # a decomposition or a fake tensor refused it: keep what it called
    except Exception:
        pass  # the generator itself fails: conformance skips the entry


@functools.lru_cache(maxsize=1)
def entry_traces() -> Traces:
    """The ops every OpInfo entry calls, on both paths (15 to 30 seconds)."""
    from torchneuron.lowering import decomposition_table
    from torchneuron.testing.conformance.opinfo import op_database

    table, kernels = decomposition_table(), EagerKernels()
    compiled, eager, calls, finished = {}, {}, {}, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for entry, info in op_database().items():
            lowering, device = _LoweringPath(table), _EagerPath(kernels)
            _trace_entry(info, [lowering, device])
            compiled[entry], eager[entry] = lowering.ops, device.ops
            for name, called in device.calls.items():
                calls.setdefault(name, set()).update(called)
            finished |= device.finished
    sent = {name: frozenset(called) for name, called in calls.items()}
    return Traces(compiled, eager, sent, frozenset(finished))


# -- the tables the code decides by -------------------------------------------------------


def _functional_forms(ops: dict[str, torch._ops.OpOverload]) -> dict[str, str]:
    """``{in-place or out= op: its functional op}``, by torchgen's schema signature (the
    form functionalization writes the op as)."""
    from torchgen.model import FunctionSchema, SchemaKind

    functional: dict[str, str] = {}
    mutable: dict[str, str] = {}
    for name, op in ops.items():
        # torchgen reads list defaults written without spaces (``int[2] stride=[1,1]``)
        text = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace(" ", ""), str(op._schema))
        try:
            schema = FunctionSchema.parse(text)
        except (AssertionError, RuntimeError):
            continue  # a type torchgen does not know (Dict(...)): no functional form found
        signature = str(schema.signature())
        kind = schema.kind()
        if kind is SchemaKind.functional:
            functional.setdefault(signature, name)
        elif kind in (SchemaKind.inplace, SchemaKind.out):
            mutable[name] = signature
    return {name: functional[sig] for name, sig in mutable.items() if sig in functional}


def _torch_mlir_ops(ops: dict[str, torch._ops.OpOverload]) -> set[str]:
    """The ops torch-mlir's importer emits as ops of its dialect (not ``torch.operator``)."""
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras.fx_importer import _get_mlir_op_name_for_schema

    from torchneuron.mlir_context import new_context

    context = new_context()
    torch_dialect.register_dialect(context)
    return {
        name
        for name, op in ops.items()
        if context.is_registered_operation(_get_mlir_op_name_for_schema(op._schema))
    }


# Status words from worst to best: a composite kernel's calls give it their worst.
_WORST_FIRST = (REFUSED, FALLBACK, DEPENDS, UNKNOWN, DECOMPOSED, HOST, NATIVE)


class _Decider:
    """Each op's eager and compile status, from the tables and the conformance results."""

    def __init__(self, ops, traces: Traces, passing, fallen_back):
        from torchneuron.device.plan import Route, plan_for
        from torchneuron.lowering import decomposition_table
        from torchneuron.lowering.rules import lowering_rules

        self.ops = ops
        self.callers = {mode: _callers(getattr(traces, mode)) for mode in MODES}
        self.kernel_calls, self.finished = traces.kernel_calls, traces.finished
        self.passing = passing  # mode -> entries whose float32 line passes
        self.fallen_back = fallen_back  # mode -> ops a float32 fallback line names
        self.rules = lowering_rules()
        self.table = decomposition_table()
        self.functional = _functional_forms(ops)
        self.dialect = _torch_mlir_ops(ops)
        self.kernels = EagerKernels()
        self.plan_for, self.host_routes = plan_for, {Route.RANDOM: "random", Route.HOST: "host"}

    def eager(self, name: str) -> Status:
        if self.kernels.device_kernel(name):
            return Status(NATIVE, "device kernel")
        runs = self.kernels.run_op.get(name, name)
        if runs != name:  # a kernel of ours that runs another op (convolution_overrideable)
            return _as(self.lowering("eager", runs), runs)
        key = self.kernels.composite_key(name)
        if key is not None:  # the dispatcher prefers it to the device's fallback
            calls = self.kernel_calls.get(name)
            if calls is not None:
                worst = self._worst(calls)
                if worst.word != NATIVE or name in self.finished:
                    return worst  # (what an unfinished kernel sent can only make it worse)
            functional = self.functional.get(name)
            if functional is not None and key.name != "CompositeImplicitAutograd":
                # an out= or in-place form: computes its functional op, writes the result
                return _as(self.eager(functional), functional)
            return Status(DECOMPOSED, "PyTorch kernel")
        route = self.host_routes.get(self.plan_for(self.ops[name]).route)
        if route is not None:
            return Status(HOST, f"{route} route") if _cpu_kernel(name) else _NO_CPU_KERNEL
        return self.lowering("eager", name)

    def compile(self, name: str) -> Status:
        return self.lowering("compile", name)

    def lowering(self, mode: str, name: str) -> Status:
        seen = self._seen(mode, name)
        if seen is not None:
            return seen
        functional = self.functional.get(name)
        if functional is not None:  # functionalization writes it as its functional form
            return _as(self.lowering(mode, functional), functional)
        op = self.ops[name]
        if op in self.rules:
            return Status(NATIVE, "lowering rule")
        if op in self.table:
            return Status(DECOMPOSED, "decomposition table")
        if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
            return Status(DECOMPOSED, "PyTorch kernel")
        if name not in self.dialect:
            return Status(FALLBACK, "not a torch-mlir op") if _cpu_kernel(name) else _NO_CPU_KERNEL
        return Status(UNKNOWN, "torch-mlir")

    def _seen(self, mode: str, name: str) -> Status | None:
        passed = any(entry in self.passing[mode] for entry in self.callers[mode].get(name, ()))
        fell = name in self.fallen_back[mode]
        if passed and fell:
            return Status(DEPENDS, "conformance")
        if passed:
            return Status(NATIVE, "conformance")
        if fell:
            return Status(FALLBACK, "conformance")
        return None

    def _worst(self, calls: frozenset[str]) -> Status:
        """A composite kernel's status: that of the worst op it sent to the device."""
        rated = [(self.eager(name).word, name) for name in sorted(calls) if name in self.ops]
        if not rated:
            return Status(NATIVE, "PyTorch kernel")  # it computes nothing on the device
        word, name = min(rated, key=lambda pair: _WORST_FIRST.index(pair[0]))
        return Status(word, "PyTorch kernel" if word == NATIVE else f"via `{name}`")


_NO_CPU_KERNEL = Status(REFUSED, "no CPU kernel")


def _as(status: Status, functional: str) -> Status:
    return Status(status.word, f"as `{functional}`", functional)


def _cpu_kernel(name: str) -> bool:
    return torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "CPU")


def _callers(traced: dict[str, dict[str, int]]) -> dict[str, tuple[str, ...]]:
    """``{op: entries that call it}``, those calling it directly first, then by name."""
    found: dict[str, list[tuple[int, str]]] = {}
    for entry, ops in traced.items():
        for name, depth in ops.items():
            found.setdefault(name, []).append((depth, entry))
    return {name: tuple(entry for _, entry in sorted(pairs)) for name, pairs in found.items()}


def _either(traces: Traces) -> dict[str, dict[str, int]]:
    """``{entry: {op: depth}}`` over both paths (the shallower depth)."""
    merged = {}
    for entry in traces.compile.keys() | traces.eager.keys():
        ops = dict(traces.eager.get(entry, {}))
        for name, depth in traces.compile.get(entry, {}).items():
            ops[name] = min(depth, ops.get(name, depth))
        merged[entry] = ops
    return merged


def _conformance(lines: dict) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per mode: the entries whose float32 line passes, and the ops fallback lines name."""
    from torchneuron.testing.conformance.fallbacks import _op_and_reason

    passing = {mode: set() for mode in MODES}
    fallen_back = {mode: set() for mode in MODES}
    for (mode, dtype, entry), line in lines.items():
        if dtype != "float32":
            continue
        if line.kind == "pass":
            passing[mode].add(entry)
        elif line.kind == "xfail" and line.status == "fallback":
            op, _ = _op_and_reason(mode, line.reason)
            fallen_back[mode].add(op)
    return passing, fallen_back


def op_support(
    lines: dict,
    traces: Traces,
    fuzzed: set[str],
    ops: dict[str, torch._ops.OpOverload] | None = None,
) -> list[OpSupport]:
    """One row per ATen op (``ops``, default ``aten_ops()``), sorted by name.

    ``lines`` are the conformance expectations (``expectations.load``), ``traces`` the
    ops each OpInfo entry calls (``entry_traces``), ``fuzzed`` the entries the fuzzer covers.
    """
    ops = aten_ops() if ops is None else ops
    passing, fallen_back = _conformance(lines)
    decide = _Decider(ops, traces, passing, fallen_back)
    callers = _callers(_either(traces))
    rows = []
    for name in sorted(ops):
        calling = callers.get(name, ())
        verified = tuple(
            mode
            for mode in MODES
            if any(entry in passing[mode] for entry in decide.callers[mode].get(name, ()))
        )
        rows.append(
            OpSupport(
                name=name,
                eager=decide.eager(name),
                compile=decide.compile(name),
                callers=calling,
                verified=verified,
                fuzzed=any(entry in fuzzed for entry in calling),
            )
        )
    return rows


def count_words(rows: Iterable[OpSupport], status: Callable[[OpSupport], Status]) -> dict:
    """``{word: how many rows}`` for the statuses ``status`` picks, in ``WORDS`` order."""
    counts = dict.fromkeys(WORDS, 0)
    for row in rows:
        counts[status(row).word] += 1
    return {word: count for word, count in counts.items() if count}
