"""Entry points: ``nki.jit``, ``nki.simulate``, ``nki.estimate`` and ``nki.profile``.

A call traces the kernel (its Python runs once with tile handles; arguments that are arrays
become HBM tensors, other arguments pass through as compile-time constants), plans its
on-chip memory, and then, depending on the entry point, runs it on the emulator (NumPy in,
NumPy out), schedules it on the engines, or both.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from torchneuron.nki import emulator, timing
from torchneuron.nki import trace as _trace
from torchneuron.nki.errors import NKIError, refuse
from torchneuron.nki.tensor import HBM, IN_HBM, Tile, as_dtype, check_bounds
from torchneuron.target.hardware import chip as chip_spec


@dataclass
class KernelRun:
    """One traced kernel call: its trace, memory plan, and (as asked) outputs and schedule."""

    kernel_name: str
    trace: _trace.Trace
    plan: emulator.MemoryPlan
    outputs: object = None  # like the kernel's return value, with numpy arrays for tiles
    schedule: timing.Schedule | None = None
    returned: object = None  # what the kernel's Python returned (tiles), as traced

    def listing(self) -> str:
        """The instruction stream, one line each: index, engine (or DMA queue), start and end
        in microseconds when scheduled, instruction, operands, kernel line."""
        slots = {s.instruction.index: s for s in self.schedule.slots} if self.schedule else {}
        lines = []
        for instr in self.trace.instructions:
            slot = slots.get(instr.index)
            lane = slot.lane if slot else instr.engine
            when = f" {slot.start * 1e6:9.3f} {slot.end * 1e6:9.3f} us" if slot else ""
            lines.append(
                f"{instr.index:5d} {lane:<7}{when} {instr.name:<22} {instr.operands()}  "
                f"# {instr.location}"
            )
        return "\n".join(lines)

    @property
    def seconds(self) -> float:
        if self.schedule is None:
            raise NKIError(f"kernel {self.kernel_name}: no schedule (use nki.estimate/profile)")
        return self.schedule.seconds


DEFAULT_TARGET = "trn2"


class Kernel:
    """A function decorated with ``@nki.jit``.

    Its target (the chip whose limits and rates apply) is ``target=`` when given; otherwise
    trn2 for NumPy calls (``nki.simulate``/``estimate``/``profile``), and the chip of the
    device topology (``NEURON_PLATFORM_TARGET_OVERRIDE``) when called with torch tensors."""

    def __init__(self, fn, target: str | None = None, **options) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.target = target
        self.options = options
        self._torch_entry = None  # torch_ops.entry(self): Dynamo cannot make it while tracing
        if "torch" in sys.modules:
            from torchneuron.nki import torch_ops

            torch_ops.entry(self)

    def __call__(self, *args, **kwargs):
        if any(_is_torch_tensor(a) for a in (*args, *kwargs.values())):
            from torchneuron.nki import torch_ops  # torch tensors: one custom op (torch_ops.py)

            return torch_ops.entry(self)(*args, **kwargs)
        return self.run(args, kwargs, execute=True, estimate=False).outputs

    def device_target(self) -> str:
        """The target for a call with torch tensors: ``target=`` if given, else the chip of
        the device topology the tensors live on."""
        if self.target is not None:
            return self.target
        from torchneuron.target.topology import topology

        return topology().target

    def run(
        self, args, kwargs, *, execute: bool, estimate: bool, bind=None, target=None
    ) -> KernelRun:
        """Trace, plan, then execute and/or schedule. ``bind(trace, returned)`` -> {allocation
        id: array} gives arrays the emulator uses as those allocations' memory, without a
        copy (torch_ops: device memory); the outputs are then the returned tiles. ``target``
        overrides the kernel's (torch_ops passes ``device_target()``)."""
        trace = _trace.Trace(chip_spec(target or self.target or DEFAULT_TARGET))
        with _trace.tracing(trace):
            handles = [_argument(trace, a, f"arg{i}") for i, a in enumerate(args)]
            named = {k: _argument(trace, v, k) for k, v in kwargs.items()}
            returned = self.fn(*handles, **named)
        _check_outputs(self.fn.__name__, returned)
        plan = emulator.plan_memory(trace)
        result = KernelRun(self.fn.__name__, trace, plan, returned=returned)
        if execute and bind is not None:
            emulator.execute(trace, bind(trace, returned))
            result.outputs = returned
        elif execute:
            state = emulator.execute(trace)
            result.outputs = _collect(returned, state)
        if estimate:
            result.schedule = timing.schedule(trace, plan)
        return result


def _is_torch_tensor(value) -> bool:
    return (
        type(value).__module__.startswith("torch")
        and hasattr(value, "dtype")
        and hasattr(value, "device")
    )


def _argument(trace: _trace.Trace, value, name: str):
    if isinstance(value, np.generic):
        return value.item()  # a NumPy scalar is a compile-time constant, like a Python one
    if isinstance(value, np.ndarray):
        array = value
        dtype = as_dtype(array.dtype, f"kernel argument {name}")
        if array.ndim == 0:
            array = array.reshape(1)
        alloc = trace.allocate(array.shape, dtype, HBM, name, f"kernel argument {name}")
        alloc.initial = array
        return alloc.full()
    return value


def _check_outputs(name: str, returned) -> None:
    for value in _flatten(returned):
        if isinstance(value, Tile) and value.buffer not in IN_HBM:
            raise refuse(
                f"kernel {name}",
                f"returns {value.describe()}; a kernel returns HBM tensors "
                "(nl.ndarray(..., buffer=nl.shared_hbm))",
            )
        if isinstance(value, Tile):
            check_bounds(value, f"kernel {name}", "a returned tile")


def _flatten(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


def _collect(returned, state):
    if isinstance(returned, Tile):
        return np.array(state[returned.alloc.id][returned.numpy_index()], copy=True)
    if isinstance(returned, (tuple, list)):
        return type(returned)(_collect(v, state) for v in returned)
    return returned


def jit(fn=None, *, target: str | None = None, **options):
    """Decorate a kernel. Called with NumPy arrays it runs on the emulated NeuronCore and
    returns NumPy arrays (as ``nki.simulate``). ``target`` ("trn2"/"trn3") fixes the chip;
    without it see ``Kernel``."""
    if fn is None:
        return lambda f: jit(f, target=target, **options)
    if isinstance(fn, Kernel):
        return fn
    return Kernel(fn, target=target, **options)


def simulate(kernel, *, target: str | None = None):
    """``nki.simulate(kernel)(*arrays)``: NumPy in, NumPy out, like the public simulator."""
    k = _as_kernel(kernel, target)
    return lambda *args, **kwargs: k.run(args, kwargs, execute=True, estimate=False).outputs


def estimate(kernel, *, target: str | None = None):
    """``nki.estimate(kernel)(*arrays)`` -> ``KernelRun`` with the schedule and no numbers
    computed (the emulator's null mode: only shapes and dtypes of the arguments matter)."""
    k = _as_kernel(kernel, target)
    return lambda *args, **kwargs: k.run(args, kwargs, execute=False, estimate=True)


def _as_kernel(kernel, target: str | None) -> Kernel:
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    if target is not None and target != k.target:
        k = Kernel(k.fn, target=target, **k.options)
    return k
