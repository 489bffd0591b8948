"""The Chrome trace layout every profile writes, and ``merge_traces`` over per-rank traces.

A trace's processes are one per rank's host, one per core, and one for the rank's
estimated collectives; pids start at rank * 1000 so traces of distinct ranks merge
without clashing. Writer (``profile.chrome_trace``) and merger share these constants.
"""

from __future__ import annotations

import json
import os

from torchneuron.target.engines import ENGINES

# Chrome trace thread ids of a core's lanes: the executions, then one per engine.
NEFF_LANE = 0
LANE_TIDS = {engine: i + 1 for i, engine in enumerate(ENGINES)}
# Pids of rank r's trace: host r*1000, core c r*1000+1+c, estimated collectives r*1000+999.
RANK_PID_STRIDE = 1000
COLLECTIVES_PID = RANK_PID_STRIDE - 1
HOST_NEFF_LANE, HOST_COLLECTIVES_LANE = 0, 1


def merge_traces(
    paths: list[str | os.PathLike[str]], out_path: str | os.PathLike[str] | None = None
) -> dict:
    """One Chrome trace of the per-rank traces at ``paths``, aligned on the wall clock
    (each trace's ``otherData.wall_clock_origin``), written to ``out_path`` if given.

    Traces of distinct ranks keep their pids (they start at rank * 1000); traces that
    share a rank are moved to distinct pids."""
    traces = []
    for path in paths:
        with open(path, encoding="utf-8") as file:
            try:
                traces.append(json.load(file))
            except ValueError as error:  # JSONDecodeError, or not UTF-8 text
                raise ValueError(f"{os.fspath(path)}: not a JSON trace ({error})") from None
    if not traces:
        raise ValueError("merge_traces needs at least one trace")
    origins = [t.get("otherData", {}).get("wall_clock_origin") for t in traces]
    known = [o for o in origins if o is not None]
    common = min(known) if known else 0.0
    ranks = [t.get("otherData", {}).get("rank", i) for i, t in enumerate(traces)]
    distinct = len(set(ranks)) == len(ranks)
    merged: list[dict] = []
    sources = []
    for index, (trace, origin, rank) in enumerate(zip(traces, origins, ranks)):
        shift_us = ((origin - common) if origin is not None else 0.0) * 1e6
        pid_offset = 0 if distinct else index * RANK_PID_STRIDE * 1000
        for event in trace.get("traceEvents", []):
            event = dict(event, pid=event["pid"] + pid_offset)
            if "ts" in event:
                event["ts"] = round(event["ts"] + shift_us, 3)
            merged.append(event)
        sources.append({"path": os.fspath(paths[index]), "rank": rank, "wall_clock_origin": origin})
    result = {
        "traceEvents": merged,
        "displayTimeUnit": "ns",
        "otherData": {
            "producer": "torchneuron.profiler (merged)",
            "wall_clock_origin": common,
            "merged": sources,
        },
    }
    if out_path is not None:
        with open(out_path, "w", encoding="utf-8") as file:
            file.write(json.dumps(result, separators=(",", ":")) + "\n")
    return result


def metadata(name: str, pid: int, tid: int | None, args: dict) -> dict:
    event = {"name": name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def process(pid: int, name: str, lanes: dict[int, str]) -> list[dict]:
    """Metadata naming process ``pid`` (sorted by its pid) and its ``{tid: name}`` lanes."""
    events = [
        metadata("process_name", pid, None, {"name": name}),
        metadata("process_sort_index", pid, None, {"sort_index": pid}),
    ]
    return events + [metadata("thread_name", pid, tid, {"name": n}) for tid, n in lanes.items()]


def core_process(pid: int, name: str, engine_suffix: str = "") -> list[dict]:
    """Metadata of a core's process: its NEFF lane, then one lane per engine, in order."""
    events = process(pid, name, {NEFF_LANE: "NEFF"})
    events.append(metadata("thread_sort_index", pid, NEFF_LANE, {"sort_index": 0}))
    for engine, tid in LANE_TIDS.items():
        events.append(metadata("thread_name", pid, tid, {"name": engine + engine_suffix}))
        events.append(metadata("thread_sort_index", pid, tid, {"sort_index": tid}))
    return events


def slice_event(
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
