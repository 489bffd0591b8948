"""The emulated NeuronCore: where each tile lives on chip, and running the instructions.

``plan_memory`` places every SBUF and PSUM allocation of a trace for the span of
instructions that use it (first use to last use, in program order):

- SBUF: ``chip.sbuf_partitions`` partitions of ``chip.sbuf_bytes_per_partition`` bytes
  (192 KiB on trn2, 256 KiB on trn3; hardware.py). A tile takes the same byte range in every
  partition; ranges are handed out next-fit (a rotating cursor, so a loop's successive tiles
  land in different places and can be in flight together, as the compiler's multi-buffering
  allows), and a tile that finds no free range is refused: SBUF capacity exceeded.
- PSUM: ``chip.psum_banks`` banks of ``psum_bytes_per_partition / psum_banks`` bytes (8 of
  2 KiB). A PSUM tile takes one whole bank (a larger one is refused when declared); a ninth
  live tile is refused.

A tile placed where an earlier one was waits, in the schedule, for the earlier one's last
access (write-after-read through reused memory).

``execute`` then runs the instructions in program order on NumPy arrays: HBM tensors hold the
kernel's inputs. Every element of every other tensor carries a "defined" bit (poison
tracking): an element no instruction wrote is undefined (the chip would hold stale data
there), and an instruction may compute on undefined elements, as on the chip: each output
element that depends on an undefined input element is undefined too (the instruction's
``poison`` rule says which; without one, any undefined input makes every output undefined).
Undefined values are never observed: an instruction that would write one into HBM (a store,
a kernel output) is refused, naming how many. Accumulating a matmul onto PSUM elements no
instruction wrote is refused outright (see ``execute``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from torchneuron.nki.errors import refuse
from torchneuron.nki.tensor import PSUM, SBUF, Allocation
from torchneuron.nki.trace import Trace


@dataclass
class Placement:
    alloc: Allocation
    offset: int  # SBUF: byte offset in each partition; PSUM: bank number
    size: int  # SBUF: bytes per partition; PSUM: 1 (bank)
    first: int  # first and last instruction index using it
    last: int


@dataclass
class MemoryPlan:
    placements: dict[int, Placement] = field(default_factory=dict)
    # allocation id -> ids of earlier allocations whose memory it reuses
    reuses: dict[int, list[int]] = field(default_factory=dict)
    sbuf_high_water: int = 0  # bytes per partition
    psum_high_water: int = 0  # banks


def _uses(trace: Trace) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for instr in trace.instructions:
        for tile in (*instr.reads, *instr.writes):
            if tile.alloc.on_chip:
                first, _ = spans.get(tile.alloc.id, (instr.index, instr.index))
                spans[tile.alloc.id] = (first, instr.index)
    return spans


def _next_fit(live: list[Placement], size: int, capacity: int, cursor: int) -> int | None:
    candidates = sorted({0, cursor, *(p.offset + p.size for p in live)})
    ordered = [c for c in candidates if c >= cursor] + [c for c in candidates if c < cursor]
    for start in ordered:
        if start + size > capacity:
            continue
        if all(start + size <= p.offset or p.offset + p.size <= start for p in live):
            return start
    return None


class _Occupants:
    """Which allocation last held each byte range of a buffer (disjoint sorted segments)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.ids: list[int] = []

    def replace(self, start: int, end: int, alloc_id: int) -> list[int]:
        """Make ``alloc_id`` the occupant of [start, end); return the previous occupants.

        Only the latest occupant of a byte matters: it waited for the ones before it."""
        i = max(0, bisect.bisect_right(self.starts, start) - 1)
        previous: list[int] = []
        pieces = [(start, end, alloc_id)]
        j = i
        while j < len(self.starts) and self.starts[j] < end:
            s, e, owner = self.starts[j], self.ends[j], self.ids[j]
            if e <= start:
                pieces.append((s, e, owner))
            else:
                previous.append(owner)
                if s < start:
                    pieces.append((s, start, owner))
                if e > end:
                    pieces.append((end, e, owner))
            j += 1
        pieces.sort()
        self.starts[i:j] = [p[0] for p in pieces]
        self.ends[i:j] = [p[1] for p in pieces]
        self.ids[i:j] = [p[2] for p in pieces]
        return sorted(set(previous))


def plan_memory(trace: Trace) -> MemoryPlan:
    chip = trace.chip
    spans = _uses(trace)
    by_id = {a.id: a for a in trace.allocations}
    starting: dict[int, list[int]] = {}
    for alloc_id, (first, _) in spans.items():
        starting.setdefault(first, []).append(alloc_id)
    plan = MemoryPlan()
    live: dict[str, list[Placement]] = {SBUF: [], PSUM: []}
    occupants = {SBUF: _Occupants(), PSUM: _Occupants()}
    cursor = {SBUF: 0, PSUM: 0}
    capacity = {SBUF: chip.sbuf_bytes_per_partition, PSUM: chip.psum_banks}
    for index in sorted(starting):
        for buffer in live:
            live[buffer] = [p for p in live[buffer] if p.last >= index]
        for alloc_id in sorted(starting[index]):
            alloc = by_id[alloc_id]
            buffer = alloc.buffer
            size = alloc.bytes_per_partition if buffer == SBUF else 1
            offset = _next_fit(live[buffer], size, capacity[buffer], cursor[buffer])
            if offset is None:
                raise _capacity_error(trace, alloc, index, live[buffer], size, capacity[buffer])
            first, last = spans[alloc_id]
            placed = Placement(alloc, offset, size, first, last)
            plan.reuses[alloc_id] = occupants[buffer].replace(offset, offset + size, alloc_id)
            live[buffer].append(placed)
            plan.placements[alloc_id] = placed
            cursor[buffer] = (offset + size) % capacity[buffer]
        plan.sbuf_high_water = max(plan.sbuf_high_water, sum(p.size for p in live[SBUF]))
        plan.psum_high_water = max(plan.psum_high_water, len(live[PSUM]))
    return plan


