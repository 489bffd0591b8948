"""Where the time goes: capture NEFF executions, show them as a table or a Chrome trace.

    with torchneuron.profiler.profile() as prof:
        loss = model(x).sum(); loss.backward()
    print(prof.table())                   # per NEFF: calls, estimated device time, engine, bytes
    prof.export_chrome_trace("trace.json")  # open in https://ui.perfetto.dev or chrome://tracing

Everything that runs on an emulated NeuronCore goes through ``LoadedNeff.execute``:
eager ops (one NEFF per op), ``torch.compile`` graphs and ``neuronc run`` alike. The
profiler registers a hook there and records, for each execution, the NEFF, the core,
the host wall time, and the *estimated device time* from the NEFF's schedule (the
cost model's list schedule, ``sg00/schedule.json``), with the HBM bytes it moves. A
NEFF written without a schedule has none (``LoadedNeff.schedule`` is None): its
executions are recorded with unknown device time ("n/a" in the table, no kernels in
the trace); nothing re-runs the cost model here.

Eager ops run asynchronously on each device's execution thread, where the hook
sees them: host times are those of the execution, not of the op's submission. A
profile waits for the queued ops when it starts and when it stops, so it holds the
executions of the ops issued inside it.

Device time is a model, not a measurement: executions on a core are laid end to end
on a device timeline (an execution starts when the host runs it, or when the
previous one on that core ends), and each one's kernels are drawn on one lane per
engine (TensorE, VectorE, ScalarE, GpSimd, DMA) at their scheduled times.

Collectives: the ``neuron`` process group calls ``record_collective`` for each collective
(a no-op when no profile is active). Each one is recorded with its host wall time and its
*estimated time on the real interconnect* (``torchneuron.estimate.collectives``: the
algorithm, bytes per rank and levels crossed for the group's ranks placed on a trn2/trn3
instance). The table gets a collectives section; the trace shows them on two lanes of the
rank: "collectives (host)" in the host process and "collectives" in a process of their own,
laid end to end on an estimated timeline like the NEFFs. A trace's processes are named
"rank N: ..." and its pids start at N * 1000, so ``merge_traces`` (or ``python -m
torchneuron.profiler merge a.json b.json -o all.json``) can put the traces of all ranks in
one Perfetto file, aligned on the wall clock (each trace records ``time.time()`` at the
profile's origin in its ``otherData``).

A ``torch.profiler`` trace opens in this view too: ``open_torch_trace("trace.json")``
(``torch_trace.py``) reads the neuron device events of a trace ``export_chrome_trace``
wrote and gives the same ``table()`` and an ``export_chrome_trace()`` with per-core lanes
and one lane per engine (each engine's busy total per execution: torch.profiler's events
carry no kernel schedule); ``python -m torchneuron.profiler table trace.json`` prints it.

The trace layout (pids per rank, lanes, event helpers) and ``merge_traces`` live in
``trace.py``, so the writer here and the merger share one layout; ``__main__.py`` is the
command line.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from torchneuron.profiler import trace
from torchneuron.profiler.torch_trace import (
    COLLECTIVE_PREFIX,
    PRODUCER,
    TorchTrace,
    TorchTraceError,
    open_torch_trace,
)
from torchneuron.profiler.trace import merge_traces

__all__ = [
    "CollectiveEvent",
    "ExecutionEvent",
    "ProfileRow",
    "TorchTrace",
    "TorchTraceError",
    "merge_traces",
    "open_torch_trace",
    "profile",
    "record_collective",
]

# Profiles recording now; record_collective returns at once when empty.
_ACTIVE: list[profile] = []


@dataclass
class ExecutionEvent:
    """One ``LoadedNeff.execute`` seen by the profiler. Times are seconds since the
    profile started (host clock) or on the modelled device timeline (device_*)."""

    name: str
    core: int
    core_description: str
    target: str
    lnc: int
    executor: str
    host_start_s: float
    host_seconds: float
    device_start_s: float
    device_seconds: float  # estimated; 0.0 when the NEFF has no estimate
    hbm_bytes: int
    engine: str  # the engine busiest in this NEFF's schedule ("-" when unknown)
    flops: int
    schedule: Any = field(default=None, repr=False)

    @property
    def estimated(self) -> bool:
        return self.schedule is not None


@dataclass
class ProfileRow:
    """Executions (or kernels) grouped by name."""

    name: str
    calls: int = 0
    host_seconds: float = 0.0
    device_seconds: float = 0.0
    hbm_bytes: int = 0
    flops: int = 0
    engine: str = "-"
    estimated: bool = True

    @property
    def device_average_seconds(self) -> float:
        return self.device_seconds / self.calls if self.calls else 0.0


@dataclass
class CollectiveEvent:
    """One collective reported by the process group. ``host_*`` on the profile's host
    clock; ``device_*`` on the estimated collectives timeline of this rank."""

    kind: str
    nbytes: int
    ranks: tuple[int, ...]
    rank: int
    group_name: str
    host_start_s: float
    host_seconds: float
    device_start_s: float
    estimate: Any  # torchneuron.estimate.collectives.CollectiveEstimate

    @property
    def device_seconds(self) -> float:
        return self.estimate.seconds

    @property
    def label(self) -> str:
        group = f" {self.group_name}" if self.group_name else ""
        return f"{self.kind}[{len(self.ranks)} ranks{group}]"

    def trace_args(self) -> dict:
        est = self.estimate
        return {
            "kind": self.kind,
            "nbytes": self.nbytes,
            "ranks": list(self.ranks),
            "group": self.group_name,
            "algorithm": est.algorithm,
            "estimated_seconds": est.seconds,
            "bytes_per_rank": est.bytes_per_rank,
            "bus_bandwidth": est.bus_bandwidth,
            "levels": [[lv.name, lv.bytes_per_rank, lv.steps, lv.seconds] for lv in est.levels],
            "host_seconds": self.host_seconds,
        }


def is_recording() -> bool:
    """True while a profile is active (callers skip preparing what only it would read)."""
    return bool(_ACTIVE)


def record_collective(
    kind: str,
    nbytes: int,
    ranks: tuple[int, ...],
    rank: int,
    host_start: float,
    host_seconds: float,
    group_name: str = "",
) -> None:
    """Record one collective in every active profile: ``ranks`` the group's global ranks,
    ``rank`` this process's, ``host_start`` from ``time.perf_counter()``. Costs one list
    test when no profile is active (and one native call for torch.profiler)."""
    torch_profiler = _torch_profiler_recording()
    if not _ACTIVE and not torch_profiler:
        return
    from torchneuron.estimate.collectives import estimate_collective

    ranks = tuple(ranks)
    estimate = estimate_collective(kind, nbytes, ranks, _placement())
    if torch_profiler:
        _to_torch_profiler(kind, nbytes, ranks, host_start, estimate)
    for prof in list(_ACTIVE):
        prof._record_collective(
            kind, nbytes, ranks, rank, host_start, host_seconds, group_name, estimate
        )


def _torch_profiler_recording() -> bool:
    try:
        from torchneuron.device import _C
    except ImportError:
        return False
    return _C.profiler_recording()


def _to_torch_profiler(kind, nbytes, ranks, host_start, estimate) -> None:
    """The collective as a torch.profiler device event, as device/profiler_events.py
    hands executions, lasting its estimated time on the real interconnect."""
    import json

    import torch

    from torchneuron.device import _C

    facts = {"bytes": nbytes, "ranks": list(ranks), "algorithm": estimate.algorithm}
    _C.profiler_record(
        f"{COLLECTIVE_PREFIX}{kind}",
        time.perf_counter() - host_start,
        estimate.seconds,
        int(_C.profiler_correlation()),
        int(torch.neuron.current_device()),
        json.dumps(facts)[1:-1],
    )


def _placement():
    """Where ranks sit: this process's emulated target and LNC, on the target's default
    instance (ranks are positions on that machine, as the process group numbers them)."""
    from torchneuron.estimate.collectives import Placement
    from torchneuron.target.topology import topology

    current = topology()
    return Placement(current.target, current.lnc)


def _distributed_rank() -> int:
    """This process's rank when torch.distributed is initialised, else 0."""
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return 0


