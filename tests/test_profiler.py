"""torchneuron.profiler: capture of eager and compiled executions, table, Chrome trace."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import torchneuron
import torchneuron.profiler
from torchneuron.compiler.exported import exported_graph
from torchneuron.compiler.pipeline import compile_graph
from torchneuron.neff import NeffError, read_neff, write_neff
from torchneuron.runtime import load_neff
from torchneuron.target.engines import ENGINES
from torchneuron.zoo import ZOO


@pytest.fixture(scope="module")
def gpt_neff() -> bytes:
    entry = ZOO["gpt"]
    graph = exported_graph(torch.export.export(entry.build().eval(), entry.example_inputs()))
    compiled = compile_graph(
        graph.graph_module, name="gpt", weights=graph.weights, output_names=graph.output_names
    )
    return compiled.neff


def _inputs(loaded):
    return [np.zeros(s.shape, s.numpy_dtype) for s in loaded.input_specs]


def test_compiled_executions_are_recorded_with_estimated_device_time(gpt_neff):
    loaded = load_neff(gpt_neff, executor="null")
    with torchneuron.profiler.profile() as prof:
        for _ in range(3):
            loaded.execute(_inputs(loaded))
    assert len(prof.events) == 3
    latency = loaded.schedule.latency_s
    assert latency > 0
    for event in prof.events:
        assert event.name == "gpt" and event.estimated and event.executor == "null"
        assert event.device_seconds == latency
        assert event.hbm_bytes == loaded.schedule.hbm_bytes > 0
    # Executions on one core follow each other on the device timeline.
    starts = [e.device_start_s for e in prof.events]
    assert all(b >= a + latency - 1e-12 for a, b in zip(starts, starts[1:]))
    (row,) = prof.key_averages()
    assert row.calls == 3 and row.device_seconds == pytest.approx(3 * latency)
    table = prof.table()
    assert "gpt" in table and "Device total" in table and "HBM bytes" in table
    assert f"{3 * latency * 1e6:.3f} us" in table


def test_eager_ops_are_recorded():
    x = torch.randn(32, 64).to("neuron")
    w = torch.randn(64, 16).to("neuron")
    with torchneuron.profiler.profile() as prof:
        y = torch.relu(x @ w)
        y.cpu()
    names = {event.name for event in prof.events}
    assert any("mm" in name for name in names), names
    assert any("relu" in name for name in names), names
    assert all(event.estimated and event.device_seconds > 0 for event in prof.events)
    mm = next(e for e in prof.events if "mm" in e.name)
    assert mm.engine == "TensorE" or mm.engine == "DMA"
    assert mm.flops == 2 * 32 * 64 * 16


def test_rows_per_kernel(gpt_neff):
    loaded = load_neff(gpt_neff, executor="null")
    with torchneuron.profiler.profile() as prof:
        loaded.execute(_inputs(loaded))
    rows = prof.key_averages(group_by="kernel")
    assert len(rows) == len(loaded.schedule.kernels)
    assert all(row.name.startswith("gpt/k") for row in rows)
    assert "gpt/k" in prof.table(group_by="kernel")
    with pytest.raises(ValueError, match="group_by"):
        prof.key_averages(group_by="op")


def test_chrome_trace_has_one_lane_per_engine_and_loads_as_json(gpt_neff, tmp_path):
    loaded = load_neff(gpt_neff, executor="null")
    with torchneuron.profiler.profile() as prof:
        loaded.execute(_inputs(loaded))
        loaded.execute(_inputs(loaded))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    names = {}
    slices = []
    for event in events:
        assert event["ph"] in ("X", "M")
        assert isinstance(event["pid"], int) and isinstance(event["name"], str)
        if event["ph"] == "M":
            if event["name"] == "thread_name":
                names[(event["pid"], event["tid"])] = event["args"]["name"]
            continue
        assert isinstance(event["tid"], int)
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
        slices.append(event)
    # Every slice is on a named lane; the core has a lane per engine plus the NEFF lane.
    for event in slices:
        assert (event["pid"], event["tid"]) in names
    core_pid = loaded.core.index + 1
    core_lanes = {name for (pid, _), name in names.items() if pid == core_pid}
    assert core_lanes == {"NEFF", *ENGINES}
    # Slices on one lane never overlap (Perfetto draws each lane as a single track).
    by_lane: dict = {}
    for event in slices:
        by_lane.setdefault((event["pid"], event["tid"]), []).append(event)
    for lane, lane_slices in by_lane.items():
        lane_slices.sort(key=lambda e: e["ts"])
        for a, b in zip(lane_slices, lane_slices[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (names[lane], a, b)
    kernel_slices = [e for e in slices if e["cat"] == "kernel"]
    assert {names[(e["pid"], e["tid"])] for e in kernel_slices} >= {"TensorE", "DMA"}
    neff_slices = [e for e in slices if e["cat"] == "neff"]
    assert len(neff_slices) == 2
    assert neff_slices[0]["dur"] == pytest.approx(loaded.schedule.latency_s * 1e6, abs=1e-3)


def test_capture_stops_when_the_profile_ends(gpt_neff):
    loaded = load_neff(gpt_neff, executor="null")
    with torchneuron.profiler.profile() as prof:
        loaded.execute(_inputs(loaded))
    loaded.execute(_inputs(loaded))
    assert len(prof.events) == 1


def test_null_executor_returns_zeros_without_computing(gpt_neff):
    computed = load_neff(gpt_neff).execute([np.ones((2, 32), np.int64)])[0]
    nulled = load_neff(gpt_neff, executor="null").execute([np.ones((2, 32), np.int64)])[0]
    assert nulled.shape == computed.shape and nulled.dtype == computed.dtype
    assert not nulled.any() and computed.any()


def test_a_neff_without_schedule_has_no_device_time(gpt_neff):
    # The runtime reads the schedule a NEFF carries; it never re-runs the cost model.
    neff = read_neff(gpt_neff)
    neff.extra_files = {}
    bare = read_neff(write_neff(neff))
    loaded = load_neff(bare, executor="null")
    assert loaded.schedule is None
    with torchneuron.profiler.profile() as prof:
        loaded.execute(_inputs(loaded))
    (event,) = prof.events
    assert not event.estimated
    assert event.device_seconds == 0.0 and event.engine == "-" and event.hbm_bytes == 0
    (row,) = prof.key_averages(group_by="kernel")
    assert row.name == "gpt" and not row.estimated
    assert "n/a" in prof.table()
    trace = prof.chrome_trace()["traceEvents"]
    assert not [e for e in trace if e.get("cat") == "kernel"]


def test_an_unreadable_schedule_counts_as_none(gpt_neff):
    neff = read_neff(gpt_neff)
    neff.extra_files = {**neff.extra_files, "sg00/schedule.json": b'{"format": "other"}'}
    with pytest.raises(NeffError, match="sg00/schedule.json: format is 'other'"):
        write_neff(neff)  # no file can hold it: the reader would refuse it
    loaded = load_neff(neff, executor="null")  # built in memory
    assert loaded.schedule is None
