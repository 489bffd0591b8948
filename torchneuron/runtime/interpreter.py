"""A numpy interpreter of StableHLO programs: a new shape's first calls, compiled later.

XLA's compile of even a one-op program takes 30-120 ms on these machines, so a
program that must be specialized for a new shape (an eager op's new bucket) cost that
much at its first call, for every op of a step. ``InterpretedProgram`` reads a
program once, its sizes symbolic or not, into a list of numpy closures
(``interpreter_ops.py``, ``interpreter_structured.py``) and runs it on the call's
arrays: no shape refinement, no passes, no compile. The device runs a new bucket this
way while the compiled specialization is built on a background thread
(``compiler/specialize_later.py``), and switches to it once it is ready.

It covers what numpy computes exactly as StableHLO specifies: f32, f64, integer and
bool values; elementwise and shape ops (the dynamic ones included); reduce and
scatter with one combining op; dot_general; gather. A program with anything else is
``Uninterpretable`` when read (it is compiled at once, as before), and so is a call
whose values numpy would treat differently (an integer division by zero, a
conversion out of range, a scatter out of range): that call runs compiled. Floating
results follow numpy's arithmetic (unfused, pairwise sums), so they may differ from
the compiled program's in the last bits, as two XLA builds' do.

``Interpreted`` binds a program to a core and executes it as a ``LoadedNeff`` does:
run-time checks raise their errors, the core's HBM is charged for the run (inputs,
outputs and the largest set of live intermediate values), and the execute hooks
(profiler) see the run, unestimated (no schedule: the cost model prices compiled
programs only).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from torch_mlir import ir

from . import interpreter_structured  # noqa: F401  (registers reduce, dot, gather, scatter)
from .errors import CHECK_ERRORS
from .interpreter_ops import MAKERS
from .interpreter_types import Uninterpretable, element_dtype

__all__ = ["Interpreted", "InterpretedProgram", "Uninterpretable"]

# Programs longer than this are left to the compiler: a step costs microseconds of
# Python, and a program this long is one whose compile pays for itself.
MAX_OPS = 4096


class InterpretedProgram:
    """A StableHLO program's ``@main`` read into numpy closures, run by ``run``."""

    def __init__(self, program: str | ir.Module, name: str, checks: Sequence = ()):
        """Read ``program`` (text, or a module already parsed). ``checks`` are its
        run-time checks as (result position, error kind, message)."""
        from torchneuron.passes.ir_utils import parse_module

        self.name = name
        try:
            module = parse_module(program) if isinstance(program, str) else program
        except ir.MLIRError as error:
            raise Uninterpretable(f"{name}: the program does not parse: {error}") from None
        func = next(
            (
                op.operation
                for op in module.body.operations
                if op.operation.name == "func.func"
                and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
            ),
            None,
        )
        if func is None:
            raise Uninterpretable(f"{name}: no func.func @main")
        block = func.regions[0].blocks[0]
        slots: dict[Any, int] = {}
        self.inputs: list[tuple[np.dtype, tuple[int | None, ...]]] = []
        for argument in block.arguments:
            slots[argument] = len(slots)
            self.inputs.append(_tensor_type(argument.type, name))
        steps: list[list] = []
        outputs: list[int] | None = None
        for view in block.operations:
            op = view.operation
            if op.name == "func.return":
                outputs = [_slot(slots, value, name) for value in op.operands]
                break
            if len(steps) >= MAX_OPS:
                raise Uninterpretable(f"{name}: longer than {MAX_OPS} ops")
            maker = MAKERS.get(op.name)
            if maker is None:
                raise Uninterpretable(f"{name}: op {op.name}")
            if len(op.results) != 1:
                raise Uninterpretable(f"{name}: {op.name} with {len(op.results)} results")
            result = _tensor_type(op.results[0].type, name)
            fn = maker(op, [result])
            operands = [_slot(slots, value, name) for value in op.operands]
            slots[op.results[0]] = len(slots)
            dtype, shape = result
            static = shape if None not in shape else None
            steps.append([fn, tuple(operands), len(slots) - 1, dtype, static, shape, ()])
        if outputs is None:
            raise Uninterpretable(f"{name}: @main does not return")
        self._slot_count = len(slots)
        self._outputs = outputs
        # free each intermediate value after its last use
        last_use: dict[int, int] = {}
        for index, step in enumerate(steps):
            for slot in step[1]:
                last_use[slot] = index
        # outputs stay; inputs are the caller's arrays: they stay counted as live
        kept = set(outputs) | set(range(len(self.inputs)))
        for slot, index in last_use.items():
            if slot not in kept:
                steps[index][6] += (slot,)
        self._steps = [tuple(step) for step in steps]
        self.checks = tuple(
            (position, _check_error(kind, name), message) for position, kind, message in checks
        )

    def run(self, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        """The program's outputs (new arrays, owned and writable) and the largest number
        of bytes its values held at once. ``Uninterpretable`` when a value needs the
        compiled program; ``ValueError`` when the inputs do not fit its signature."""
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{self.name} takes {len(self.inputs)} inputs, got {len(inputs)}")
        values: list[Any] = [None] * self._slot_count
        live = 0
        for index, (array, (dtype, shape)) in enumerate(zip(inputs, self.inputs)):
            array = np.asarray(array)
            if array.dtype != dtype or not _fits(array.shape, shape):
                raise ValueError(
                    f"{self.name}: input {index} is {array.dtype}{list(array.shape)}, the "
                    f"program takes {dtype}{[d if d is not None else '?' for d in shape]}"
                )
            values[index] = array
            live += array.nbytes
        peak = live
        operand = values.__getitem__
        ndarray = np.ndarray
        with np.errstate(all="ignore"):
            # the hot loop: a program of thousands of steps, most of them shape arithmetic
            # on one-element arrays, pays this per step
            for fn, operands, slot, dtype, static, shape, frees in self._steps:
                value = fn(*map(operand, operands))
                if type(value) is not ndarray:
                    value = np.asarray(value)
                if value.dtype != dtype or (
                    value.shape != static if static is not None else not _fits(value.shape, shape)
                ):
                    raise Uninterpretable(
                        f"{self.name}: a step gave {value.dtype}{list(value.shape)} where "
                        f"the program says {dtype}{list(shape)}"
                    )
                values[slot] = value
                live += value.nbytes
                if live > peak:
                    peak = live
                for index in frees:
                    live -= values[index].nbytes
                    values[index] = None
        return [np.array(values[i], order="C") for i in self._outputs], peak


class Interpreted:
    """An ``InterpretedProgram`` on a core, executed as a ``LoadedNeff`` is."""

    schedule = None  # nothing estimated: the profiler shows the run's host time
    interpreted = True

    def __init__(
        self, program: InterpretedProgram, core: Any, weights: Sequence[tuple[int, Any]] = ()
    ):
        """``weights``: (argument position, array) of each argument the caller does not
        pass (a program's weights), in increasing position."""
        self.program = program
        self.core = core
        self.weights = tuple(weights)
        # weights live in host memory already (a compiled program's are charged once, at
        # load; the interpreter has no load): not charged per run
        self._weight_bytes = sum(np.asarray(array).nbytes for _, array in self.weights)
        self.name = f"{program.name} (interpreted)"
        self.label = f"program {self.name!r}"
        self._tag = f"execution buffers of {self.label}"

    def execute(self, inputs: Sequence[np.ndarray], *, resident: bool = False) -> list:
        from .loaded_neff import _EXECUTE_HOOKS

        start = time.perf_counter()
        if self.weights:
            inputs = list(inputs)
            for position, array in self.weights:
                inputs.insert(position, array)
        with _one_blas_thread:
            outputs, peak = self.program.run(inputs)
        seconds = time.perf_counter() - start
        # resident inputs live in device memory already
        charge = peak - self._weight_bytes
        if resident:
            charge -= sum(np.asarray(a).nbytes for a in inputs) - self._weight_bytes
        if charge > 0:  # what the run held, checked against the core's capacity
            self.core.hbm.free(self.core.hbm.allocate(charge, self._tag))
        for hook in tuple(_EXECUTE_HOOKS):
            hook(self, start, seconds)
        checks = self.program.checks
        if not checks:
            return outputs
        for position, error, message in checks:
            if not np.all(outputs[position]):
                raise error(message)
        positions = {position for position, _, _ in checks}
        return [output for i, output in enumerate(outputs) if i not in positions]

    __call__ = execute


class _OneBlasThread:
    """A context in which numpy's BLAS runs on one thread. An interpreted run is a new
    shape's first calls, made while a specialization compiles on the background thread:
    BLAS threads that wait for a busy core cost 3-10x a matmul's time (a GPT training
    step at a new length: 547 ms interpreted with numpy's two threads, 188 ms with one).

    The limit is the process's (OpenBLAS has one thread count): runs on several threads
    at once share it, counted, and the count before the first is put back after the last.
    numpy code of the user's on other threads runs single-threaded meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limiter: Any = None
        self._controller: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._users == 0:
                if self._controller is None:
                    self._controller = numpy_blas()
                self._limiter = self._controller.limit(limits=1)
            self._users += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._limiter.restore_original_limits()
                self._limiter = None


_one_blas_thread = _OneBlasThread()


def numpy_blas() -> Any:
    """A threadpoolctl controller of the BLAS numpy's matmul calls: the one its wheel
    ships (``numpy.libs``), else every OpenBLAS loaded (a numpy built on the system's).
    Other copies (SciPy ships its own OpenBLAS) are left alone."""
    import os

    from threadpoolctl import ThreadpoolController

    blas = ThreadpoolController().select(user_api="blas", internal_api="openblas")
    folder = os.path.realpath(os.path.dirname(os.path.dirname(np.__file__)))
    shipped = [
        lib.filepath
        for lib in blas.lib_controllers
        if os.path.realpath(lib.filepath).startswith(os.path.join(folder, "numpy"))
    ]
    return blas.select(filepath=shipped) if shipped else blas


def _tensor_type(mlir_type: Any, name: str) -> tuple[np.dtype, tuple[int | None, ...]]:
    try:
        tensor = ir.RankedTensorType(mlir_type)
    except ValueError:
        raise Uninterpretable(f"{name}: a value of type {mlir_type}") from None
    dynamic = ir.ShapedType.get_dynamic_size()
    shape = tuple(None if d == dynamic else int(d) for d in tensor.shape)
    return element_dtype(tensor.element_type), shape


def _slot(slots: dict, value: Any, name: str) -> int:
    slot = slots.get(value)
    if slot is None:
        raise Uninterpretable(f"{name}: a value defined outside @main's body")
    return slot


def _fits(actual: tuple, declared: tuple) -> bool:
    return len(actual) == len(declared) and all(
        d is None or a == d for a, d in zip(actual, declared)
    )


def _check_error(kind: str, name: str) -> type:
    error = CHECK_ERRORS.get(kind or "RuntimeError")
    if error is None:
        raise Uninterpretable(f"{name}: a run-time check raising {kind!r}")
    return error
