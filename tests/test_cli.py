"""``neuronc`` in real processes: compile, emit, dump, passes, inspect, run, errors.

The round trip runs the installed console script; the other command lines run in
processes forked from one runner that imported the CLI once (``tests/cli/session.py``),
which saves an interpreter start per command.
"""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.cli.session import NeuroncSession
from torchneuron.compiler.stages import TABLE
from torchneuron.zoo import ZOO

ENV = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
# Warnings (torch's own deprecations) are not errors: the runner's commands show none.
RUNNER_ENV = {**ENV, "PYTHONWARNINGS": "ignore"}


def _neuronc() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "neuronc"
    if script.exists():
        return [str(script)]
    found = shutil.which("neuronc")
    assert found, "the neuronc console script is not installed"
    return [found]


def console_script(*args):
    """``neuronc`` run as the installed console script, in a new interpreter."""
    result = subprocess.run(
        _neuronc() + [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **ENV},
    )
    if result.returncode != 0:
        raise AssertionError(f"neuronc {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


_session: NeuroncSession | None = None


@pytest.fixture(scope="module", autouse=True)
def _runner():
    global _session
    _session = NeuroncSession(RUNNER_ENV)
    yield
    _session.close()
    _session = None


def neuronc(*args, check=True, env=None):
    """``neuronc`` in a process of its own, forked from the module's runner."""
    return _session.run(*args, check=check, env=env)


@pytest.fixture(scope="module")
def mlp_program(tmp_path_factory):
    entry = ZOO["mlp"]
    model = entry.build().eval()
    (x,) = entry.example_inputs()
    path = tmp_path_factory.mktemp("programs") / "mlp.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(path))
    return path, model, x


def test_compile_inspect_run_round_trip(mlp_program, tmp_path):
    program, model, x = mlp_program
    neff = tmp_path / "mlp.neff"
    console_script("compile", program, "-o", neff, "--target", "trn2")
    assert neff.stat().st_size > 1024

    shown = console_script("inspect", neff).stdout
    assert "fc1.weight" in shown or "p_fc1_weight" in shown
    assert "trn2" in shown

    np.save(tmp_path / "x.npy", x.numpy())
    out_dir = tmp_path / "out"
    console_script("run", neff, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", out_dir)
    result = np.load(out_dir / "output0.npy")
    np.testing.assert_allclose(result, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_compile_twice_gives_identical_bytes(mlp_program, tmp_path):
    program, _, _ = mlp_program
    neuronc("compile", program, "-o", tmp_path / "a.neff")
    neuronc("compile", program, "-o", tmp_path / "b.neff")
    assert (tmp_path / "a.neff").read_bytes() == (tmp_path / "b.neff").read_bytes()


@pytest.mark.parametrize(
    "stage,marker",
    [
        ("fx", "torch.ops.aten"),
        ("torch", "torch.aten."),
        ("stablehlo", "stablehlo.dot_general"),
        ("optimized", "stablehlo.dot_general"),
    ],
)
def test_emit_prints_each_stage(mlp_program, stage, marker):
    program, _, _ = mlp_program
    assert marker in neuronc("compile", program, "--emit", stage).stdout


def test_dump_dir_passes_and_ir_printing(mlp_program, tmp_path):
    program, _, _ = mlp_program
    dump = tmp_path / "dump"
    result = neuronc(
        "compile",
        program,
        "-o",
        tmp_path / "m.neff",
        "--dump-dir",
        dump,
        "--passes",
        "canonicalize,fold-constants,cse",
        "--print-ir-after-all",
    )
    names = {
        "fx": "mlp.fx.txt",
        "torch": "mlp.torch.mlir",
        "stablehlo": "mlp.stablehlo.mlir",
        "optimized": "mlp.optimized.mlir",
        "neff": "mlp.neff",
    }
    assert {stage.name: stage.file_name("mlp") for stage in TABLE} == names
    assert sorted(p.name for p in dump.iterdir() if not p.name.startswith("repro")) == sorted(
        names.values()
    )
    assert (dump / "mlp.neff").read_bytes() == (tmp_path / "m.neff").read_bytes()
    for name in ("canonicalize", "fold-constants", "cse"):
        assert f"IR Dump After {name}" in result.stderr


def test_run_rejects_wrong_inputs(mlp_program, tmp_path):
    program, _, x = mlp_program
    neff = tmp_path / "m.neff"
    neuronc("compile", program, "-o", neff)
    missing = neuronc("run", neff, check=False)
    assert missing.returncode == 2 and "missing input(s): x" in missing.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((3, 3), np.float32))
    wrong = neuronc("run", neff, "--input", f"x={tmp_path / 'wrong.npy'}", check=False)
    assert wrong.returncode == 2 and "--input x=" in wrong.stderr and "shape [3, 3]" in wrong.stderr
    positional = neuronc("run", neff, "--input", tmp_path / "wrong.npy", check=False)
    assert positional.returncode == 2 and "--input x=" in positional.stderr


# -- re-entering the stage table (--from) ---------------------------------------------


@pytest.fixture(scope="module")
def affine_program(tmp_path_factory):
    class Affine(torch.nn.Module):
        def forward(self, x):
            return x * 3.0 + 1.0

    folder = tmp_path_factory.mktemp("affine")
    path = folder / "affine.pt2"
    torch.export.save(torch.export.export(Affine(), (torch.ones(4),)), str(path))
    np.save(folder / "x.npy", np.arange(4, dtype=np.float32))
    return path, folder / "x.npy"


def test_an_edited_stablehlo_dump_compiles_onward_and_runs_the_edit(affine_program, tmp_path):
    program, x = affine_program
    dump = tmp_path / "dump"
    neuronc("compile", program, "-o", tmp_path / "a.neff", "--dump-dir", dump)
    text = (dump / "affine.stablehlo.mlir").read_text()
    assert "dense<3.000000e+00>" in text
    edited = tmp_path / "affine.stablehlo.mlir"
    edited.write_text(text.replace("dense<3.000000e+00>", "dense<5.000000e+00>"))
    neuronc("compile", "--from", "stablehlo", edited, "-o", tmp_path / "e.neff")
    assert "e.neff" not in {p.name for p in dump.iterdir()}
    neuronc("run", tmp_path / "e.neff", "--input", f"x={x}", "--output-dir", tmp_path / "out")
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_array_equal(result, np.arange(4, dtype=np.float32) * 5.0 + 1.0)


@pytest.mark.parametrize("stage", ["torch", "stablehlo", "optimized"])
def test_a_dumped_artifact_compiles_back_to_the_same_program(mlp_program, tmp_path, stage):
    program, model, x = mlp_program
    dump = tmp_path / "dump"
    neuronc("compile", program, "-o", tmp_path / "m.neff", "--dump-dir", dump)
    artifact = dump / f"mlp.{stage}.mlir"
    again = tmp_path / "again.neff"
    neuronc("compile", "--from", stage, artifact, "-o", again, "--weights", dump / "mlp.neff")
    shown = neuronc("inspect", again).stdout
    assert "NEFF 'mlp'" in shown and "p_fc1_weight" in shown and "x: float32" in shown
    np.save(tmp_path / "x.npy", x.numpy())
    neuronc("run", again, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_allclose(result, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_torch_artifact_without_weights_names_its_arguments_by_position(affine_program, tmp_path):
    program, x = affine_program
    dump = tmp_path / "dump"
    neuronc("compile", program, "-o", tmp_path / "a.neff", "--dump-dir", dump)
    neuronc("compile", "--from", "torch", dump / "affine.torch.mlir", "-o", tmp_path / "t.neff")
    assert "input0: float32[4]" in neuronc("inspect", tmp_path / "t.neff").stdout
    neuronc("run", tmp_path / "t.neff", "--input", x, "--output-dir", tmp_path / "out")
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_array_equal(result, np.arange(4, dtype=np.float32) * 3.0 + 1.0)


# -- every documented failure is one line, never a traceback ----------------------------


@pytest.fixture(scope="module")
def failures(tmp_path_factory, mlp_program, affine_program):
    """name -> (neuronc arguments, extra environment) of each documented failure."""
    folder = tmp_path_factory.mktemp("failures")
    program, _, _ = mlp_program
    affine, _ = affine_program
    (folder / "bogus.pt2").write_bytes(b"not a program")
    (folder / "broken.neff").write_bytes(b"\0" * 100)
    (folder / "broken.mlir").write_text("module { func.func @main( ")
    neff = folder / "affine.neff"
    neuronc("compile", affine, "-o", neff)
    np.save(folder / "wrong.npy", np.zeros((3, 3), np.float32))

    class Huge(torch.nn.Module):
        def forward(self, x):
            return x.expand(1 << 21, 4096) * 2.0  # 32 GiB of output

    huge = folder / "huge.pt2"
    torch.export.save(torch.export.export(Huge(), (torch.ones(1, 4096),)), str(huge))
    out = folder / "out.neff"
    return {
        "missing file": (["compile", folder / "nope.pt2", "-o", out], {}),
        "not a .pt2": (["compile", folder / "bogus.pt2", "-o", out], {}),
        "corrupt NEFF": (["inspect", folder / "broken.neff"], {}),
        "unknown target": (["compile", program, "-o", out, "--target", "trn9"], {}),
        "unknown pass": (["compile", program, "-o", out, "--passes", "no-such-pass"], {}),
        "malformed pipeline": (["compile", program, "-o", out, "--passes", "cse{"], {}),
        "too big for HBM": (["compile", huge, "-o", out], {}),
        "wrong --input": (["run", neff, "--input", f"x={folder / 'wrong.npy'}"], {}),
        "malformed artifact": (
            ["compile", "--from", "stablehlo", folder / "broken.mlir", "-o", out],
            {},
        ),
        "malformed LNC": (["compile", affine, "-o", out], {"NEURON_LOGICAL_NC_CONFIG": "7"}),
        "malformed target": (
            ["compile", affine, "-o", out],
            {"NEURON_PLATFORM_TARGET_OVERRIDE": "trn9"},
        ),
        "no command": ([], {}),
    }


FAILURES = [
    "missing file",
    "not a .pt2",
    "corrupt NEFF",
    "unknown target",
    "unknown pass",
    "malformed pipeline",
    "too big for HBM",
    "wrong --input",
    "malformed artifact",
    "malformed LNC",
    "malformed target",
    "no command",
]
# What the one line must name, so the user can tell the failures apart.
FAILURE_WORDS = {
    "missing file": "nope.pt2",
    "not a .pt2": "not a torch.export program",
    "corrupt NEFF": "broken.neff",
    "unknown target": "trn9",
    "unknown pass": "no-such-pass",
    "too big for HBM": "does not fit",
    "wrong --input": "shape [3, 3]",
    "malformed artifact": "broken.mlir",
    "malformed LNC": "NEURON_LOGICAL_NC_CONFIG",
    "malformed target": "NEURON_PLATFORM_TARGET_OVERRIDE",
}


@pytest.mark.parametrize("failure", FAILURES)
def test_each_documented_failure_is_one_error_line(failures, failure):
    args, environment = failures[failure]
    result = neuronc(*args, check=False, env=environment)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronc: error: "), result.stderr
    assert FAILURE_WORDS.get(failure, "") in lines[0]


def test_profile_emulates_the_neff_s_chip_without_touching_the_environment(monkeypatch):
    from torchneuron import cli
    from torchneuron.target import topology

    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    before = dict(os.environ)
    try:
        cli.use_chip_of({"target": "trn3", "lnc": 1})
        assert (topology.topology().target, topology.topology().lnc) == ("trn3", 1)
        assert dict(os.environ) == before
        # The user's own setting wins over the manifest's.
        monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
        topology.reset_topology()
        cli.use_chip_of({"target": "trn3", "lnc": 1})
        assert topology.topology().target == "trn2"
    finally:
        topology.reset_topology()
