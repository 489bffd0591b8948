"""Open a ``torch.profiler`` Chrome trace in ``torchneuron.profiler``'s view.

    with torch.profiler.profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
    ) as prof:
        ...
    prof.export_chrome_trace("trace.json")

    trace = torchneuron.profiler.open_torch_trace("trace.json")
    print(trace.table())                     # per NEFF: calls, device time, engine, bytes
    trace.export_chrome_trace("lanes.json")  # per-core lanes, one lane per engine

or ``python -m torchneuron.profiler table trace.json`` and
``python -m torchneuron.profiler lanes trace.json -o lanes.json``.

Which events are ours: ``csrc/neuron_profiler.cpp`` hands each NEFF execution (eager
op, fused chain, compiled graph, NKI kernel) and each collective to Kineto; the trace has
it as a complete event (``"ph": "X"``, ``"cat": "kernel"``, ``pid`` the device index)
whose ``args.neuron`` holds ``estimated``, ``core``, ``engine`` (the busiest),
``engines_us``, ``hbm_bytes``, ``flops`` (``device/profiler_events.py``), or for a
collective (named ``collective:<kind>``) ``bytes``, ``ranks``, ``algorithm``. The rest of
the file only names the CPU op that launched each one: Kineto writes that op's
``External id`` into the device event's ``args`` (ours also carry it as ``correlation``).

What the lanes show, honestly: each execution is drawn where torch.profiler put it (from
when the host ran it, for the cost model's estimate of its device time) and under it, on
one lane per engine, that engine's *busy total* for the execution, drawn from its start.
These are totals per execution, not the cost model's kernel-by-kernel schedule, which the
torch.profiler event does not carry: ``torchneuron.profiler.profile()`` records that.

The file is hostile input: at most ``MAX_TRACE_BYTES`` (plain, or gzip as torch.profiler
writes ``*.json.gz``), a JSON object with a ``traceEvents`` list, each field of our
events checked; every failure is one ``TorchTraceError`` naming the file and the fault.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import zlib
from collections import Counter
from dataclasses import dataclass, field

from torchneuron.errors import TorchNeuronError
from torchneuron.files import describe_os_error
from torchneuron.profiler import trace
from torchneuron.profiler.trace_checks import brief as _brief
from torchneuron.profiler.trace_checks import count as _count
from torchneuron.profiler.trace_checks import is_id, is_int, is_text, is_time, json_type, readable
from torchneuron.profiler.trace_checks import text as _text
from torchneuron.target.engines import ENGINES

# Who wrote a trace (otherData.producer), as profile.chrome_trace names itself.
PRODUCER = "torchneuron.profiler"
# A trace this size already parses into several GiB of Python objects.
MAX_TRACE_BYTES = 256 << 20
# The name prefix of a collective's device event (profiler._to_torch_profiler writes it).
COLLECTIVE_PREFIX = "collective:"
# Categories of the CPU events that launch device work (the link's other end).
LAUNCHER_CATEGORIES = ("cpu_op", "user_annotation")
# Device indices become pids rank*1000 + 1 + index: below the collectives' pid.
MAX_DEVICE_INDEX = trace.COLLECTIVES_PID - 2
GZIP_MAGIC = b"\x1f\x8b"


class TorchTraceError(TorchNeuronError, ValueError):
    """A torch.profiler trace file cannot be read, or holds no neuron device events; the
    message names the file and what is wrong."""


@dataclass(frozen=True)
class CpuOp:
    """The CPU op that launched device work, as the trace recorded it."""

    name: str
    external_id: int
    start_us: float
    duration_us: float


@dataclass(frozen=True)
class DeviceEvent:
    """One neuron device event, in the trace's microseconds; ``correlation`` the id of the
    CPU op that launched it, ``cpu_op`` that op where the trace holds it."""

    name: str
    device: int
    start_us: float
    duration_us: float
    correlation: int | None
    cpu_op: CpuOp | None

    @property
    def device_seconds(self) -> float:
        return self.duration_us * 1e-6


@dataclass(frozen=True)
class DeviceExecution(DeviceEvent):
    """One NEFF execution (eager op, fused chain, compiled graph, NKI kernel): it lasts its
    estimated device time (the host time where the NEFF has no schedule: not ``estimated``)."""

    core: str
    estimated: bool
    engine: str  # the busiest engine ("-" when unknown)
    engines_us: dict[str, float]
    hbm_bytes: int
    flops: int

    def trace_args(self) -> dict:
        return {"estimated": self.estimated, "busiest_engine": self.engine,
                "engines_us": self.engines_us, "hbm_bytes": self.hbm_bytes,
                "flops": self.flops}  # fmt: skip


@dataclass(frozen=True)
class DeviceCollective(DeviceEvent):
    """One collective, lasting its estimated time on the real interconnect."""

    nbytes: int
    ranks: tuple[int, ...]
    algorithm: str

    def trace_args(self) -> dict:
        return {"bytes": self.nbytes, "ranks": list(self.ranks), "algorithm": self.algorithm}


@dataclass
class DeviceRow:
    """Executions grouped by name: ``engine`` is the busiest over their summed busy times."""

    name: str
    calls: int = 0
    device_seconds: float = 0.0
    hbm_bytes: int = 0
    flops: int = 0
    engine: str = "-"
    estimated: bool = True
    engines_us: dict[str, float] = field(default_factory=dict)
    cpu_ops: Counter = field(default_factory=Counter)

    @property
    def device_average_seconds(self) -> float:
        return self.device_seconds / self.calls if self.calls else 0.0

    @property
    def launched_by(self) -> str:
        """The CPU op that launched most of these calls ("-" when none was linked)."""
        return self.cpu_ops.most_common(1)[0][0] if self.cpu_ops else "-"


def open_torch_trace(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_TRACE_BYTES
) -> TorchTrace:
    """Read the Chrome trace ``torch.profiler``'s ``export_chrome_trace`` wrote at ``path``
    and pick out the neuron device events; ``TorchTraceError`` if it cannot."""
    shown = os.fspath(path)
    document = _parse(shown, _read_bounded(shown, max_bytes))
    if not isinstance(document, dict):
        raise TorchTraceError(
            f"{shown}: the top level is {json_type(document)}, not an object: a trace "
            "written by torch.profiler's export_chrome_trace is an object with a "
            "'traceEvents' list"
        )
    other = document.get("otherData")
    if isinstance(other, dict) and str(other.get("producer", "")).startswith(PRODUCER):
        raise TorchTraceError(f"{shown}: a {PRODUCER} trace already: open it in Perfetto")
    events = document.get("traceEvents")
    if not isinstance(events, list):
        found = "no 'traceEvents'" if events is None else f"'traceEvents' is {json_type(events)}"
        raise TorchTraceError(
            f"{shown}: {found}; a trace written by torch.profiler's export_chrome_trace "
            "has a 'traceEvents' list"
        )
    return _TraceReader(shown, document, events).read()


def _read_bounded(shown: str, max_bytes: int) -> bytes:
    """The file's bytes (gunzipped if gzip), refused past ``max_bytes``."""
    try:
        info = os.stat(shown)
        if not stat.S_ISREG(info.st_mode):  # a folder, or a pipe that could block the read
            raise TorchTraceError(f"{shown}: not a regular file (a folder, a pipe, a device)")
        if info.st_size > max_bytes:
            raise TorchTraceError(_too_large(shown, f" ({info.st_size} bytes)", max_bytes))
        with open(shown, "rb") as file:
            data = file.read(max_bytes + 1)  # the file may have grown since stat
    except OSError as error:
        raise TorchTraceError(f"{shown}: cannot read ({describe_os_error(error)})") from None
    if not data.startswith(GZIP_MAGIC):
        if len(data) > max_bytes:
            raise TorchTraceError(_too_large(shown, "", max_bytes))
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            text = unzipped.read(max_bytes + 1)  # bounded: a small file may inflate hugely
    except (OSError, EOFError, zlib.error) as error:
        raise TorchTraceError(f"{shown}: a damaged gzip file ({error})") from None
    if len(text) > max_bytes:
        raise TorchTraceError(_too_large(shown, " once unzipped", max_bytes))
    return text


