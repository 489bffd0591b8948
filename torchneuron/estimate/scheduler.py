"""List scheduling of kernels over a NeuronCore's engines, and the ``Schedule`` it produces.

Resources are lanes: the four compute engines (TensorE, VectorE, ScalarE, GpSimd)
and one DMA lane standing for the core's share of HBM bandwidth. A kernel runs on its
*primary* engine (TensorE for a matmul kernel, else the engine it keeps busiest) and
may also use other engines (a matmul's GELU epilogue on ScalarE) and the DMA lane.
Inside a kernel, tiles are double-buffered, so its resources work in parallel and the
kernel takes as long as its slowest resource (the "bound").

Placement, kernel by kernel: among kernels whose producers have finished, take the one
with the longest remaining critical path (bottom level); it starts when its producers
have ended and its primary engine is free; its work on each other lane starts when
that lane is free (not before the kernel starts); it ends when its slowest part ends.
Independent kernels on different engines therefore overlap, while the DMA lane
serialises everyone's HBM traffic, so total bytes / bandwidth bounds the latency.

A loop's kernel (``span_s`` > 0: its trips times its body's own schedule, from the
cost model) is a barrier: it starts when its producers have ended and every lane is
free, and holds every lane until it ends. Its body's kernels run on the engines in
their own order at every trip, so nothing else overlaps them.

``Schedule`` is what the compiler stores as ``sg00/schedule.json`` and what the
profiler and ``neuronc inspect`` read back.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field

from torchneuron.estimate.memory_plan import (
    MemoryPlan,
    as_int,
    as_number,
    json_int,
    json_list,
    json_number,
    json_object,
    json_text,
)

# SCHEDULE_PATH is named here too for the compiler and the runtime, which import it with Schedule.
from torchneuron.neff.container import SCHEDULE_FORMAT, SCHEDULE_PATH, SCHEDULE_VERSION  # noqa: F401
from torchneuron.neff.schema import ESTIMATES
from torchneuron.target.engines import COMPUTE_ENGINES, DMA_ENGINE, ENGINES


def busiest_engine(busy: dict[str, float]) -> str:
    """The engine that bounds a program, from its engines' busy seconds: the busiest
    compute engine, or DMA when moving data takes longer than any computing."""
    compute = {e: t for e, t in busy.items() if e != DMA_ENGINE}
    engine = max(compute, key=lambda e: compute[e]) if any(compute.values()) else DMA_ENGINE
    return DMA_ENGINE if busy.get(DMA_ENGINE, 0.0) > compute.get(engine, 0.0) else engine


def _us(seconds: float) -> float:
    # Microseconds with picosecond resolution: enough for any kernel, and stable in JSON.
    return round(seconds * 1e6, 6)


@dataclass
class Kernel:
    """One kernel: its ops, the work it puts on each resource, and (once scheduled) its times."""

    id: int
    name: str
    engine: str  # primary engine: the lane the kernel occupies from start to end
    ops: list[str]
    op_indices: list[int]
    engine_seconds: dict[str, float]  # busy time per compute engine, overheads included
    dma_seconds: float  # time the DMA lane is busy: bytes over the core's bandwidth
    hbm_read_bytes: int
    hbm_write_bytes: int
    sbuf_bytes: int
    flops: int = 0
    onchip_dma_bytes: int = 0
    # Fixed latency before the kernel's first bytes arrive; it delays this kernel but
    # does not occupy the DMA lane (other kernels' transfers proceed meanwhile).
    dma_latency_s: float = 0.0
    # A loop's kernel: how long its trips take (trips x its body's makespan). Not stored
    # in the schedule's JSON, whose start, end and lanes already show it.
    span_s: float = 0.0
    deps: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    start_s: float = 0.0
    end_s: float = 0.0
    # lane -> (start, end) of this kernel's work there, after scheduling
    lanes: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def work_seconds(self) -> float:
        """The kernel's length when nothing else competes for its resources."""
        resources = [self.dma_latency_s + self.dma_seconds, *self.engine_seconds.values()]
        return max([self.span_s, *resources])

    @property
    def bound(self) -> str:
        """The resource that bounds this kernel: an engine name or "DMA"."""
        resources = {**self.engine_seconds, DMA_ENGINE: self.dma_latency_s + self.dma_seconds}
        return max(resources, key=lambda r: (resources[r], r == self.engine))

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    def to_json(self, clocks: dict[str, float]) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "engine": self.engine,
            "bound": self.bound,
            "ops": list(self.ops),
            "op_indices": list(self.op_indices),
            "deps": list(self.deps),
            "start_us": _us(self.start_s),
            "end_us": _us(self.end_s),
            "engine_us": {e: _us(s) for e, s in sorted(self.engine_seconds.items())},
            "engine_cycles": {
                e: round(s * clocks[e])
                for e, s in sorted(self.engine_seconds.items())
                if e in clocks
            },
            "dma_us": _us(self.dma_seconds),
            "dma_latency_us": _us(self.dma_latency_s),
            "lanes_us": {lane: [_us(a), _us(b)] for lane, (a, b) in sorted(self.lanes.items())},
            "bytes_in": self.hbm_read_bytes,
            "bytes_out": self.hbm_write_bytes,
            "onchip_dma_bytes": self.onchip_dma_bytes,
            "sbuf_bytes": self.sbuf_bytes,
            "flops": self.flops,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: object, where: str = "kernel") -> Kernel:
        """A kernel from ``to_json()`` output; ``ValueError`` naming the field if malformed."""
        data = json_object(data, where)
        kernel = cls(
            id=json_int(data, "id", where, required=True),
            name=json_text(data, "name", where, required=True),
            engine=_engine(json_text(data, "engine", where, required=True), f"{where}.engine"),
            ops=[_text(o, f"{where}.ops") for o in json_list(data, "ops", where)],
            op_indices=[
                as_int(i, f"{where}.op_indices") for i in json_list(data, "op_indices", where)
            ],
            engine_seconds={
                _engine(e, f"{where}.engine_us"): as_number(v, f"{where}.engine_us.{e}") / 1e6
                for e, v in json_object(data.get("engine_us", {}), f"{where}.engine_us").items()
            },
            dma_seconds=json_number(data, "dma_us", where) / 1e6,
            hbm_read_bytes=json_int(data, "bytes_in", where),
            hbm_write_bytes=json_int(data, "bytes_out", where),
            sbuf_bytes=json_int(data, "sbuf_bytes", where),
            flops=json_int(data, "flops", where),
            onchip_dma_bytes=json_int(data, "onchip_dma_bytes", where),
            dma_latency_s=json_number(data, "dma_latency_us", where) / 1e6,
            deps=[as_int(d, f"{where}.deps") for d in json_list(data, "deps", where)],
            notes=[_text(n, f"{where}.notes") for n in json_list(data, "notes", where)],
            start_s=json_number(data, "start_us", where) / 1e6,
            end_s=json_number(data, "end_us", where) / 1e6,
        )
        lanes = json_object(data.get("lanes_us", {}), f"{where}.lanes_us")
        for lane, span in lanes.items():
            label = f"{where}.lanes_us.{lane}"
            if not isinstance(span, list) or len(span) != 2:
                raise ValueError(f"{label} is {span!r:.40}, expected [start, end]")
            start, end = (as_number(t, label) / 1e6 for t in span)
            kernel.lanes[_engine(lane, f"{where}.lanes_us")] = (start, end)
        return kernel


