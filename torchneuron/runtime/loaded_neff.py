"""Loading a NEFF onto an emulated NeuronCore and executing it.

``load_neff`` checks the NEFF against the core (target, LNC), has its program verified
(``runtime/verifier.py``: parsed in a child process, checked against the allowlist of
ops, re-serialized), checks its ``sg00/def.json`` against its weights and its program's
``@main`` signature, accounts the program
and every weight against the core's HBM, compiles the program (cached) and
uploads the weights once. ``LoadedNeff.execute`` validates the inputs, accounts
the execution's input and output buffers against HBM for the duration of the
call, and runs the program.

The runtime loads and executes only: the schedule and the memory plan are read from
what the compiler wrote into the NEFF, never recomputed here.

When def.json carries a ``memory_plan`` (the compiler's liveness plan), each
execution also reserves the plan's temporaries arena, so a program whose peak does
not fit in the core's free HBM fails before it runs, with the usual out-of-memory
error. Every execution is reported to the hooks registered with
``add_execute_hook`` (the profiler's capture), with its host wall time.

Argument order follows def.json: ``@main`` takes the ``input`` and ``weight``
variables in the order they are listed; its results are the ``output`` variables
in order. Variables of other kinds (state, temporaries) are not arguments.

Outputs that the manifest's ``checks`` names are run-time checks (0-d bools that must
be true, e.g. every index in range): after each execution a false one raises the error
its check records (``NeuronIndexError``, an ``IndexError``, or ``NeuronCheckError``, a
``RuntimeError``), with its message; they are then dropped, so ``execute`` returns, and
``output_specs`` lists, the other outputs only. The null executor computes nothing, so
its checks are not evaluated.
"""

from __future__ import annotations

import math
import os
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from torchneuron.errors import describe_error
from torchneuron.estimate.scheduler import SCHEDULE_PATH, Schedule
from torchneuron.runtime import null_executor  # registers the "null" executor
from torchneuron.runtime.core import NeuronCore, get_core
from torchneuron.runtime.errors import (
    CHECK_ERRORS,
    InvalidNeffError,
    NeuronCheckError,
    NeuronRuntimeError,
    host_memory_exhausted,
    out_of_memory,
)
from torchneuron.runtime.executor import DEFAULT_EXECUTOR, PreparedProgram, get_executor
from torchneuron.runtime.program import ProgramSignature, TensorType
from torchneuron.settings import LNC, TARGET
from torchneuron.target.dtypes import dtype_name, numpy_dtype

ARGUMENT_KINDS = ("input", "weight")

# Called after every successful execute as hook(loaded_neff, host_start, host_seconds),
# host_start from time.perf_counter(). Hooks must be quick; the profiler is one.
ExecuteHook = Callable[["LoadedNeff", float, float], None]
_EXECUTE_HOOKS: list[ExecuteHook] = []


def add_execute_hook(hook: ExecuteHook) -> None:
    """Call ``hook`` after every ``LoadedNeff.execute`` in this process."""
    _EXECUTE_HOOKS.append(hook)


def remove_execute_hook(hook: ExecuteHook) -> None:
    """Stop calling ``hook``; a hook that is not registered is ignored."""
    if hook in _EXECUTE_HOOKS:
        _EXECUTE_HOOKS.remove(hook)


@dataclass(frozen=True)
class VariableSpec:
    """One input, output or weight variable of a loaded NEFF, as ``sg00/def.json``
    declares it (``compiler.eager.TensorSpec`` is something else: a torch tensor's
    shape, strides and dtype)."""

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str  # torch-style name
    numpy_dtype: np.dtype
    nbytes: int

    @property
    def tensor_type(self) -> TensorType:
        return TensorType(self.shape, self.dtype)

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r}: {self.dtype}{list(self.shape)}"


