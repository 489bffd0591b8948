"""Estimates in the compiler: schedule in the NEFF, HBM capacity errors, the CLI commands."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from torchneuron import cli
from torchneuron.compiler.exported import exported_graph
from torchneuron.compiler.pipeline import HbmCapacityError, compile_graph
from torchneuron.estimate.scheduler import SCHEDULE_PATH, Schedule
from torchneuron.neff import read_neff, write_neff
from torchneuron.runtime import NeuronOutOfMemoryError, load_neff, reset_runtime
from torchneuron.target.topology import ENV_VARS, LNC_VAR, TARGET_VAR
from torchneuron.zoo import ZOO


@pytest.fixture(autouse=True)
def default_topology(monkeypatch):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    reset_runtime()
    yield
    reset_runtime()


@pytest.fixture(scope="module")
def mlp():
    entry = ZOO["mlp"]
    model = entry.build().eval()
    (x,) = entry.example_inputs()
    return model, x, torch.export.export(model, (x,))


def _compile(exported, **options):
    graph = exported_graph(exported)
    return compile_graph(
        graph.graph_module,
        name="mlp",
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        use_cache=False,
        **options,
    )


def test_the_neff_carries_schedule_estimates_and_memory_plan(mlp):
    model, x, exported = mlp
    compiled = _compile(exported)
    assert compiled.schedule is not None and compiled.estimate_seconds > 0
    assert "neuron.kernel" in compiled.artifacts["optimized"]
    assert 'neuron.engine = "TensorE"' in compiled.artifacts["optimized"]
    neff = read_neff(compiled.neff)
    schedule = Schedule.from_json(neff.extra_files[SCHEDULE_PATH])
    assert [k.engine for k in schedule.kernels].count("TensorE") == 3  # three Linear layers
    estimates = neff.manifest["estimates"]
    assert estimates["latency_us"] == pytest.approx(schedule.latency_s * 1e6)
    assert estimates["weights_bytes"] == sum(p.numel() * 4 for p in model.parameters())
    assert set(estimates["engine_busy_percent"]) == {
        "TensorE",
        "VectorE",
        "ScalarE",
        "GpSimd",
        "DMA",
    }
    plan = neff.definition["memory_plan"]
    assert plan["peak_hbm_bytes"] == estimates["peak_hbm_bytes"]
    assert plan["program_bytes"] == len(neff.program)
    assert plan["peak_hbm_bytes"] == sum(
        plan[k]
        for k in (
            "program_bytes",
            "weights_bytes",
            "inputs_bytes",
            "outputs_bytes",
            "temporaries_bytes",
        )
    )
    # The serialized program carries no annotations, and still runs.
    assert b"neuron.kernel" not in neff.program and b"neuron.engine" not in neff.program
    out = load_neff(neff).execute([x.numpy()])[0]
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_annotation_passes_show_in_the_ir_dump(mlp):
    _, _, exported = mlp
    stream = io.StringIO()
    _compile(exported, stop_after="optimized", print_ir_after_all=True, ir_stream=stream)
    dump = stream.getvalue()
    assert "IR Dump After fuse-kernels" in dump and "IR Dump After assign-engines" in dump
    assert "neuron.kernel = 0 : i64" in dump


def test_a_program_that_cannot_fit_is_refused_with_needed_and_available_bytes():
    def huge(x):
        return x.expand(1 << 21, 4096) * 2.0  # 2^33 floats: 32 GiB of output

    from torch.fx.experimental.proxy_tensor import make_fx

    example = torch.ones(1, 4096)
    gm = make_fx(huge, tracing_mode="fake")(example)
    with pytest.raises(HbmCapacityError) as info:
        compile_graph(gm, [example], name="huge", use_cache=False)
    message = str(info.value)
    assert "does not fit on one trn2 logical NeuronCore (LNC=2)" in message
    assert "needs 32.00 GiB" in message and "24.00 GiB" in message
    assert "Largest live tensors: output output0 float32[2097152, 4096] (32.00 GiB)" in message
    # Trainium3's 36 GiB per logical core holds it.
    compiled = compile_graph(gm, [example], name="huge", target="trn3", use_cache=False)
    assert compiled.neff is not None


def test_execution_reserves_the_planned_temporaries_before_running(mlp):
    _, x, exported = mlp
    neff = read_neff(_compile(exported).neff)
    neff.definition["memory_plan"]["temporaries_bytes"] = 64 << 30
    loaded = load_neff(read_neff(write_neff(neff)), executor="null")
    assert loaded.temporaries_bytes == 64 << 30
    resident = loaded.core.hbm.allocated
    with pytest.raises(NeuronOutOfMemoryError, match="temporaries"):
        loaded.execute([x.numpy()])
    assert loaded.core.hbm.allocated == resident  # nothing leaked


@pytest.fixture(scope="module")
def mlp_files(mlp, tmp_path_factory):
    _, _, exported = mlp
    folder = tmp_path_factory.mktemp("estimate")
    program = folder / "mlp.pt2"
    torch.export.save(exported, str(program))
    neff = folder / "mlp.neff"
    assert cli.main(["compile", str(program), "-o", str(neff), "--target", "trn3"]) == 0
    return program, neff


def test_estimate_command_compares_targets_side_by_side(mlp_files, capsys):
    program, _ = mlp_files
    assert cli.main(["estimate", str(program), "--target", "trn2", "--target", "trn3"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["trn2", "trn3"]
    for label in (
        "estimated latency",
        "MFU",
        "TensorE busy",
        "DMA busy",
        "HBM traffic",
        "peak HBM",
        "weights",
        "fits",
    ):
        assert label in out
    assert (
        cli.main(["estimate", str(program), "--target", "trn2", "--target", "trn3", "--json"]) == 0
    )
    figures = json.loads(capsys.readouterr().out)["targets"]
    assert figures["trn2"]["hbm_capacity_bytes"] == 24 << 30
    assert figures["trn3"]["hbm_capacity_bytes"] == 36 << 30
    assert figures["trn2"]["fits"] and figures["trn3"]["fits"]


def test_inspect_shows_estimates_and_schedule(mlp_files, capsys):
    _, neff = mlp_files
    assert cli.main(["inspect", str(neff)]) == 0
    out = capsys.readouterr().out
    for label in (
        "estimated latency",
        "engine busy",
        "HBM traffic",
        "peak HBM",
        "MFU",
        "weights size",
        "memory plan (sg00/def.json)",
        "schedule (sg00/schedule.json)",
    ):
        assert label in out, label
    assert "k0.dot_general" in out and "TensorE" in out
    assert cli.main(["inspect", str(neff), "--kernels", "1"]) == 0
    assert "more kernels" in capsys.readouterr().out


def test_profile_command_writes_a_trace(mlp_files, tmp_path, capsys, monkeypatch):
    _, neff = mlp_files
    # The NEFF is for trn3: the command emulates the target the NEFF was built for.
    monkeypatch.setenv(TARGET_VAR, "trn3")
    monkeypatch.setenv(LNC_VAR, "2")
    trace = tmp_path / "trace.json"
    assert cli.main(["profile", str(neff), "-o", str(trace), "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    assert "mlp/k0.dot_general" in out and "2 executions" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" and e.get("cat") == "neff" for e in events) == 2
    assert cli.main(["profile", str(neff), "--iterations", "0"]) == 2


def test_a_pipeline_that_runs_fuse_kernels_itself_keeps_its_grouping(mlp):
    from torchneuron.passes import DEFAULT_PIPELINE

    _, _, exported = mlp
    fused = _compile(exported, stop_after="optimized").schedule
    unfused = _compile(
        exported, stop_after="optimized", pipeline=f"{DEFAULT_PIPELINE},fuse-kernels{{fuse=false}}"
    ).schedule
    assert len(fused.kernels) == 3  # one per Linear, activations fused in
    assert len(unfused.kernels) > 3 * len(fused.kernels)
    assert all(len(k.ops) == 1 for k in unfused.kernels)
    assert unfused.hbm_bytes > fused.hbm_bytes
