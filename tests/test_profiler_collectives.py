"""torchneuron.profiler: collectives reported by the process group, per-rank traces, merge."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import torchneuron.profiler as profiler
from torchneuron.estimate.collectives import Placement, estimate_collective

MiB = 1 << 20


def _lanes(trace: dict) -> dict:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _processes(trace: dict) -> dict:
    return {
        e["pid"]: e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "process_name"
    }


def _profile_with_collectives(rank: int) -> profiler.profile:
    with profiler.profile() as prof:
        start = time.perf_counter()
        profiler.record_collective("all_reduce", 64 * MiB, (0, 1, 2, 3), rank, start, 1e-3)
        profiler.record_collective("all_reduce", 64 * MiB, (0, 1, 2, 3), rank, start, 1e-3)
        profiler.record_collective(
            "all_gather", 4 * MiB, (0, 4), rank, start + 2e-3, 5e-4, group_name="dp"
        )
    return prof


def test_record_collective_outside_a_profile_records_nothing():
    with profiler.profile() as prof:
        pass
    profiler.record_collective("all_reduce", 1024, (0, 1), 0, time.perf_counter(), 1e-4)
    assert prof.collectives == [] and not profiler._ACTIVE


def test_collectives_carry_the_interconnect_estimate_and_fill_the_table():
    prof = _profile_with_collectives(rank=0)
    assert len(prof.collectives) == 3
    expected = estimate_collective("all_reduce", 64 * MiB, (0, 1, 2, 3), Placement())
    first, second, gather = prof.collectives
    assert first.estimate == expected and first.device_seconds == expected.seconds
    # Collectives of one rank are laid end to end on the estimated timeline.
    assert second.device_start_s == pytest.approx(first.device_start_s + expected.seconds)
    assert [level.name for level in gather.estimate.levels] == ["neuronlink"]
    table = prof.table()
    assert "all_reduce[4 ranks]" in table and "all_gather[2 ranks dp]" in table
    row = next(line for line in table.splitlines() if line.startswith("all_reduce[4 ranks]"))
    assert f"{2 * expected.seconds * 1e6:.3f} us" in row
    assert expected.algorithm in row and str(2 * 64 * MiB) in row and "intra-chip" in row
    assert "3 collectives on rank 0" in table


def test_trace_shows_collectives_on_their_own_lanes_named_by_rank():
    prof = _profile_with_collectives(rank=3)
    trace = prof.chrome_trace()
    assert trace["otherData"]["rank"] == 3
    assert trace["otherData"]["wall_clock_origin"] == pytest.approx(time.time(), abs=60)
    processes, lanes = _processes(trace), _lanes(trace)
    assert processes[3000] == "rank 3: Host (wall clock)"
    assert processes[3999] == "rank 3: collectives, estimated"
    assert lanes[(3000, 1)] == "collectives (host)" and lanes[(3999, 0)] == "collectives"
    slices = [e for e in trace["traceEvents"] if e.get("cat") == "collective"]
    estimated = [e for e in slices if e["pid"] == 3999]
    host = [e for e in slices if e["pid"] == 3000]
    assert len(estimated) == len(host) == 3
    args = estimated[0]["args"]
    assert estimated[0]["name"] == "all_reduce[4 ranks]"
    assert args["algorithm"] == prof.collectives[0].estimate.algorithm
    assert args["estimated_seconds"] == prof.collectives[0].estimate.seconds
    assert args["ranks"] == [0, 1, 2, 3] and args["nbytes"] == 64 * MiB
    assert estimated[0]["dur"] == pytest.approx(args["estimated_seconds"] * 1e6, abs=1e-3)
    assert host[2]["dur"] == pytest.approx(500.0, abs=1e-3)  # 5e-4 s of host time
    assert host[2]["args"]["group"] == "dp"


def test_merged_traces_keep_each_ranks_lanes_and_align_on_the_wall_clock(tmp_path):
    first = _profile_with_collectives(rank=0)
    second = _profile_with_collectives(rank=1)
    paths = [tmp_path / "rank0.json", tmp_path / "rank1.json"]
    first.export_chrome_trace(paths[0])
    second.export_chrome_trace(paths[1])
    # Pretend the second process started its profile 0.25 s later on the wall clock.
    data = json.loads(paths[1].read_text())
    data["otherData"]["wall_clock_origin"] = data_origin = first._wall_origin + 0.25
    paths[1].write_text(json.dumps(data))
    out = tmp_path / "all.json"
    merged = profiler.merge_traces(paths, out)
    assert json.loads(out.read_text()) == merged
    processes = _processes(merged)
    assert processes[999] == "rank 0: collectives, estimated"
    assert processes[1999] == "rank 1: collectives, estimated"
    by_pid = {}
    for event in merged["traceEvents"]:
        if event.get("cat") == "collective":
            by_pid.setdefault(event["pid"], []).append(event)
    assert len(by_pid[999]) == len(by_pid[1999]) == 3
    original = next(
        e for e in data["traceEvents"] if e.get("cat") == "collective" and e["pid"] == 1999
    )
    shifted = by_pid[1999][0]
    shift_us = (data_origin - first._wall_origin) * 1e6
    assert shifted["ts"] == pytest.approx(original["ts"] + shift_us, abs=1e-2)
    assert merged["otherData"]["wall_clock_origin"] == first._wall_origin
    assert [s["rank"] for s in merged["otherData"]["merged"]] == [0, 1]


def test_merging_traces_of_the_same_rank_gives_them_distinct_pids(tmp_path):
    paths = []
    for index in range(2):
        path = tmp_path / f"t{index}.json"
        _profile_with_collectives(rank=0).export_chrome_trace(path)
        paths.append(path)
    merged = profiler.merge_traces(paths)
    pids = {e["pid"] for e in merged["traceEvents"] if e.get("cat") == "collective"}
    assert len(pids) == 4  # host and estimated lanes of two traces


def test_merge_command_line(tmp_path):
    paths = []
    for rank in range(2):
        path = tmp_path / f"rank{rank}.json"
        _profile_with_collectives(rank=rank).export_chrome_trace(path)
        paths.append(str(path))
    out = tmp_path / "all.json"
    done = subprocess.run(
        [sys.executable, "-m", "torchneuron.profiler", "merge", *paths, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "2 traces" in done.stdout
    assert {0, 1} <= {e["pid"] // 1000 for e in json.loads(out.read_text())["traceEvents"]}