def _capacity_error(trace, alloc, index, live, size, capacity):
    chip = trace.chip
    instr = trace.instructions[index]
    what = f"{alloc.buffer}:{alloc.name}{list(alloc.shape)} {alloc.dtype.name} (declared at {alloc.location})"
    if alloc.buffer == SBUF:
        held = sum(p.size for p in live)
        message = (
            f"SBUF capacity exceeded: {what} needs {size} bytes per partition; {held} of the "
            f"{capacity} bytes per partition are held by {len(live)} live tiles"
            f"{' (or too fragmented)' if held + size <= capacity else ''}"
        )
    else:
        message = (
            f"PSUM capacity exceeded: {what} would be live tile {len(live) + 1}; PSUM has "
            f"{chip.psum_banks} banks of {chip.psum_bytes_per_partition // chip.psum_banks} "
            "bytes per partition, one tile per bank"
        )
    return refuse(f"nki.isa.{instr.name}", message, instr.location)


def initial_state(trace: Trace, bound: dict | None = None) -> dict:
    """{allocation id: array}; ``bound`` arrays are used as they are (no copy; an output's
    floats are set to NaN first, as unwritten memory)."""
    state: dict = {}
    for alloc in trace.allocations:
        if bound is not None and alloc.id in bound:
            state[alloc.id] = bound[alloc.id]
            if alloc.initial is None and alloc.dtype.is_float:
                state[alloc.id][...] = np.nan
            continue
        if alloc.initial is not None:
            state[alloc.id] = np.array(alloc.initial, dtype=alloc.dtype.numpy, copy=True)
            continue
        if alloc.dtype.is_float:
            state[alloc.id] = np.full(alloc.shape, np.nan, dtype=alloc.dtype.numpy)
        else:
            state[alloc.id] = np.zeros(alloc.shape, dtype=alloc.dtype.numpy)
    return state


def _undefined_in(undefined: dict, tile) -> np.ndarray:
    mask = undefined.get(tile.alloc.id)
    if mask is None:
        return np.zeros((tile.partitions, tile.free_size), dtype=bool)
    return mask[tile.numpy_index()].reshape(tile.partitions, -1)


def _propagate(instr, masks: list, pstate: dict) -> list:
    """The undefined bits of each written tile, (partitions, free), from those of the reads."""
    rule = instr.poison
    if rule is not None:
        return rule(masks, pstate)
    tainted = any(m.any() for m in masks)  # no rule: any undefined input taints all outputs
    return [np.full((t.partitions, t.free_size), tainted, dtype=bool) for t in instr.writes]


def execute(trace: Trace, bound: dict | None = None) -> dict:
    """Run every instruction in program order; returns {allocation id: array}.

    Poison tracking (module docstring): an instruction may read elements no instruction
    wrote; what it computes from them is undefined, and an undefined element written into
    HBM is refused. One read stays refused outright: ``nc_matmul(accumulate=True)`` onto
    PSUM elements no instruction wrote. The chip adds the product to whatever the bank held,
    so the first matmul of a chain that accumulates is a bug on the chip whether or not the
    sum is later stored; refusing it at the matmul names the instruction at fault."""
    state = initial_state(trace, bound)
    written = {
        alloc.id: np.zeros(alloc.shape, dtype=bool)
        for alloc in trace.allocations
        if alloc.initial is None
    }
    undefined = {alloc_id: ~mask for alloc_id, mask in written.items()}
    pstate: dict = {}
    for instr in trace.instructions:
        for position in instr.strict_reads:
            tile = instr.reads[position]
            mask = written.get(tile.alloc.id)
            if mask is not None and not mask[tile.numpy_index()].all():
                missing = int((~mask[tile.numpy_index()]).sum())
                raise refuse(
                    f"nki.isa.{instr.name}",
                    f"accumulates onto {missing} of the {tile.size} elements of "
                    f"{tile.describe()} that no instruction wrote (uninitialized memory; "
                    f"declared at {tile.alloc.location}); write the first product without "
                    "accumulate=True, or memset the accumulator first",
                    instr.location,
                )
        masks = [_undefined_in(undefined, tile) for tile in instr.reads]
        results = _propagate(instr, masks, pstate)
        for tile, result in zip(instr.writes, results, strict=True):
            if not tile.alloc.on_chip and result.any():
                count = int(result.sum())
                raise refuse(
                    f"nki.isa.{instr.name}",
                    f"writes {count} undefined elements of its {tile.size} into "
                    f"{tile.describe()} in HBM: they were computed from memory no instruction "
                    "wrote (a masked-out load, an unwritten tile); mask the store to the "
                    "elements that were loaded",
                    instr.location,
                )
        instr.run(state)
        for tile, result in zip(instr.writes, results, strict=True):
            if tile.alloc.id in written:
                index = tile.numpy_index()
                written[tile.alloc.id][index] = True
                undefined[tile.alloc.id][index] = np.asarray(result).reshape(
                    written[tile.alloc.id][index].shape
                )
    return state