def _too_large(shown: str, detail: str, max_bytes: int) -> str:
    return (
        f"{shown}: larger than the {max_bytes}-byte limit of a trace file{detail}; record a "
        "shorter profile (torch.profiler's schedule) or pass a larger max_bytes"
    )


def _parse(shown: str, data: bytes) -> object:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TorchTraceError(
            f"{shown}: not a JSON trace (not UTF-8 text: byte {error.start})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        body = text.strip()  # cut off: the error is at the end, or a { or [ never closes
        ends_early = error.pos >= len(text.rstrip()) or (
            body.startswith(("{", "[")) and not body.endswith(("}", "]"))
        )
        hint = "; the file ends early: was it cut off while being written?" if ends_early else ""
        raise TorchTraceError(
            f"{shown}: not valid JSON: {error.msg} at line {error.lineno} column "
            f"{error.colno}{hint}"
        ) from None
    except RecursionError:
        raise TorchTraceError(f"{shown}: not a trace: JSON nested too deeply") from None
    except ValueError as error:  # an integer literal past Python's digit limit
        raise TorchTraceError(f"{shown}: not a trace: {error}") from None


class _TraceReader:
    """Picks our device events (checked field by field) and the CPU ops they name."""

    def __init__(self, shown: str, document: dict, events: list) -> None:
        self.shown, self.document, self.events = shown, document, events

    def read(self) -> TorchTrace:
        launchers = self._launchers()
        executions: list[DeviceExecution] = []
        collectives: list[DeviceCollective] = []
        for index, event in enumerate(self.events):
            args = event.get("args") if isinstance(event, dict) else None
            if not isinstance(args, dict) or "neuron" not in args:
                continue
            parsed = self._device_event(index, event, launchers)
            (collectives if isinstance(parsed, DeviceCollective) else executions).append(parsed)
        if not executions and not collectives:
            raise TorchTraceError(
                f"{self.shown}: no neuron device events among its {len(self.events)} trace "
                "events: record with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
                "ProfilerActivity.PrivateUse1]) while work runs on device 'neuron'"
            )
        return TorchTrace(
            path=self.shown,
            executions=executions,
            collectives=collectives,
            rank=self._rank(),
            base_time_ns=self._base_time_ns(),
        )

    def _launchers(self) -> dict[int, CpuOp]:
        """CPU ops by their External id (the first one, should a file repeat an id)."""
        found: dict[int, CpuOp] = {}
        for event in self.events:
            if not isinstance(event, dict) or event.get("cat") not in LAUNCHER_CATEGORIES:
                continue
            args, name = event.get("args"), event.get("name")
            if event.get("ph") != "X" or not isinstance(args, dict) or not isinstance(name, str):
                continue
            external = args.get("External id")
            start, length = event.get("ts"), event.get("dur")
            if is_id(external) and is_time(start) and is_time(length):
                name = readable(name)  # not ours to refuse: a launcher by name only
                found.setdefault(external, CpuOp(name, external, float(start), float(length)))
        return found

    def _device_event(self, index: int, event: dict, launchers: dict[int, CpuOp]):
        name = event.get("name")
        where = f"{self.shown}: traceEvents[{index}]"
        where += f" ({_brief(name)})" if isinstance(name, str) else ""

        def bad(problem: str) -> TorchTraceError:
            return TorchTraceError(f"{where}: {problem}")

        facts = event["args"]["neuron"]
        if not isinstance(facts, dict):
            raise bad(f"args.neuron is {json_type(facts)}, not an object")
        if not isinstance(name, str) or not name:
            raise bad("a neuron device event without a name")
        if not is_text(name):
            raise bad("a name that is not UTF-8 text (a lone surrogate)")
        if event.get("ph") != "X":
            raise bad(f"a neuron device event with ph {_brief(event.get('ph'))}, not 'X'")
        start, length, device = event.get("ts"), event.get("dur"), event.get("pid")
        if not is_time(start):
            raise bad(f"ts is {_brief(start)}, not a time in microseconds (|ts| <= 1e15)")
        if not is_time(length) or length < 0:
            raise bad(f"dur is {_brief(length)}, not a finite number >= 0 (<= 1e15)")
        if not is_int(device) or not 0 <= device <= MAX_DEVICE_INDEX:
            raise bad(f"pid is {_brief(device)}, not a device index 0..{MAX_DEVICE_INDEX}")
        correlation = self._correlation(event["args"], bad)
        cpu_op = launchers.get(correlation) if correlation is not None else None
        common = dict(name=name, device=device, start_us=float(start), duration_us=float(length),
                      correlation=correlation, cpu_op=cpu_op)  # fmt: skip
        if name.startswith(COLLECTIVE_PREFIX):
            ranks = facts.get("ranks")
            if not isinstance(ranks, list) or not all(is_id(r) and r >= 0 for r in ranks):
                raise bad(f"args.neuron.ranks is {_brief(ranks)}, not a list of ranks")
            return DeviceCollective(
                **common,
                nbytes=_count(facts, "bytes", bad),
                ranks=tuple(ranks),
                algorithm=_text(facts, "algorithm", bad),
            )
        estimated = facts.get("estimated")
        if not isinstance(estimated, bool):
            raise bad(f"args.neuron.estimated is {_brief(estimated)}, not true or false")
        engines = facts.get("engines_us", {})
        if not isinstance(engines, dict):
            raise bad(f"args.neuron.engines_us is {json_type(engines)}, not an object")
        for engine, busy in engines.items():
            if engine not in ENGINES:
                raise bad(
                    f"args.neuron.engines_us names {_brief(engine)}, not one of {list(ENGINES)}"
                )
            if not is_time(busy) or busy < 0:
                raise bad(
                    f"args.neuron.engines_us[{_brief(engine)}] is {_brief(busy)}, not a time >= 0"
                )
        engine = facts.get("engine", "-")
        if engine != "-" and engine not in ENGINES:
            raise bad(f"args.neuron.engine is {_brief(engine)}, not one of {list(ENGINES)}")
        return DeviceExecution(
            **common,
            core=_text(facts, "core", bad) if "core" in facts else f"device {device}",
            estimated=estimated,
            engine=engine,
            engines_us={e: float(engines[e]) for e in ENGINES if e in engines},
            hbm_bytes=_count(facts, "hbm_bytes", bad) if "hbm_bytes" in facts else 0,
            flops=_count(facts, "flops", bad) if "flops" in facts else 0,
        )

    @staticmethod
    def _correlation(args: dict, bad) -> int | None:
        # Kineto's link to the CPU op first; the plugin's own copy where Kineto wrote none.
        for key in ("External id", "correlation"):
            if key in args:
                value = args[key]
                if not is_id(value):
                    raise bad(f"args[{key!r}] is {_brief(value)}, not an integer id")
                return value
        return None

    def _rank(self) -> int:
        info = self.document.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        return rank if is_int(rank) and 0 <= rank < 1 << 20 else 0

    def _base_time_ns(self) -> int | None:
        base = self.document.get("baseTimeNanoseconds")
        return base if is_int(base) and 0 <= base < 1 << 63 else None


@dataclass
class TorchTrace:
    """The neuron device events of one torch.profiler trace: ``table()`` and
    ``export_chrome_trace()`` as ``torchneuron.profiler.profile`` has them."""

    path: str
    executions: list[DeviceExecution]
    collectives: list[DeviceCollective]
    rank: int = 0
    base_time_ns: int | None = None  # the trace's baseTimeNanoseconds: ts + this = wall clock

    # -- summaries -------------------------------------------------------------------

    @property
    def device_seconds(self) -> float:
        """Device time of every execution, summed."""
        return sum(e.device_seconds for e in self.executions)

    def key_averages(self) -> list[DeviceRow]:
        """Rows per execution name, most device time first."""
        from torchneuron.estimate.scheduler import busiest_engine

        rows: dict[str, DeviceRow] = {}
        for event in self.executions:
            row = rows.setdefault(event.name, DeviceRow(event.name))
            row.calls += 1
            row.device_seconds += event.device_seconds
            row.hbm_bytes += event.hbm_bytes
            row.flops += event.flops
            row.estimated = row.estimated and event.estimated
            for engine, busy in event.engines_us.items():
                row.engines_us[engine] = row.engines_us.get(engine, 0.0) + busy
            if event.cpu_op is not None:
                row.cpu_ops[event.cpu_op.name] += 1
        for row in rows.values():
            row.engine = busiest_engine(row.engines_us) if row.engines_us else "-"
        return sorted(rows.values(), key=lambda r: (-r.device_seconds, r.name))

    def table(self, row_limit: int | None = 30) -> str:
        """A text table: calls, estimated device time, busiest engine, HBM bytes, FLOPs and
        the CPU op that launched them; collectives in a section of their own."""
        lines = self._executions_table(row_limit) if self.executions else []
        if self.collectives:
            lines += ["", *self._collectives_table()] if lines else self._collectives_table()
        return "\n".join(lines)

    def _executions_table(self, row_limit: int | None) -> list[str]:
        rows = self.key_averages()
        total = sum(r.device_seconds for r in rows) or 1.0
        width = max([len("Name"), *(min(len(r.name), 48) for r in rows)])
        header = (
            f"{'Name':<{width}}  {'Calls':>6}  {'Device total':>13}  {'Device avg':>11}  "
            f"{'Device %':>8}  {'Engine':<8}  {'HBM bytes':>13}  {'FLOPs':>15}  Launched by"
        )
        lines = [header, "-" * len(header)]
        shown = rows if row_limit is None else rows[:row_limit]
        for r in shown:
            mark = "" if r.estimated else " *"
            device = f"{r.device_seconds * 1e6:.3f} us{mark}"
            average = f"{r.device_average_seconds * 1e6:.3f} us"
            lines.append(
                f"{r.name[:48]:<{width}}  {r.calls:>6}  {device:>13}  {average:>11}  "
                f"{100 * r.device_seconds / total:>7.1f}%  {r.engine:<8}  {r.hbm_bytes:>13}  "
                f"{r.flops:>15}  {r.launched_by[:48]}"
            )
        if len(rows) > len(shown):
            lines.append(f"... {len(rows) - len(shown)} more rows")
        lines.append(
            f"{len(self.executions)} executions; estimated device time "
            f"{self.device_seconds * 1e6:.3f} us (cost model, not a measurement)"
        )
        if not all(r.estimated for r in rows):
            lines.append("* includes host time: a NEFF without a schedule has no estimate")
        return lines

    def _collectives_table(self) -> list[str]:
        rows: dict[tuple[str, str, int], list] = {}
        for c in self.collectives:
            row = rows.setdefault((c.name, c.algorithm, len(c.ranks)), [0, 0.0, 0])
            row[0] += 1
            row[1] += c.device_seconds
            row[2] += c.nbytes
        width = max(len("Collective"), *(len(name) for name, _, _ in rows))
        header = (
            f"{'Collective':<{width}}  {'Calls':>6}  {'Est. total':>13}  {'Est. avg':>11}  "
            f"{'Algorithm':<12}  {'Bytes':>13}  Ranks"
        )
        lines = [header, "-" * len(header)]
        ordered = sorted(rows.items(), key=lambda item: (-item[1][1], item[0]))
        for (name, algorithm, ranks), (calls, seconds, nbytes) in ordered:
            lines.append(
                f"{name:<{width}}  {calls:>6}  {seconds * 1e6:>10.3f} us  "
                f"{seconds / calls * 1e6:>8.3f} us  {algorithm:<12}  {nbytes:>13}  {ranks}"
            )
        estimated = sum(c.device_seconds for c in self.collectives)
        lines.append(
            f"{len(self.collectives)} collectives; estimated time on the real interconnect "
            f"{estimated * 1e6:.3f} us (cost model, not a measurement)"
        )
        return lines

    # -- Chrome / Perfetto trace -----------------------------------------------------

    def chrome_trace(self) -> dict:
        """Per-core execution lanes, one lane per engine (busy totals), the launching CPU
        ops with a flow arrow to their device work, and the collectives' own lane. Times
        start at the first event drawn; ``otherData.wall_clock_origin`` places them on the
        wall clock, so ``merge_traces`` aligns this with other ranks' traces."""
        base, prefix = self.rank * trace.RANK_PID_STRIDE, f"rank {self.rank}: "
        drawn = [*self.executions, *self.collectives]
        ops = {e.cpu_op.external_id: e.cpu_op for e in drawn if e.cpu_op is not None}
        origin_us = min([e.start_us for e in drawn] + [op.start_us for op in ops.values()])

        def at(us: float) -> float:  # seconds since the first event drawn
            return (us - origin_us) * 1e-6

        events = self._lane_metadata(base, prefix)
        for op in ops.values():
            events.append(
                trace.slice_event(op.name, "cpu_op", base, trace.HOST_NEFF_LANE, at(op.start_us),
                                  op.duration_us * 1e-6, {"External id": op.external_id})
            )  # fmt: skip
        for number, event in enumerate(drawn):
            collective = isinstance(event, DeviceCollective)
            pid = base + (trace.COLLECTIVES_PID if collective else event.device + 1)
            lane, start = (0 if collective else trace.NEFF_LANE), at(event.start_us)
            args = {"execution": number, **event.trace_args(), "correlation": event.correlation,
                    "cpu_op": event.cpu_op.name if event.cpu_op else None}  # fmt: skip
            category = "collective" if collective else "neff"
            events.append(
                trace.slice_event(
                    event.name, category, pid, lane, start, event.device_seconds, args
                )
            )
            for engine, busy_us in getattr(event, "engines_us", {}).items():
                # A busy total cannot outlast the execution; rounding in the file may say so.
                busy = min(busy_us, event.duration_us) * 1e-6
                events.append(
                    trace.slice_event(event.name, "engine busy", pid, trace.LANE_TIDS[engine],
                                      start, busy, {"execution": number, "busy_us": busy_us})
                )  # fmt: skip
            if event.cpu_op is not None:  # an arrow from the CPU op to its device work
                # Ids unique per rank, so merge_traces of ranks' files keeps arrows apart.
                flow = {"name": "launch", "cat": "launch", "id": self.rank << 32 | number}
                events += [
                    {**flow, "ph": "s", "pid": base, "tid": trace.HOST_NEFF_LANE,
                     "ts": round(at(event.cpu_op.start_us) * 1e6, 3)},
                    {**flow, "ph": "f", "bp": "e", "pid": pid, "tid": lane,
                     "ts": round(start * 1e6, 3)},
                ]  # fmt: skip
        wall = None if self.base_time_ns is None else self.base_time_ns * 1e-9 + origin_us * 1e-6
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "producer": f"{PRODUCER} (from a torch.profiler trace)",
                "source": self.path,
                "device_time": "estimated by the torchneuron cost model",
                "engine_lanes": "each engine's busy total per execution, not its kernel schedule",
                "rank": self.rank,
                "wall_clock_origin": wall,
            },
        }

    def _lane_metadata(self, base: int, prefix: str) -> list[dict]:
        events = trace.process(
            base, prefix + "Host (torch.profiler)", {trace.HOST_NEFF_LANE: "launching CPU op"}
        )
        cores: dict[int, str] = {}
        for event in self.executions:
            cores.setdefault(event.device, event.core)
        for device, core in sorted(cores.items()):
            events += trace.core_process(base + device + 1, f"{prefix}{core}, estimated", " (busy)")
        if self.collectives:
            pid = base + trace.COLLECTIVES_PID
            events += trace.process(pid, f"{prefix}collectives, estimated", {0: "collectives"})
        return events

    def chrome_trace_text(self) -> str:
        """``chrome_trace()`` as the JSON text of a trace file."""
        return json.dumps(self.chrome_trace(), separators=(",", ":"), allow_nan=False) + "\n"

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write ``chrome_trace()`` as JSON to ``path``; the Perfetto UI and chrome://tracing
        load it."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.chrome_trace_text())
