"""``neuronc`` in real processes: compile, emit, dump, passes, inspect, run, and the
stage table re-entered with ``--from``.

The round trip runs the installed console script; the other command lines run in
processes forked from one runner that imported the CLI once (``tests/cli/neuronc.py``),
which saves an interpreter start per command.
"""

import numpy as np
import pytest
import torch

from tests.cli.neuronc import console_script
from torchneuron.compiler.stages import TABLE


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


def test_compile_twice_gives_identical_bytes(neuronc, mlp_program, tmp_path):
    program, _, _ = mlp_program
    neuronc.run("compile", program, "-o", tmp_path / "a.neff")
    neuronc.run("compile", program, "-o", tmp_path / "b.neff")
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
def test_emit_prints_each_stage(neuronc, mlp_program, stage, marker):
    program, _, _ = mlp_program
    assert marker in neuronc.run("compile", program, "--emit", stage).stdout


def test_dump_dir_passes_and_ir_printing(neuronc, mlp_program, tmp_path):
    program, _, _ = mlp_program
    dump = tmp_path / "dump"
    result = neuronc.run(
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


def test_run_rejects_wrong_inputs(neuronc, mlp_program, tmp_path):
    program, _, x = mlp_program
    neff = tmp_path / "m.neff"
    neuronc.run("compile", program, "-o", neff)
    missing = neuronc.run("run", neff, check=False)
    assert missing.returncode == 2 and "missing input(s): x" in missing.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((3, 3), np.float32))
    wrong = neuronc.run("run", neff, "--input", f"x={tmp_path / 'wrong.npy'}", check=False)
    assert wrong.returncode == 2 and "--input x=" in wrong.stderr and "shape [3, 3]" in wrong.stderr
    positional = neuronc.run("run", neff, "--input", tmp_path / "wrong.npy", check=False)
    assert positional.returncode == 2 and "--input x=" in positional.stderr


# -- re-entering the stage table (--from) ---------------------------------------------


def test_an_edited_stablehlo_dump_compiles_onward_and_runs_the_edit(
    neuronc, affine_program, tmp_path
):
    program, x = affine_program
    dump = tmp_path / "dump"
    neuronc.run("compile", program, "-o", tmp_path / "a.neff", "--dump-dir", dump)
    text = (dump / "affine.stablehlo.mlir").read_text()
    assert "dense<3.000000e+00>" in text
    edited = tmp_path / "affine.stablehlo.mlir"
    edited.write_text(text.replace("dense<3.000000e+00>", "dense<5.000000e+00>"))
    neuronc.run("compile", "--from", "stablehlo", edited, "-o", tmp_path / "e.neff")
    assert "e.neff" not in {p.name for p in dump.iterdir()}
    neuronc.run("run", tmp_path / "e.neff", "--input", f"x={x}", "--output-dir", tmp_path / "out")
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_array_equal(result, np.arange(4, dtype=np.float32) * 5.0 + 1.0)


@pytest.mark.parametrize("stage", ["torch", "stablehlo", "optimized"])
def test_a_dumped_artifact_compiles_back_to_the_same_program(neuronc, mlp_program, tmp_path, stage):
    program, model, x = mlp_program
    dump = tmp_path / "dump"
    neuronc.run("compile", program, "-o", tmp_path / "m.neff", "--dump-dir", dump)
    artifact = dump / f"mlp.{stage}.mlir"
    again = tmp_path / "again.neff"
    neuronc.run("compile", "--from", stage, artifact, "-o", again, "--weights", dump / "mlp.neff")
    shown = neuronc.run("inspect", again).stdout
    assert "NEFF 'mlp'" in shown and "p_fc1_weight" in shown and "x: float32" in shown
    np.save(tmp_path / "x.npy", x.numpy())
    neuronc.run(
        "run", again, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out"
    )
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_allclose(result, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_torch_artifact_without_weights_names_its_arguments_by_position(
    neuronc, affine_program, tmp_path
):
    program, x = affine_program
    dump = tmp_path / "dump"
    neuronc.run("compile", program, "-o", tmp_path / "a.neff", "--dump-dir", dump)
    neuronc.run("compile", "--from", "torch", dump / "affine.torch.mlir", "-o", tmp_path / "t.neff")
    assert "input0: float32[4]" in neuronc.run("inspect", tmp_path / "t.neff").stdout
    neuronc.run("run", tmp_path / "t.neff", "--input", x, "--output-dir", tmp_path / "out")
    result = np.load(tmp_path / "out" / "output0.npy")
    np.testing.assert_array_equal(result, np.arange(4, dtype=np.float32) * 3.0 + 1.0)


def test_compile_refuses_what_run_would_under_an_hbm_override(neuronc, tmp_path):
    # 2 MiB in, 2 MiB out: fits the chip, not a core of TORCHNEURON_HBM_BYTES_PER_CORE=1MiB.
    # `neuronc run` refused it under the override while `neuronc compile` wrote the NEFF.
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    program = tmp_path / "double.pt2"
    torch.export.save(torch.export.export(Double(), (torch.ones(512, 1024),)), str(program))
    np.save(tmp_path / "x.npy", np.ones((512, 1024), np.float32))
    neff = tmp_path / "double.neff"
    neuronc.run("compile", program, "-o", neff)
    small = {"TORCHNEURON_HBM_BYTES_PER_CORE": "1MiB"}
    ran = neuronc.run("run", neff, "--input", f"x={tmp_path / 'x.npy'}", check=False, env=small)
    assert ran.returncode != 0 and "out of HBM" in ran.stderr and "1.00 MiB" in ran.stderr

    refused = neuronc.run(
        "compile", program, "-o", tmp_path / "refused.neff", check=False, env=small
    )
    assert refused.returncode != 0
    (line,) = refused.stderr.splitlines()
    assert line.startswith("neuronc: error: 'double' does not fit"), line
    assert (
        "1.00 MiB (1048576 bytes) are available (from TORCHNEURON_HBM_BYTES_PER_CORE='1MiB')"
        in line
    )
    assert not (tmp_path / "refused.neff").exists()


def test_an_input_named_input_keeps_its_name_and_compiling_prints_no_warning(tmp_path):
    # a node may not shadow a Python builtin, so the graph calls it input_1; the NEFF
    # and `neuronc run --input input=...` use the user's name
    class Doubled(torch.nn.Module):
        def forward(self, input):
            return torch.relu(input) * 2.0

    program = tmp_path / "doubled.pt2"
    torch.export.save(torch.export.export(Doubled(), (torch.ones(3, 4),)), str(program))
    neff = tmp_path / "doubled.neff"
    done = console_script("compile", program, "-o", neff)
    assert "Warning" not in done.stderr, done.stderr  # torch's own FutureWarning is ours to hide
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    console_script("run", neff, "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "output0.npy"), np.maximum(x, 0) * 2)
