"""The instruction stream of a traced kernel.

``nki.jit`` runs the kernel's Python once with ``Tile`` handles in place of arrays. Each
``nki.isa`` call checks its operands against the hardware's rules and appends one
``Instruction`` to the active ``Trace``: its name, engine, the tiles it reads and writes,
its operand shapes, the kernel's ``file:line``, and a function that performs it on the
emulator's NumPy state. Loops (``nl.affine_range`` and friends) are plain Python ranges,
so they unroll into the stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from torchneuron.nki.errors import NKIError, kernel_location
from torchneuron.nki.tensor import Allocation, Tile, new_allocation
from torchneuron.target import engines
from torchneuron.target.hardware import ChipSpec

# Engine names are the hardware model's (torchneuron.target.engines); the schedule spreads
# DMA transfers over queues named "DMA<k>".
TENSOR = engines.TENSOR_ENGINE
VECTOR = engines.VECTOR_ENGINE
SCALAR = engines.SCALAR_ENGINE
GPSIMD = engines.GPSIMD_ENGINE
DMA = engines.DMA_ENGINE


@dataclass(eq=False)
class Instruction:
    name: str  # e.g. "nc_matmul"
    engine: str  # TENSOR, VECTOR, SCALAR, GPSIMD or DMA
    reads: tuple[Tile, ...]
    writes: tuple[Tile, ...]
    run: Callable[[dict], None]  # performs it on {allocation id: ndarray}
    location: str  # kernel file:line
    # What timing needs: elements per partition streamed, dtype name for the rate, bytes moved.
    cost: dict = field(default_factory=dict)
    # poison(masks, pstate): the undefined bits of each written tile (emulator.execute);
    # None: any undefined input makes every output undefined.
    poison: Callable | None = None
    strict_reads: tuple[int, ...] = ()  # reads whose unwritten elements are refused outright
    index: int = -1

    def operands(self) -> str:
        outs = ", ".join(t.describe() for t in self.writes)
        ins = ", ".join(t.describe() for t in self.reads)
        return f"{outs} <- {ins}" if ins else outs


class Trace:
    """The instructions and allocations of one kernel trace."""

    def __init__(self, chip: ChipSpec) -> None:
        self.chip = chip
        self.instructions: list[Instruction] = []
        self.allocations: list[Allocation] = []
        self._names: dict[str, int] = {}
        # nl.matmul results not yet read, by allocation id: ``acc += nl.matmul(...)``
        # retargets such a matmul to accumulate into ``acc`` (language._accumulate).
        self.pending_matmul: dict[int, dict] = {}

    def allocate(self, shape, dtype, buffer: str, name: str | None, instruction: str):
        base = name or buffer
        count = self._names.get(base, 0)
        self._names[base] = count + 1
        label = base if count == 0 and name else f"{base}{count}"
        alloc = new_allocation(shape, dtype, buffer, label, instruction, self.chip)
        self.allocations.append(alloc)
        return alloc

    def add(self, instruction: Instruction) -> None:
        instruction.index = len(self.instructions)
        self.instructions.append(instruction)


_state = threading.local()


def current() -> Trace:
    trace = getattr(_state, "trace", None)
    if trace is None:
        raise NKIError(
            f"nki call at {kernel_location()}: NKI instructions run only inside a kernel "
            "called through nki.jit, nki.simulate or nki.profile"
        )
    return trace


class tracing:
    """Context manager making ``trace`` the active one on this thread."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        if getattr(_state, "trace", None) is not None:
            raise NKIError(
                f"nki kernel call at {kernel_location()}: calling a kernel from inside another "
                "kernel is not supported"
            )
        _state.trace = self.trace
        return self.trace

    def __exit__(self, *exc) -> None:
        _state.trace = None