def load_neff(
    neff_or_source: Any,
    core: int | NeuronCore = 0,
    *,
    executor: str = DEFAULT_EXECUTOR,
) -> LoadedNeff:
    """Load a NEFF (a ``Neff``, NEFF bytes, or a path to a .neff file) onto a visible core.

    ``core`` is a device index into the visible cores (or a ``NeuronCore``). Raises
    ``NeffError`` for a file that is not a valid NEFF, and ``InvalidNeffError`` (a
    ``NeffError`` and a ``NeuronRuntimeError``) for one built for another chip or LNC,
    whose parts disagree, or whose program the verifier refuses (``runtime/verifier.py``:
    an op outside the allowlist, a program that crashed or hung the verifier's child
    process); ``NeuronOutOfMemoryError`` when its weights do not fit in HBM (nothing
    stays allocated then).
    """
    neff = _as_neff(neff_or_source)
    target_core = core if isinstance(core, NeuronCore) else get_core(core)
    return LoadedNeff(neff, target_core, get_executor(executor))


def _as_neff(source: Any) -> Any:
    if isinstance(source, (bytes, bytearray, memoryview, str, os.PathLike)):
        from torchneuron.neff import read_neff

        return read_neff(source)
    if all(
        hasattr(source, attr) for attr in ("name", "manifest", "definition", "program", "weights")
    ):
        return source
    raise TypeError(
        f"load_neff expects a Neff, NEFF bytes or a file path, got {type(source).__name__}"
    )


def _release(allocator, handles: list[int]) -> None:
    # Runs from unload() or from the garbage collector; must not touch the LoadedNeff.
    while handles:
        allocator.free(handles.pop())


