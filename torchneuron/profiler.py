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
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from torchneuron.target.engines import DMA_ENGINE, ENGINES

__all__ = ["ExecutionEvent", "ProfileRow", "profile"]

# Chrome trace thread ids of a core's lanes: the executions, then one per engine.
_NEFF_LANE = 0
_LANE_TIDS = {engine: i + 1 for i, engine in enumerate(ENGINES)}
_HOST_PID = 0


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


def _busiest_engine(schedule) -> str:
    busy = schedule.engine_busy_seconds()
    compute = {e: s for e, s in busy.items() if e != DMA_ENGINE}
    engine = max(compute, key=lambda e: compute[e]) if any(compute.values()) else DMA_ENGINE
    return DMA_ENGINE if busy.get(DMA_ENGINE, 0.0) > compute.get(engine, 0.0) else engine


class profile:
    """Record every NEFF execution while active; ``table()`` and ``export_chrome_trace()``
    show them. Re-entering a finished profile continues recording into it."""

    def __init__(self) -> None:
        self.events: list[ExecutionEvent] = []
        self._lock = threading.Lock()
        self._origin: float | None = None
        self._device_free: dict[int, float] = {}
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
            self._origin = time.perf_counter()
        add_execute_hook(self._record)
        self._active = True

    def stop(self) -> None:
        from torchneuron.runtime.loaded_neff import remove_execute_hook

        if self._active:
            _drain_device_queues()  # the ops issued inside the profile have run
        remove_execute_hook(self._record)
        self._active = False

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
        return "\n".join(lines)

    # -- Chrome / Perfetto trace -----------------------------------------------------

    def chrome_trace(self) -> dict:
        """The recorded executions as a Chrome trace (the JSON object format)."""
        events: list[dict] = [
            _metadata("process_name", _HOST_PID, None, {"name": "Host (wall clock)"}),
            _metadata("process_sort_index", _HOST_PID, None, {"sort_index": 0}),
            _metadata("thread_name", _HOST_PID, 0, {"name": "LoadedNeff.execute"}),
        ]
        cores = sorted({(e.core, e.core_description) for e in self.events})
        for core, description in cores:
            pid = core + 1
            events.append(
                _metadata("process_name", pid, None, {"name": f"{description}, estimated"})
            )
            events.append(_metadata("process_sort_index", pid, None, {"sort_index": pid}))
            events.append(_metadata("thread_name", pid, _NEFF_LANE, {"name": "NEFF"}))
            events.append(_metadata("thread_sort_index", pid, _NEFF_LANE, {"sort_index": 0}))
            for engine, tid in _LANE_TIDS.items():
                events.append(_metadata("thread_name", pid, tid, {"name": engine}))
                events.append(_metadata("thread_sort_index", pid, tid, {"sort_index": tid}))
        for number, event in enumerate(self.events):
            events.append(
                _slice(
                    event.name,
                    "host",
                    _HOST_PID,
                    0,
                    event.host_start_s,
                    event.host_seconds,
                    {"execution": number, "core": event.core, "executor": event.executor},
                )
            )
            pid = event.core + 1
            args = {
                "execution": number,
                "estimated": event.estimated,
                "hbm_bytes": event.hbm_bytes,
                "flops": event.flops,
                "busiest_engine": event.engine,
            }
            events.append(
                _slice(
                    event.name,
                    "neff",
                    pid,
                    _NEFF_LANE,
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
                        _slice(
                            kernel.name,
                            "kernel",
                            pid,
                            _LANE_TIDS[lane],
                            event.device_start_s + begin,
                            end - begin,
                            {**kernel_args, "primary": lane == kernel.engine},
                        )
                    )
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "producer": "torchneuron.profiler",
                "device_time": "estimated by the torchneuron cost model",
            },
        }

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


def _metadata(name: str, pid: int, tid: int | None, args: dict) -> dict:
    event = {"name": name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def _slice(
    name: str, category: str, pid: int, tid: int, start_s: float, seconds: float, args: dict
) -> dict:
    # Chrome traces count microseconds; three decimals keep nanoseconds. Rounding the end
    # (not the duration) keeps back-to-back slices from overlapping after rounding.
    start = round(start_s * 1e6, 3)
    end = round((start_s + max(seconds, 0.0)) * 1e6, 3)
    return {
        "name": name,
        "cat": category,
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": start,
        "dur": round(end - start, 3),
        "args": args,
    }