def _busiest_engine(schedule) -> str:
    from torchneuron.estimate.scheduler import busiest_engine

    return busiest_engine(schedule.engine_busy_seconds())


class profile:
    """Record every NEFF execution while active; ``table()`` and ``export_chrome_trace()``
    show them. Re-entering a finished profile continues recording into it."""

    def __init__(self) -> None:
        self.events: list[ExecutionEvent] = []
        self.collectives: list[CollectiveEvent] = []
        self.rank = 0  # torch.distributed's rank at start, or the rank collectives report
        self._lock = threading.Lock()
        self._origin: float | None = None
        self._wall_origin: float | None = None  # time.time() at _origin, to align ranks
        self._device_free: dict[int, float] = {}
        self._collectives_free = 0.0
        self._active = False

    # -- capture -------------------------------------------------------------------

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        from torchneuron.runtime.loaded_neff import add_execute_hook

        if self._active:
            return
        _drain_device_queues()
        if self._origin is None:
            self._wall_origin, self._origin = time.time(), time.perf_counter()
        self.rank = _distributed_rank()
        add_execute_hook(self._record)
        _ACTIVE.append(self)
        self._active = True

    def stop(self) -> None:
        from torchneuron.runtime.loaded_neff import remove_execute_hook

        if self._active:
            _drain_device_queues()  # the ops issued inside the profile have run
        remove_execute_hook(self._record)
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        self._active = False

    def _record_collective(
        self, kind, nbytes, ranks, rank, host_start, host_seconds, group_name, estimate
    ) -> None:
        with self._lock:
            start = host_start - self._origin
            device_start = max(start, self._collectives_free)
            self._collectives_free = device_start + estimate.seconds
            self.rank = rank
            self.collectives.append(
                CollectiveEvent(
                    kind, nbytes, ranks, rank, group_name, start, host_seconds,
                    device_start, estimate,
                )
            )  # fmt: skip

    def _record(self, loaded, host_start: float, host_seconds: float) -> None:
        schedule = loaded.schedule
        core = loaded.core
        with self._lock:
            start = host_start - self._origin
            device_seconds = schedule.latency_s if schedule is not None else 0.0
            device_start = max(start, self._device_free.get(core.index, 0.0))
            self._device_free[core.index] = device_start + device_seconds
            self.events.append(
                ExecutionEvent(
                    name=loaded.name,
                    core=core.index,
                    core_description=core.description,
                    target=core.target,
                    lnc=core.lnc,
                    executor=loaded.executor_name,
                    host_start_s=start,
                    host_seconds=host_seconds,
                    device_start_s=device_start,
                    device_seconds=device_seconds,
                    hbm_bytes=schedule.hbm_bytes if schedule is not None else 0,
                    engine=_busiest_engine(schedule) if schedule is not None else "-",
                    flops=schedule.flops if schedule is not None else 0,
                    schedule=schedule,
                )
            )

    # -- summaries -------------------------------------------------------------------

    @property
    def device_seconds(self) -> float:
        """Estimated device time of every recorded execution, summed."""
        return sum(e.device_seconds for e in self.events)

    def key_averages(self, group_by: str = "neff") -> list[ProfileRow]:
        """Rows per NEFF name (``group_by="neff"``) or per kernel of each NEFF ("kernel"),
        most device time first."""
        if group_by not in ("neff", "kernel"):
            raise ValueError(f"group_by must be 'neff' or 'kernel', not {group_by!r}")
        rows: dict[str, ProfileRow] = {}
        for event in self.events:
            if group_by == "neff" or event.schedule is None:
                row = rows.setdefault(event.name, ProfileRow(event.name, engine=event.engine))
                row.calls += 1
                row.host_seconds += event.host_seconds
                row.device_seconds += event.device_seconds
                row.hbm_bytes += event.hbm_bytes
                row.flops += event.flops
                row.estimated = row.estimated and event.estimated
                continue
            for kernel in event.schedule.kernels:
                key = f"{event.name}/{kernel.name}"
                row = rows.setdefault(key, ProfileRow(key, engine=kernel.engine))
                row.calls += 1
                row.device_seconds += kernel.duration_s
                row.hbm_bytes += kernel.hbm_bytes
                row.flops += kernel.flops
        return sorted(rows.values(), key=lambda r: (-r.device_seconds, r.name))

    def table(self, group_by: str = "neff", row_limit: int | None = 30) -> str:
        """A text table: calls, host time, estimated device time, engine, bytes moved."""
        rows = self.key_averages(group_by)
        total = sum(r.device_seconds for r in rows) or 1.0
        width = max([len("Name"), *(min(len(r.name), 48) for r in rows)])
        header = (
            f"{'Name':<{width}}  {'Calls':>6}  {'Host total':>11}  {'Device total':>13}  "
            f"{'Device avg':>11}  {'Device %':>8}  {'Engine':<8}  {'HBM bytes':>13}"
        )
        lines = [header, "-" * len(header)]
        shown = rows if row_limit is None else rows[:row_limit]
        for r in shown:
            device = f"{r.device_seconds * 1e6:.3f} us" if r.estimated else "n/a"
            average = f"{r.device_average_seconds * 1e6:.3f} us" if r.estimated else "n/a"
            host = f"{r.host_seconds * 1e3:.3f} ms" if group_by == "neff" else "-"
            lines.append(
                f"{r.name[:48]:<{width}}  {r.calls:>6}  {host:>11}  {device:>13}  {average:>11}  "
                f"{100 * r.device_seconds / total:>7.1f}%  {r.engine:<8}  {r.hbm_bytes:>13}"
            )
        if len(rows) > len(shown):
            lines.append(f"... {len(rows) - len(shown)} more rows")
        host_total = sum(e.host_seconds for e in self.events)
        lines.append(
            f"{len(self.events)} executions; host time {host_total * 1e3:.3f} ms; estimated "
            f"device time {self.device_seconds * 1e6:.3f} us (cost model, not a measurement)"
        )
        if self.collectives:
            lines += ["", *self._collectives_table()]
        return "\n".join(lines)

    def _collectives_table(self) -> list[str]:
        """Collectives grouped by kind, group and algorithm: host time and the estimated
        time on the real interconnect."""
        from torchneuron.estimate.collectives import LEVELS

        rows: dict[tuple, list] = {}
        for c in self.collectives:
            key = (c.label, c.estimate.algorithm)
            row = rows.setdefault(key, [0, 0.0, 0.0, 0, set()])
            row[0] += 1
            row[1] += c.host_seconds
            row[2] += c.device_seconds
            row[3] += c.nbytes
            row[4].update(level.name for level in c.estimate.levels)
        width = max(len("Collective"), *(len(label) for label, _ in rows))
        header = (
            f"{'Collective':<{width}}  {'Calls':>6}  {'Host total':>11}  {'Est. device':>13}  "
            f"{'Algorithm':<12}  {'Bytes':>13}  Levels"
        )
        lines = [header, "-" * len(header)]
        ordered = sorted(rows.items(), key=lambda item: (-item[1][2], item[0]))
        for (label, algorithm), (calls, host, device, nbytes, levels) in ordered:
            crossed = ",".join(level for level in LEVELS if level in levels) or "-"
            lines.append(
                f"{label:<{width}}  {calls:>6}  {host * 1e3:>8.3f} ms  {device * 1e6:>10.3f} us  "
                f"{algorithm:<12}  {nbytes:>13}  {crossed}"
            )
        estimated = sum(c.device_seconds for c in self.collectives)
        lines.append(
            f"{len(self.collectives)} collectives on rank {self.rank}; estimated time on the "
            f"real interconnect {estimated * 1e6:.3f} us (cost model, not a measurement)"
        )
        return lines

    # -- Chrome / Perfetto trace -----------------------------------------------------

    def chrome_trace(self) -> dict:
        """The recorded executions as a Chrome trace (the JSON object format)."""
        base, prefix = self.rank * trace.RANK_PID_STRIDE, f"rank {self.rank}: "
        host = base
        events = trace.process(
            host, prefix + "Host (wall clock)", {trace.HOST_NEFF_LANE: "LoadedNeff.execute"}
        )
        cores = sorted({(e.core, e.core_description) for e in self.events})
        for core, description in cores:
            events += trace.core_process(base + core + 1, f"{prefix}{description}, estimated")
        for number, event in enumerate(self.events):
            events.append(
                trace.slice_event(
                    event.name,
                    "host",
                    host,
                    trace.HOST_NEFF_LANE,
                    event.host_start_s,
                    event.host_seconds,
                    {"execution": number, "core": event.core, "executor": event.executor},
                )
            )
            pid = base + event.core + 1
            args = {
                "execution": number,
                "estimated": event.estimated,
                "hbm_bytes": event.hbm_bytes,
                "flops": event.flops,
                "busiest_engine": event.engine,
            }
            events.append(
                trace.slice_event(
                    event.name,
                    "neff",
                    pid,
                    trace.NEFF_LANE,
                    event.device_start_s,
                    event.device_seconds,
                    args,
                )
            )
            if event.schedule is None:
                continue
            for kernel in event.schedule.kernels:
                kernel_args = {
                    "neff": event.name,
                    "ops": len(kernel.ops),
                    "bound": kernel.bound,
                    "bytes_in": kernel.hbm_read_bytes,
                    "bytes_out": kernel.hbm_write_bytes,
                    "sbuf_bytes": kernel.sbuf_bytes,
                    "flops": kernel.flops,
                }
                for lane, (begin, end) in sorted(kernel.lanes.items()):
                    events.append(
                        trace.slice_event(
                            kernel.name,
                            "kernel",
                            pid,
                            trace.LANE_TIDS[lane],
                            event.device_start_s + begin,
                            end - begin,
                            {**kernel_args, "primary": lane == kernel.engine},
                        )
                    )
        events += self._collective_trace_events(base, prefix)
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "producer": PRODUCER,
                "device_time": "estimated by the torchneuron cost model",
                "rank": self.rank,
                "wall_clock_origin": self._wall_origin,
            },
        }

    def _collective_trace_events(self, base: int, prefix: str) -> list[dict]:
        if not self.collectives:
            return []
        pid = base + trace.COLLECTIVES_PID
        events = [
            trace.metadata(
                "thread_name", base, trace.HOST_COLLECTIVES_LANE, {"name": "collectives (host)"}
            ),
            *trace.process(pid, f"{prefix}collectives, estimated", {0: "collectives"}),
        ]
        for c in self.collectives:
            args = c.trace_args()
            events.append(
                trace.slice_event(c.label, "collective", base, trace.HOST_COLLECTIVES_LANE,
                       c.host_start_s, c.host_seconds, args)
            )  # fmt: skip
            events.append(
                trace.slice_event(
                    c.label, "collective", pid, 0, c.device_start_s, c.device_seconds, args
                )
            )
        return events

    def chrome_trace_text(self) -> str:
        """``chrome_trace()`` as the JSON text of a trace file."""
        return json.dumps(self.chrome_trace(), separators=(",", ":")) + "\n"

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write ``chrome_trace()`` as JSON to ``path``; the Perfetto UI and chrome://tracing
        load it."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.chrome_trace_text())


def _drain_device_queues() -> None:
    """Wait for the ops queued on the neuron devices (nothing to do if none ever ran)."""
    import sys

    streams = sys.modules.get("torchneuron.device.streams")
    if streams is not None:
        streams.drain_all()
