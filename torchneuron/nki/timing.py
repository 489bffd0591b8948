"""How long a traced kernel takes: each instruction's cost, and the engines' schedule.

Costs come from the hardware table (``torchneuron.target.hardware``) through the same
formulas the compile-time cost model uses (``torchneuron.estimate.engine_cost``):

- TensorE (``nc_matmul``, ``nc_transpose``): each moving column is one pass through the
  128x128 array, ``2 * 128 * 128 / flops`` seconds at the input dtype's rate; dtypes slower
  than BF16 take ``round(bf16 rate / rate)`` passes (FP32: 4), each with the fixed
  instruction overhead (``INSTRUCTION_OVERHEAD_CYCLES`` at TensorE's clock) - the formula of
  ``engine_cost.matmul_cost`` for one instruction.
- VectorE, ScalarE, GpSimd: ``128 partitions x elements per partition / (elements per
  cycle x clock)`` (the engine's lanes work on all partitions at once, so a tile using fewer
  partitions costs the same), plus the instruction overhead at the engine's clock. The rate
  is the 2-byte one only when every operand is 2-byte or narrower floating point.
- DMA: ``chip.dma_engines_per_core`` queues; a transfer takes the queue that frees first,
  waits the fixed DMA latency (``DMA_FIXED_LATENCY_S``), then streams its bytes through the
  core's DMA bandwidth, which all queues share (``engine_cost.hbm_bytes_per_second`` with
  HBM on either side, ``onchip_dma_bytes_per_second`` for SBUF to SBUF): it takes the first
  stretch of time after it is ready in which the bandwidth is free for long enough.

Each engine runs its instructions in program order. An instruction starts when its engine is
free and the instructions it depends on have ended: read-after-write, write-after-read and
write-after-write on overlapping parts of a tile, and reuse of a tile's memory (see
``emulator.plan_memory``). A kernel runs on one physical NeuronCore (LNC=1).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from torchneuron.estimate import engine_cost
from torchneuron.nki import trace as _trace
from torchneuron.nki.emulator import MemoryPlan
from torchneuron.nki.trace import Instruction, Trace
from torchneuron.target.hardware import ChipSpec

LNC = 1


def matmul_pass_count(chip: ChipSpec, dtype: str) -> int:
    rate = engine_cost.tensor_engine_flops(chip, dtype)
    return max(1, round(engine_cost.tensor_engine_flops(chip, "bfloat16") / rate))


def tensor_engine_seconds(chip: ChipSpec, columns: int, dtype: str) -> float:
    te = chip.tensor_engine
    rate = engine_cost.tensor_engine_flops(chip, dtype)
    passes = matmul_pass_count(chip, dtype)
    column_seconds = 2 * te.rows * te.cols / (rate * passes)
    return passes * (columns * column_seconds + chip.instruction_overhead_cycles / te.clock_hz)


def _engine_spec(chip: ChipSpec, engine: str):
    return {
        _trace.VECTOR: chip.vector_engine,
        _trace.SCALAR: chip.scalar_engine,
        _trace.GPSIMD: chip.gpsimd_engine,
    }[engine]


def streaming_engine_seconds(chip: ChipSpec, engine: str, free: int, dtype: str) -> float:
    spec = _engine_spec(chip, engine)
    elements = chip.sbuf_partitions * free
    return elements / spec.elements_per_second(dtype) + (
        chip.instruction_overhead_cycles / spec.clock_hz
    )


def dma_bytes_per_second(chip: ChipSpec, hbm: bool) -> float:
    if hbm:
        return engine_cost.hbm_bytes_per_second(chip, LNC)
    return engine_cost.onchip_dma_bytes_per_second(chip, LNC)


def compute_seconds(chip: ChipSpec, instr: Instruction) -> float:
    """Busy time of a compute instruction on its engine (DMA: see ``schedule``)."""
    if instr.engine == _trace.TENSOR:
        return tensor_engine_seconds(chip, instr.cost["columns"], instr.cost["dtype"])
    return streaming_engine_seconds(chip, instr.engine, instr.cost["free"], instr.cost["dtype"])


@dataclass
class Slot:
    instruction: Instruction
    lane: str  # engine name, or DMA queue "DMA<k>"
    start: float  # seconds from kernel start
    end: float
    waited_for: int | None = None  # index of the instruction that set the start, if any
    busy_from: float | None = None  # DMA: when its bytes start streaming (after the latency)


@dataclass
class Schedule:
    chip: ChipSpec
    slots: list[Slot] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return max((s.end for s in self.slots), default=0.0)

    def busy_seconds(self) -> dict[str, float]:
        """Busy time per engine; "DMA" is the time the core's DMA bandwidth is streaming
        (all queues share it; the fixed latency before each transfer does not count)."""
        busy: dict[str, float] = {}
        for slot in self.slots:
            key = _trace.DMA if slot.busy_from is not None else slot.lane
            begin = slot.start if slot.busy_from is None else slot.busy_from
            busy[key] = busy.get(key, 0.0) + slot.end - begin
        return busy

    def utilization(self) -> dict[str, float]:
        total = self.seconds or 1.0
        return {lane: busy / total for lane, busy in self.busy_seconds().items()}


class _Access:
    __slots__ = ("part", "free", "exact", "end", "index")

    def __init__(self, tile, end, index):
        self.part, self.free, self.exact = tile.bounds
        self.end = end
        self.index = index

    def overlaps(self, other: _Access) -> bool:
        return (
            self.part[0] < other.part[1]
            and other.part[0] < self.part[1]
            and self.free[0] < other.free[1]
            and other.free[0] < self.free[1]
        )

    def covers(self, other: _Access) -> bool:
        return (
            self.exact
            and self.part[0] <= other.part[0]
            and other.part[1] <= self.part[1]
            and self.free[0] <= other.free[0]
            and other.free[1] <= self.free[1]
        )


class _Bandwidth:
    """The core's DMA bandwidth over time: a transfer streams in the first gap after it is
    ready that is long enough (a transfer still waiting for its data does not hold up the
    transfers of other queues)."""

    def __init__(self) -> None:
        self.starts: list[float] = []  # disjoint busy intervals, sorted, merged when touching
        self.ends: list[float] = []

    def reserve(self, ready: float, seconds: float) -> float:
        i = max(0, bisect.bisect_right(self.starts, ready) - 1)
        start = ready
        while i < len(self.starts):
            if self.ends[i] <= start:
                i += 1
                continue
            if self.starts[i] >= start + seconds:
                break
            start = max(start, self.ends[i])
            i += 1
        end = start + seconds
        # insert [start, end) and merge with neighbours that touch it
        j = bisect.bisect_left(self.starts, start)
        self.starts.insert(j, start)
        self.ends.insert(j, end)
        if j + 1 < len(self.starts) and self.starts[j + 1] <= end:
            self.ends[j] = max(end, self.ends[j + 1])
            del self.starts[j + 1], self.ends[j + 1]
        if j > 0 and self.ends[j - 1] >= self.starts[j]:
            self.ends[j - 1] = max(self.ends[j - 1], self.ends[j])
            del self.starts[j], self.ends[j]
        return start


def schedule(trace: Trace, plan: MemoryPlan) -> Schedule:
    chip = trace.chip
    result = Schedule(chip)
    lane_free: dict[str, float] = {}
    queues = [f"{_trace.DMA}{k}" for k in range(chip.dma_engines_per_core)]
    pipe = _Bandwidth()
    writes: dict[int, list[_Access]] = {}
    reads: dict[int, list[_Access]] = {}
    last_end: dict[int, float] = {}
    started: set[int] = set()
    for instr in trace.instructions:
        ready, waited = 0.0, None

        def wait(end: float, index: int) -> None:
            nonlocal ready, waited
            if end > ready:
                ready, waited = end, index

        for tile in (*instr.reads, *instr.writes):
            alloc_id = tile.alloc.id
            if alloc_id not in started:
                started.add(alloc_id)
                for earlier in plan.reuses.get(alloc_id, ()):
                    wait(last_end.get(earlier, 0.0), -1)
        probes = [(_Access(t, 0.0, instr.index), t.alloc.id, False) for t in instr.reads]
        probes += [(_Access(t, 0.0, instr.index), t.alloc.id, True) for t in instr.writes]
        for probe, alloc_id, is_write in probes:
            for done in writes.get(alloc_id, ()):
                if probe.overlaps(done):
                    wait(done.end, done.index)
            if is_write:
                for done in reads.get(alloc_id, ()):
                    if probe.overlaps(done):
                        wait(done.end, done.index)
        if instr.engine == _trace.DMA:
            lane = min(queues, key=lambda q: lane_free.get(q, 0.0))
            start = max(ready, lane_free.get(lane, 0.0))
            seconds = instr.cost["bytes"] / dma_bytes_per_second(chip, instr.cost["hbm"])
            stream_start = pipe.reserve(start + chip.dma_fixed_latency_s, seconds)
            end = stream_start + seconds
            busy_from = stream_start
        else:
            busy_from = None
            lane = instr.engine
            start = max(ready, lane_free.get(lane, 0.0))
            end = start + compute_seconds(chip, instr)
        lane_free[lane] = end
        result.slots.append(Slot(instr, lane, start, end, waited if ready > 0 else None, busy_from))
        for probe, alloc_id, is_write in probes:
            probe.end = end
            last_end[alloc_id] = max(last_end.get(alloc_id, 0.0), end)
            if is_write:
                writes[alloc_id] = [w for w in writes.get(alloc_id, []) if not probe.covers(w)]
                reads[alloc_id] = [r for r in reads.get(alloc_id, []) if not probe.covers(r)]
                writes[alloc_id].append(probe)
            else:
                reads.setdefault(alloc_id, []).append(probe)
    return result
