"""torchneuron.profiler opens a torch.profiler trace: rows, engine lanes, CLI, hostile files.

One real ``torch.profiler`` session (an eager matmul twice, a ``torch.compile`` graph and a
collective reported the way the process group reports it) is exported with
``export_chrome_trace``; ``open_torch_trace`` must find exactly its neuron device events,
with the durations the file holds, and name the CPU op that launched each.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torchneuron.profiler as profiler
from torchneuron.estimate.collectives import Placement, estimate_collective
from torchneuron.profiler import TorchTraceError, open_torch_trace
from torchneuron.profiler.__main__ import main
from torchneuron.target.engines import ENGINES

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
COLLECTIVE_BYTES = 1 << 20
COLLECTIVE_RANKS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """The Chrome trace of one torch.profiler session over eager, compiled and collective work."""
    folder = tmp_path_factory.mktemp("torch_trace")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHNEURON_NO_FALLBACK", "1")
        patch.setenv("TORCHNEURON_CACHE_DIR", str(folder / "cache"))
        torch._dynamo.reset()
        try:
            x = torch.randn(64, 64, device="neuron")
            w = torch.randn(64, 64, device="neuron")
            f = torch.compile(lambda a, b: torch.relu(a @ b) + 1, backend="neuron")
            f(x, w), (x @ w).cpu()  # compiled and loaded before the profile
            with profile(activities=ACTIVITIES) as prof:
                x @ w
                x @ w
                f(x, w)
                profiler.record_collective(
                    "all_reduce", COLLECTIVE_BYTES, COLLECTIVE_RANKS, 0, time.perf_counter(), 1e-4
                )
                torch.neuron.synchronize()
        finally:
            torch._dynamo.reset()
    path = folder / "trace.json"
    prof.export_chrome_trace(str(path))
    return path


def _raw_device_events(path: Path) -> list[dict]:
    """The neuron device events, read from the file without the code under test."""
    events = json.loads(path.read_text())["traceEvents"]
    return [e for e in events if isinstance(e.get("args"), dict) and "neuron" in e["args"]]


def _graph_name(names) -> str:
    (name,) = [n for n in names if n.startswith("graph") and n.endswith("_forward")]
    return name


def test_rows_are_the_device_events_of_the_trace(recorded):
    raw = _raw_device_events(recorded)
    assert {e["cat"] for e in raw} == {"kernel"}  # how the plugin's events reach the file
    opened = open_torch_trace(recorded)
    rows = {row.name: row for row in opened.key_averages()}
    graph = _graph_name(rows)
    assert set(rows) == {"aten.mm", graph}
    assert rows["aten.mm"].calls == 2 and rows[graph].calls == 1
    for name, row in rows.items():
        mine = [e for e in raw if e["name"] == name]
        assert row.device_seconds * 1e6 == pytest.approx(sum(e["dur"] for e in mine))
        assert row.device_seconds > 0 and row.estimated
        assert row.hbm_bytes == sum(e["args"]["neuron"]["hbm_bytes"] for e in mine) > 0
        assert row.flops == sum(e["args"]["neuron"]["flops"] for e in mine)
        assert row.engine == mine[0]["args"]["neuron"]["engine"] and row.engine in ENGINES
    assert rows["aten.mm"].flops == 2 * (2 * 64 * 64 * 64)
    # Each execution keeps the duration the file gave it and the CPU op that launched it.
    by_start = {(e["name"], e["ts"]): e["dur"] for e in raw}
    for event in opened.executions:
        assert event.duration_us == by_start[(event.name, event.start_us)] > 0
        assert set(event.engines_us) <= set(ENGINES) and event.engines_us
    assert rows["aten.mm"].launched_by == "aten::mm"
    assert rows[graph].launched_by.startswith("Torch-Compiled Region")
    mm = next(e for e in opened.executions if e.name == "aten.mm")
    assert mm.correlation == mm.cpu_op.external_id


def test_collectives_are_their_own_section(recorded):
    opened = open_torch_trace(recorded)
    (collective,) = opened.collectives
    expected = estimate_collective("all_reduce", COLLECTIVE_BYTES, COLLECTIVE_RANKS, Placement())
    assert collective.name == "collective:all_reduce"
    assert collective.ranks == COLLECTIVE_RANKS and collective.nbytes == COLLECTIVE_BYTES
    assert collective.algorithm == expected.algorithm
    assert collective.duration_us == pytest.approx(expected.seconds * 1e6, abs=1e-3)
    table = opened.table()
    executions, collectives = table.split("\n\n")
    assert "aten.mm" in executions and "Launched by" in executions and "aten::mm" in executions
    assert "3 executions" in executions and "collective:" not in executions
    row = next(line for line in collectives.splitlines() if line.startswith("collective:"))
    assert expected.algorithm in row and str(COLLECTIVE_BYTES) in row
    assert "1 collectives" in collectives


def _lane_names(chrome: dict) -> dict:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in chrome["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _start(event: dict) -> float:
    return event["ts"]


def test_lanes_draw_each_execution_and_its_engines_busy_time(recorded, tmp_path):
    opened = open_torch_trace(recorded)
    chrome = opened.chrome_trace()
    lanes = _lane_names(chrome)
    core_pid = opened.executions[0].device + 1
    assert lanes[(core_pid, 0)] == "NEFF"
    assert {lanes[(core_pid, tid)] for tid in range(1, 6)} == {f"{e} (busy)" for e in ENGINES}
    slices = [e for e in chrome["traceEvents"] if e["ph"] == "X"]
    neffs = [e for e in slices if e["cat"] == "neff"]
    raw = [e for e in _raw_device_events(recorded) if not e["name"].startswith("collective:")]
    assert sorted(e["name"] for e in neffs) == sorted(e["name"] for e in raw)
    for neff, original in zip(sorted(neffs, key=_start), sorted(raw, key=_start)):
        assert neff["dur"] == pytest.approx(original["dur"], abs=1e-3)
    for neff in neffs:
        number = neff["args"]["execution"]
        event = opened.executions[number]
        assert neff["dur"] == pytest.approx(event.duration_us, abs=1e-3)
        assert neff["args"]["cpu_op"] == event.cpu_op.name
        busy = [e for e in slices if e["cat"] == "engine busy" and e["args"]["execution"] == number]
        assert {lanes[(e["pid"], e["tid"])] for e in busy} == {
            f"{engine} (busy)" for engine in event.engines_us
        }
        for lane in busy:
            assert lane["ts"] == neff["ts"] and lane["dur"] <= neff["dur"]
    collectives = [e for e in slices if e["cat"] == "collective"]
    assert [e["name"] for e in collectives] == ["collective:all_reduce"]
    # An arrow from each launching CPU op (drawn on the host lane) to its device work.
    launched = sum(e.cpu_op is not None for e in [*opened.executions, *opened.collectives])
    assert launched >= 3
    assert sum(e["ph"] == "s" for e in chrome["traceEvents"]) == launched
    assert sum(e["ph"] == "f" for e in chrome["traceEvents"]) == launched
    host_ops = {e["name"] for e in slices if e["cat"] == "cpu_op"}
    assert "aten::mm" in host_ops
    assert chrome["otherData"]["wall_clock_origin"] == pytest.approx(time.time(), abs=3600)
    out = tmp_path / "lanes.json"
    opened.export_chrome_trace(out)
    assert json.loads(out.read_text()) == json.loads(json.dumps(chrome))


def test_a_gzipped_trace_opens_like_the_plain_one(recorded, tmp_path):
    packed = tmp_path / "trace.json.gz"
    packed.write_bytes(gzip.compress(recorded.read_bytes()))
    plain, unzipped = open_torch_trace(recorded), open_torch_trace(packed)
    assert unzipped.executions == plain.executions and unzipped.table() == plain.table()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchneuron.profiler", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_command_line_prints_the_table_and_writes_the_lanes(recorded, tmp_path):
    table = _cli("table", str(recorded))
    assert table.returncode == 0, table.stderr
    assert table.stdout.strip() == open_torch_trace(recorded).table(row_limit=None)
    out = tmp_path / "out" / "lanes.json"
    lanes = _cli("lanes", str(recorded), "-o", str(out))
    assert lanes.returncode == 0, lanes.stderr
    assert "3 executions, 1 collectives" in lanes.stdout
    written = json.loads(out.read_text())
    assert written["otherData"]["source"] == str(recorded)
    assert {e["name"] for e in written["traceEvents"] if e.get("cat") == "neff"} >= {"aten.mm"}


def test_command_line_says_what_is_wrong_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert main(["table", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: not valid JSON") and err.count("\n") == 1


# -- hostile files -------------------------------------------------------------------


def _without_device_events(recorded: Path) -> bytes:
    document = json.loads(recorded.read_text())
    document["traceEvents"] = [
        e for e in document["traceEvents"] if "neuron" not in e.get("args", {})
    ]
    return json.dumps(document).encode()


def _with_first_device_event(recorded: Path, change) -> bytes:
    document = json.loads(recorded.read_text())
    event = next(e for e in document["traceEvents"] if "neuron" in e.get("args", {}))
    change(event)
    return json.dumps(document).encode()


HOSTILE = {
    "not JSON": (lambda r: b"hello", "not valid JSON"),
    "not UTF-8": (lambda r: b'{"traceEvents": ["\xff"]}', "not UTF-8"),
    "top level array": (lambda r: b"[1, 2]", "the top level is an array, not an object"),
    "top level string": (lambda r: b'"trace"', "the top level is a string"),
    **{
        f"truncated at {percent}%": (
            lambda r, percent=percent: r.read_bytes()[: len(r.read_bytes()) * percent // 100],
            "the file ends early",
        )
        for percent in (10, 37, 50, 83, 99)
    },
    "empty": (lambda r: b"", "the file ends early"),
    "no traceEvents": (lambda r: b'{"schemaVersion": 1}', "no 'traceEvents'"),
    "traceEvents not a list": (lambda r: b'{"traceEvents": {}}', "'traceEvents' is an object"),
    "no neuron events": (_without_device_events, "no neuron device events"),
    "nested too deeply": (lambda r: b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    "neuron not an object": (
        lambda r: _with_first_device_event(r, lambda e: e["args"].update(neuron=[1])),
        "args.neuron is an array",
    ),
    "negative duration": (
        lambda r: _with_first_device_event(r, lambda e: e.update(dur=-1)),
        "dur is -1, not a finite number >= 0",
    ),
    "unknown engine": (
        lambda r: _with_first_device_event(
            r, lambda e: e["args"]["neuron"].update(engines_us={"Warp": 1.0})
        ),
        "engines_us names 'Warp'",
    ),
    "huge pid": (
        lambda r: _with_first_device_event(r, lambda e: e.update(pid=10**9)),
        "not a device index",
    ),
    "bad correlation": (
        lambda r: _with_first_device_event(
            r, lambda e: e["args"].update({"External id": "x" * 500})
        ),
        "not an integer id",
    ),
    "huge int dur": (
        lambda r: _with_first_device_event(r, lambda e: e.update(dur=10**400)),
        "dur is 1000",
    ),
    "huge int engine time": (
        lambda r: _with_first_device_event(
            r, lambda e: e["args"]["neuron"].update(engines_us={"TensorE": 10**400})
        ),
        "engines_us['TensorE'] is 1000",
    ),
    "ts of 1e308": (
        lambda r: _with_first_device_event(r, lambda e: e.update(ts=1e308)),
        "ts is 1e+308, not a time",
    ),
    "5000-digit integer literal": (
        lambda r: b'{"traceEvents": [' + b"7" * 5000 + b"]}",
        "not a trace: Exceeds the limit",
    ),
    "lone surrogate in a name": (
        lambda r: _with_first_device_event(r, lambda e: e.update(name="mm\ud800")),
        "not UTF-8 text",
    ),
    "damaged gzip": (lambda r: gzip.compress(r.read_bytes())[:40], "damaged gzip"),
    "a torchneuron trace": (
        lambda r: b'{"traceEvents": [], "otherData": {"producer": "torchneuron.profiler"}}',
        "torchneuron.profiler trace already",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_get_one_clear_error_naming_the_file(case, recorded, tmp_path):
    make, expected = HOSTILE[case]
    path = tmp_path / "hostile.json"
    path.write_bytes(make(recorded))
    with pytest.raises(TorchTraceError) as caught:
        open_torch_trace(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and expected in message, message
    assert "\n" not in message and len(message) < 400  # a hostile value is cut short


def test_size_is_bounded_before_and_after_unzipping(recorded, tmp_path):
    with pytest.raises(TorchTraceError, match="-byte limit of a trace file"):
        open_torch_trace(recorded, max_bytes=1000)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 KiB on disk, 4 MiB unzipped
    with pytest.raises(TorchTraceError, match="limit of a trace file once unzipped"):
        open_torch_trace(bomb, max_bytes=1 << 20)


def test_missing_files_and_folders_are_refused(tmp_path):
    with pytest.raises(TorchTraceError, match="cannot read"):
        open_torch_trace(tmp_path / "absent.json")
    with pytest.raises(TorchTraceError, match="not a regular file"):
        open_torch_trace(tmp_path)


def test_huge_base_time_is_ignored_and_lanes_are_strict_json(recorded, tmp_path):
    document = json.loads(recorded.read_text())
    document["baseTimeNanoseconds"] = 10**400
    path = tmp_path / "huge_base.json"
    path.write_text(json.dumps(document))
    opened = open_torch_trace(path)
    assert opened.base_time_ns is None
    assert opened.chrome_trace()["otherData"]["wall_clock_origin"] is None
    assert "Infinity" not in opened.chrome_trace_text()


def test_a_cpu_op_named_with_a_lone_surrogate_prints(recorded, tmp_path):
    document = json.loads(recorded.read_text())
    for event in document["traceEvents"]:
        if event.get("cat") == "cpu_op":
            event["name"] += "\ud800"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(document))  # ASCII escapes: the file itself is valid UTF-8
    table = _cli("table", str(path))
    assert table.returncode == 0, table.stderr
    assert "\ufffd" in table.stdout


def test_merged_ranks_keep_their_launch_arrows_apart(recorded, tmp_path):
    lanes = []
    for rank in (0, 1):
        document = json.loads(recorded.read_text())
        document["distributedInfo"] = {"rank": rank}
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(document))
        lanes.append(tmp_path / f"lanes{rank}.json")
        open_torch_trace(path).export_chrome_trace(lanes[-1])
    merged = profiler.merge_traces(lanes)["traceEvents"]
    flows = [e for e in merged if e.get("cat") == "launch"]
    ids_by_rank = [{e["id"] for e in flows if e["pid"] // 1000 == rank} for rank in (0, 1)]
    assert ids_by_rank[0] and ids_by_rank[1] and not ids_by_rank[0] & ids_by_rank[1]
    for flow_id in ids_by_rank[0] | ids_by_rank[1]:  # each arrow joins one start, one end
        assert sorted(e["ph"] for e in flows if e["id"] == flow_id) == ["f", "s"]


def test_merge_and_row_limit_errors_are_one_line(recorded, tmp_path, capsys):
    missing = tmp_path / "absent.json"
    assert main(["merge", str(missing), "-o", str(tmp_path / "all.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}: cannot merge") and err.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["merge", str(bad), "-o", str(tmp_path / "all.json")]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: not a JSON trace" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as refused:
        main(["table", str(recorded), "--row-limit", "-1"])
    assert refused.value.code == 2 and "number of rows >= 0" in capsys.readouterr().err