def _engine(name: object, where: str) -> str:
    if name not in ENGINES:
        raise ValueError(f"{where} names engine {name!r:.40}, not one of {', '.join(ENGINES)}")
    return name


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} holds {value!r:.40}, expected strings")
    return value


def _topological_order(kernels: list[Kernel]) -> list[int]:
    """Positions of ``kernels`` in dependency order; ValueError on a cycle."""
    position = {k.id: i for i, k in enumerate(kernels)}
    waiting = [len(k.deps) for k in kernels]
    users: list[list[int]] = [[] for _ in kernels]
    for i, kernel in enumerate(kernels):
        for dep in kernel.deps:
            users[position[dep]].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    order = []
    while ready:
        i = ready.pop()
        order.append(i)
        for user in users[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if len(order) != len(kernels):
        stuck = sorted(kernels[i].name for i, count in enumerate(waiting) if count > 0)
        raise ValueError(f"the kernel graph has a cycle through: {', '.join(stuck[:8])}")
    return order


def _place(kernel: Kernel, producers_done: float, lane_free: dict[str, float]) -> None:
    """Start ``kernel`` once its producers and its primary engine are done; each other
    lane it uses from when that lane is free (module docstring)."""
    start = max(producers_done, lane_free[kernel.engine])
    end = start + kernel.work_seconds
    lanes: dict[str, tuple[float, float]] = {}
    for lane in COMPUTE_ENGINES:
        busy = kernel.engine_seconds.get(lane, 0.0)
        if lane == kernel.engine or busy <= 0.0:
            continue
        lane_start = max(start, lane_free[lane])
        lanes[lane] = (lane_start, lane_start + busy)
        lane_free[lane] = lane_start + busy
        end = max(end, lane_start + busy)
    if kernel.dma_seconds > 0.0:
        dma_start = max(start + kernel.dma_latency_s, lane_free[DMA_ENGINE])
        lanes[DMA_ENGINE] = (dma_start, dma_start + kernel.dma_seconds)
        lane_free[DMA_ENGINE] = dma_start + kernel.dma_seconds
        end = max(end, dma_start + kernel.dma_seconds)
    if kernel.engine != DMA_ENGINE:
        lanes[kernel.engine] = (start, end)
    lane_free[kernel.engine] = max(lane_free[kernel.engine], end)
    kernel.start_s, kernel.end_s, kernel.lanes = start, end, lanes


def _place_barrier(kernel: Kernel, producers_done: float, lane_free: dict[str, float]) -> None:
    """A loop: start once its producers are done and every lane is free; hold every lane."""
    start = max(producers_done, *lane_free.values())
    end = start + kernel.work_seconds
    kernel.start_s, kernel.end_s = start, end
    kernel.lanes = dict.fromkeys(ENGINES, (start, end))
    lane_free.update(dict.fromkeys(ENGINES, end))


def list_schedule(kernels: list[Kernel]) -> float:
    """Place every kernel in time (sets start/end/lanes); returns the latency in seconds."""
    if not kernels:
        return 0.0
    position = {k.id: i for i, k in enumerate(kernels)}
    users: list[list[int]] = [[] for _ in kernels]
    for i, kernel in enumerate(kernels):
        for dep in kernel.deps:
            users[position[dep]].append(i)
    # Bottom level: the longest chain of work from a kernel to the end of the program.
    bottom = [0.0] * len(kernels)
    for i in reversed(_topological_order(kernels)):
        bottom[i] = kernels[i].work_seconds + max((bottom[u] for u in users[i]), default=0.0)

    waiting = [len(k.deps) for k in kernels]
    ready = [(-bottom[i], kernels[i].id, i) for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    lane_free = {lane: 0.0 for lane in ENGINES}
    latency = 0.0
    while ready:
        _, _, i = heapq.heappop(ready)
        kernel = kernels[i]
        producers_done = max((kernels[position[d]].end_s for d in kernel.deps), default=0.0)
        place = _place_barrier if kernel.span_s > 0.0 else _place
        place(kernel, producers_done, lane_free)
        latency = max(latency, kernel.end_s)
        for user in users[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (-bottom[user], kernels[user].id, user))
    return latency


@dataclass
class Schedule:
    """The estimated execution of one program on one logical NeuronCore."""

    target: str
    lnc: int
    kernels: list[Kernel]
    memory: MemoryPlan
    latency_s: float
    flops: int  # matmul FLOPs (2 per multiply-accumulate)
    # sum over matmuls of flops / (TensorE peak of the logical core at the matmul's dtype)
    peak_seconds: float
    clocks: dict[str, float]  # engine clock in Hz, to report cycles
    model: dict = field(default_factory=dict)  # the figures the estimate used

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: time the matmuls would take at TensorE peak / latency."""
        return self.peak_seconds / self.latency_s if self.latency_s > 0 else 0.0

    @property
    def hbm_bytes(self) -> int:
        return sum(k.hbm_bytes for k in self.kernels)

    def engine_busy_seconds(self) -> dict[str, float]:
        busy = {engine: 0.0 for engine in ENGINES}
        for kernel in self.kernels:
            for engine, seconds in kernel.engine_seconds.items():
                busy[engine] += seconds
            busy[DMA_ENGINE] += kernel.dma_seconds
        return busy

    def engine_busy_percent(self) -> dict[str, float]:
        busy = self.engine_busy_seconds()
        if self.latency_s <= 0:
            return {engine: 0.0 for engine in busy}
        return {
            engine: round(100.0 * seconds / self.latency_s, 2) for engine, seconds in busy.items()
        }

    # The keys of ``summary()``: the NEFF manifest's ``estimates`` (neff/schema.py).
    SUMMARY_KEYS = tuple(ESTIMATES.optional)

    def summary(self) -> dict:
        """The figures stored in the NEFF manifest's ``estimates``."""
        return {
            "latency_us": _us(self.latency_s),
            "engine_busy_percent": self.engine_busy_percent(),
            "hbm_bytes": self.hbm_bytes,
            "peak_hbm_bytes": self.memory.peak_hbm_bytes,
            "weights_bytes": self.memory.weights_bytes,
            "flops": self.flops,
            "mfu": round(self.mfu, 4),
            "kernels": len(self.kernels),
        }

    def to_json(self) -> dict:
        return {
            "format": SCHEDULE_FORMAT,
            "version": SCHEDULE_VERSION,
            "target": self.target,
            "lnc": self.lnc,
            "latency_us": _us(self.latency_s),
            "flops": self.flops,
            "peak_us": _us(self.peak_seconds),
            "clocks_hz": dict(sorted(self.clocks.items())),
            "model": self.model,
            "summary": self.summary(),
            "kernels": [k.to_json(self.clocks) for k in self.kernels],
            "memory_plan": self.memory.to_json(),
        }

    def to_bytes(self) -> bytes:
        """Canonical JSON (sorted keys, fixed layout), as stored in the NEFF."""
        return (json.dumps(self.to_json(), sort_keys=True, indent=1) + "\n").encode("ascii")

    @classmethod
    def from_json(cls, data: dict | bytes | str) -> Schedule:
        """A Schedule from ``to_json()`` output (a dict, or its JSON text/bytes).

        ``ValueError`` (``json.JSONDecodeError`` and ``UnicodeDecodeError`` among them)
        naming the field when the data is not such output. A NEFF's schedule has passed
        the reader's schema already (``torchneuron.neff.schema``); this keeps the
        estimate layer safe on its own.
        """
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(data).decode("utf-8")
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except RecursionError:
                raise ValueError("schedule JSON is nested too deeply") from None
        data = json_object(data, "schedule")
        if data.get("format") != SCHEDULE_FORMAT:
            raise ValueError(f"not a schedule: format is {data.get('format')!r:.40}")
        if data.get("version") != SCHEDULE_VERSION:
            raise ValueError(
                f"schedule version {data.get('version')!r:.40} is not supported "
                f"(this reader knows {SCHEDULE_VERSION})"
            )
        kernels = [
            Kernel.from_json(k, f"kernels[{i}]")
            for i, k in enumerate(json_list(data, "kernels", "schedule"))
        ]
        clocks = json_object(data.get("clocks_hz", {}), "schedule.clocks_hz")
        model = json_object(data.get("model", {}), "schedule.model")
        return cls(
            target=json_text(data, "target", "schedule", required=True),
            lnc=json_int(data, "lnc", "schedule", required=True),
            kernels=kernels,
            memory=MemoryPlan.from_json(data.get("memory_plan", {})),
            latency_s=json_number(data, "latency_us", "schedule") / 1e6,
            flops=json_int(data, "flops", "schedule"),
            peak_seconds=json_number(data, "peak_us", "schedule") / 1e6,
            clocks={
                _engine(e, "schedule.clocks_hz"): as_number(v, f"schedule.clocks_hz.{e}")
                for e, v in clocks.items()
            },
            model=dict(model),
        )

    def table(self, limit: int | None = 40) -> str:
        """The kernels as a text table, in start order (the first ``limit`` rows)."""
        rows = sorted(self.kernels, key=lambda k: (k.start_s, k.id))
        shown = rows if limit is None else rows[:limit]
        lines = [
            f"  {'kernel':<28} {'engine':<8} {'bound':<8} {'start us':>10} {'time us':>9} "
            f"{'bytes in':>11} {'bytes out':>11} {'SBUF':>9}  ops"
        ]
        for k in shown:
            ops = len(k.ops)
            lines.append(
                f"  {k.name[:28]:<28} {k.engine:<8} {k.bound:<8} {k.start_s * 1e6:>10.3f} "
                f"{k.duration_s * 1e6:>9.3f} {k.hbm_read_bytes:>11} {k.hbm_write_bytes:>11} "
                f"{k.sbuf_bytes:>9}  {ops}"
            )
        if len(rows) > len(shown):
            lines.append(f"  ... {len(rows) - len(shown)} more kernels")
        return "\n".join(lines)