class LoadedNeff:
    """A NEFF resident on one NeuronCore: weights uploaded, program compiled."""

    interpreted = False  # see runtime/interpreter.py's Interpreted

    def __init__(self, neff: Any, core: NeuronCore, executor: Any) -> None:
        self.name: str = str(neff.name)
        self.label = f"NEFF {self.name!r}"
        self.core = core
        self.manifest: dict = dict(neff.manifest or {})
        self.definition: dict = dict(neff.definition or {})
        self.executor_name: str = executor.name
        if "dynamic" in self.manifest:
            # The runtime runs static programs; the compiler specializes a dynamic one.
            raise InvalidNeffError(
                f"{self.label} holds a dynamic program (symbolic dimensions): it runs once "
                "specialized to concrete shapes: torchneuron.compiler.dynamic."
                "DynamicProgram.from_neff(neff).run(inputs), or neuronc run"
            )
        self._check_target(neff)
        self._schedule_json = (getattr(neff, "extra_files", None) or {}).get(SCHEDULE_PATH)
        self._schedule: Schedule | None | bool = None  # False: the NEFF's schedule is unreadable
        self.temporaries_bytes = self._planned_temporaries()

        variables = self._parse_variables()
        self.input_specs: tuple[VariableSpec, ...] = tuple(
            v for v in variables if v.kind == "input"
        )
        program_outputs = [v for v in variables if v.kind == "output"]
        # (position among the program's outputs, error class, message) per run-time check
        self._checks: tuple[tuple[int, type[NeuronCheckError], str], ...] = self._parse_checks()
        self._evaluate_checks = executor.name != null_executor.NULL_EXECUTOR
        check_positions = {position for position, _, _ in self._checks}
        self.output_specs: tuple[VariableSpec, ...] = tuple(
            v for i, v in enumerate(program_outputs) if i not in check_positions
        )
        self.weight_specs: tuple[VariableSpec, ...] = tuple(
            v for v in variables if v.kind == "weight"
        )
        arguments = [v for v in variables if v.kind in ARGUMENT_KINDS]
        input_index = {spec.name: i for i, spec in enumerate(self.input_specs)}
        argument_plan = [input_index[v.name] if v.kind == "input" else None for v in arguments]
        weight_arrays = [self._weight_array(neff, spec) for spec in self.weight_specs]

        program = neff.program
        if not isinstance(program, (bytes, bytearray, memoryview)) or len(program) == 0:
            raise InvalidNeffError(f"{self.label} has no program")
        declared = ProgramSignature(
            tuple(v.tensor_type for v in arguments), tuple(v.tensor_type for v in program_outputs)
        )
        self.prepared: PreparedProgram = executor.prepare(program, self.label, declared)
        self._check_signature(arguments, program_outputs)

        # HBM: the program and each weight stay resident until unload; allocate all
        # before uploading anything, and give everything back if one does not fit.
        hbm = core.hbm
        self._handles: list[int] = []
        self._finalizer = weakref.finalize(self, _release, hbm, self._handles)
        try:
            self._handles.append(hbm.allocate(len(program), f"program of {self.label}"))
            for spec in self.weight_specs:
                self._handles.append(
                    hbm.allocate(spec.nbytes, f"weight {spec.name!r} of {self.label}")
                )
        except BaseException:
            self._finalizer()
            raise
        self.resident_bytes = len(program) + sum(spec.nbytes for spec in self.weight_specs)
        self.execution_bytes = sum(s.nbytes for s in self.input_specs) + sum(
            s.nbytes for s in program_outputs
        )
        try:
            weight_buffers = [executor.upload_weight(array) for array in weight_arrays]
            self._run = executor.make_runner(
                self.prepared,
                argument_plan,
                [s.tensor_type for s in self.input_specs],
                weight_buffers,
            )
        except BaseException:
            self._finalizer()
            raise
        self._execution_tag = f"execution buffers of {self.label}" + (
            f" (inputs, outputs and {self.temporaries_bytes} bytes of temporaries)"
            if self.temporaries_bytes
            else ""
        )
        self._input_count = len(self.input_specs)
        self._input_checks = [(spec.shape, spec.numpy_dtype) for spec in self.input_specs]

    # -- loading checks -------------------------------------------------------

    def _check_target(self, neff: Any) -> None:
        core = self.core
        target = self.manifest.get("target")
        if target is not None and target != core.target:
            raise InvalidNeffError(
                f"{self.label} was compiled for {target}, but {core.description} is a "
                f"{core.target}: recompile for {core.target}, or set {TARGET}={target}"
            )
        lnc = self.manifest.get("lnc", getattr(neff, "lnc_size", None))
        if lnc is not None and lnc != core.lnc:
            raise InvalidNeffError(
                f"{self.label} was compiled for LNC={lnc}, but {core.description} runs at "
                f"LNC={core.lnc}: recompile with LNC={core.lnc}, or set {LNC}={lnc}"
            )

    def _planned_temporaries(self) -> int:
        plan = self.definition.get("memory_plan")
        if plan is None:
            return 0
        size = plan.get("temporaries_bytes") if isinstance(plan, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InvalidNeffError(
                f"{self.label}: sg00/def.json memory_plan.temporaries_bytes is {size!r}, "
                "not a byte count"
            )
        return size

    def _parse_variables(self) -> list[VariableSpec]:
        variables = self.definition.get("variables")
        if not isinstance(variables, list):
            raise InvalidNeffError(f"{self.label}: sg00/def.json has no 'variables' list")
        specs: list[VariableSpec] = []
        seen: set[str] = set()
        for position, variable in enumerate(variables):
            where = f"{self.label}: sg00/def.json variables[{position}]"
            if not isinstance(variable, dict):
                raise InvalidNeffError(f"{where} is not an object")
            kind = variable.get("kind")
            if kind not in ("input", "output", "weight"):
                continue
            name = variable.get("name")
            if not isinstance(name, str) or not name:
                raise InvalidNeffError(f"{where} ({kind}) has no name")
            if name in seen:
                raise InvalidNeffError(f"{where}: variable name {name!r} appears twice")
            seen.add(name)
            where = f"{self.label}: {kind} {name!r}"
            shape = variable.get("shape")
            if not isinstance(shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
            ):
                raise InvalidNeffError(f"{where} has shape {shape!r}, not a list of sizes >= 0")
            dtype = numpy_dtype(variable.get("dtype"), where, error=InvalidNeffError)
            nbytes = math.prod(shape) * dtype.itemsize
            declared = variable.get("size_bytes")
            if declared is not None and declared != nbytes:
                raise InvalidNeffError(
                    f"{where} declares size_bytes {declared}, but "
                    f"{variable['dtype']}{list(shape)} takes {nbytes} bytes"
                )
            specs.append(VariableSpec(name, kind, tuple(shape), variable["dtype"], dtype, nbytes))
        return specs

    def _parse_checks(self) -> tuple[tuple[int, type[NeuronCheckError], str], ...]:
        """The manifest's run-time checks, validated like the reader does (a NEFF given
        as an object was never read)."""
        from torchneuron.neff.reader import check_manifest_checks

        checks = check_manifest_checks(self.manifest, self.definition)
        return tuple(
            (c["output"], CHECK_ERRORS[c["error"]], c["message"])
            for c in sorted(checks, key=lambda c: c["output"])
        )

    def _weight_array(self, neff: Any, spec: VariableSpec) -> np.ndarray:
        weights = neff.weights or {}
        if spec.name not in weights:
            raise InvalidNeffError(
                f"{self.label}: weight {spec.name!r} is declared in def.json but the NEFF "
                f"holds no data for it (weights present: {sorted(weights) or 'none'})"
            )
        array = np.asarray(weights[spec.name])
        if array.shape != spec.shape or array.dtype != spec.numpy_dtype:
            raise InvalidNeffError(
                f"{self.label}: weight {spec.name!r} holds {dtype_name(array.dtype)}"
                f"{list(array.shape)}, but def.json declares {spec.dtype}{list(spec.shape)}"
            )
        return array

    def _check_signature(self, arguments: list[VariableSpec], outputs: list[VariableSpec]) -> None:
        signature = self.prepared.signature
        for what, declared, actual in (
            ("arguments", arguments, signature.arguments),
            ("results", outputs, signature.results),
        ):
            if len(declared) != len(actual):
                raise InvalidNeffError(
                    f"{self.label}: the program's @main has {len(actual)} {what}, but def.json "
                    f"declares {len(declared)} ({', '.join(str(s) for s in declared) or 'none'})"
                )
            for position, (spec, program_type) in enumerate(zip(declared, actual)):
                if spec.tensor_type != program_type:
                    raise InvalidNeffError(
                        f"{self.label}: @main {what[:-1]} {position} is {program_type}, but "
                        f"def.json declares {spec}"
                    )

    # -- execution --------------------------------------------------------------

    @property
    def is_loaded(self) -> bool:
        return self._finalizer.alive

    def execute(self, inputs: Sequence[np.ndarray], *, resident: bool = False) -> list[np.ndarray]:
        """Run the program on ``inputs`` (numpy arrays, in def.json order).

        Shapes and dtypes must match exactly; nothing is converted. Returns one new,
        writable numpy array per output, with the declared dtypes: the caller may keep
        it, and nothing else reads or writes its memory (the XLA executor hands over
        the memory of the execution's own output buffers instead of copying them).

        The execution is charged to the core's HBM for its temporaries, and for its
        input and output buffers unless ``resident``: then the inputs already live in
        device memory and the outputs are written into device tensors the caller
        allocated (the ``neuron`` device), which are accounted already; the outputs
        may then be read-only arrays, to be copied into those tensors at once.
        """
        if len(inputs) != self._input_count:
            raise NeuronRuntimeError(
                f"{self.label} takes {self._input_count} inputs "
                f"({', '.join(repr(s.name) for s in self.input_specs) or 'none'}), "
                f"got {len(inputs)}"
            )
        for index, (shape, dtype) in enumerate(self._input_checks):
            array = inputs[index]
            if type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype:
                inputs = self._checked_inputs(inputs, index)
                break
        if not self._finalizer.alive:
            raise NeuronRuntimeError(f"{self.label} was unloaded from {self.core.description}")
        hbm = self.core.hbm
        charge = (
            self.temporaries_bytes if resident else self.execution_bytes + self.temporaries_bytes
        )
        handle = hbm.allocate(charge, self._execution_tag) if charge else None
        try:
            if not _EXECUTE_HOOKS:
                outputs = self._execute(inputs, not resident)
                return self._checked(outputs) if self._checks else outputs
            start = time.perf_counter()
            outputs = self._execute(inputs, not resident)
            seconds = time.perf_counter() - start
        finally:
            if handle is not None:
                hbm.free(handle)
        for hook in tuple(_EXECUTE_HOOKS):
            hook(self, start, seconds)
        return self._checked(outputs) if self._checks else outputs

    def _execute(self, inputs: Sequence[np.ndarray], copy: bool) -> list:
        """The executor's run; host memory running out in it is a ``NeuronOutOfMemoryError``."""
        try:
            return self._run(inputs, copy)
        except Exception as error:
            if not host_memory_exhausted(error):
                raise
            raise out_of_memory(
                f"{self.label} ran out of host memory on {self.core.description} (the "
                f"emulator keeps device memory in host RAM): {describe_error(error)}"
            ) from error

    def _checked(self, outputs: list[np.ndarray]) -> list[np.ndarray]:
        """``outputs`` less the run-time checks' results, after raising the first check
        that came back false."""
        if self._evaluate_checks:
            for position, error, message in self._checks:
                if not np.all(outputs[position]):
                    raise error(message)
        positions = {position for position, _, _ in self._checks}
        return [output for i, output in enumerate(outputs) if i not in positions]

    __call__ = execute

    def _checked_inputs(self, inputs: Sequence[Any], first: int) -> list[np.ndarray]:
        # Slow path, reached only when an input is not exactly right: convert numpy
        # scalars and array-likes, then report the first mismatch by name.
        checked = list(inputs)
        for index in range(first, self._input_count):
            spec = self.input_specs[index]
            array = checked[index]
            where = f"{self.label}: input {index} ({spec.name!r})"
            if not isinstance(array, np.ndarray):
                if type(array).__module__.startswith("torch"):
                    raise NeuronRuntimeError(
                        f"{where} is a torch tensor; pass a numpy array "
                        "(for example tensor.detach().cpu().numpy())"
                    )
                try:
                    array = np.asarray(array)
                except Exception as error:
                    raise NeuronRuntimeError(
                        f"{where} is a {type(array).__name__}, not an array: {error}"
                    ) from None
                checked[index] = array
            if array.dtype != spec.numpy_dtype:
                raise NeuronRuntimeError(
                    f"{where} has dtype {dtype_name(array.dtype)}, expected {spec.dtype} "
                    f"(inputs are never converted; cast with .astype(...) first)"
                )
            if array.shape != spec.shape:
                raise NeuronRuntimeError(
                    f"{where} has shape {list(array.shape)}, expected {list(spec.shape)}"
                )
        return checked

    # -- estimates --------------------------------------------------------------

    @property
    def schedule(self) -> Schedule | None:
        """The estimated schedule the NEFF carries (``sg00/schedule.json``), or None when
        it carries none or an unreadable one. Read on first use; never estimated here."""
        if self._schedule is None and self._schedule_json is not None:
            try:
                self._schedule = Schedule.from_json(self._schedule_json)
            except (ValueError, KeyError, TypeError, AttributeError):
                # A malformed member costs only the estimate, never the execution.
                self._schedule = False
        return self._schedule or None

    # -- unloading --------------------------------------------------------------

    def unload(self) -> None:
        """Give the program's and weights' HBM back; later executes raise. Idempotent."""
        self._finalizer()
        self._run = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unload()

    def __repr__(self) -> str:
        state = "loaded" if self.is_loaded else "unloaded"
        return (
            f"<LoadedNeff {self.name!r} on {self.core.description}, {state}: "
            f"{len(self.input_specs)} inputs, {len(self.output_specs)} outputs, "
            f"{len(self.weight_specs)} weights, {self.resident_bytes} bytes resident>"
        )
