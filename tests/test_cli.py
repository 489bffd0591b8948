"""``neuronc`` through real subprocesses: compile, emit, dump, passes, inspect, run, errors."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import torch

from torchneuron.zoo import ZOO


def _neuronc() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "neuronc"
    if script.exists():
        return [str(script)]
    found = shutil.which("neuronc")
    assert found, "the neuronc console script is not installed"
    return [found]


def neuronc(*args, check=True):
    result = subprocess.run(
        _neuronc() + [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"neuronc {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


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
    neuronc("compile", program, "-o", neff, "--target", "trn2")
    assert neff.stat().st_size > 1024

    shown = neuronc("inspect", neff).stdout
    assert "fc1.weight" in shown or "p_fc1_weight" in shown
    assert "trn2" in shown

    np.save(tmp_path / "x.npy", x.numpy())
    out_dir = tmp_path / "out"
    neuronc("run", neff, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", out_dir)
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
    for stage in ("fx", "torch", "stablehlo", "optimized", "neff"):
        assert (dump / f"mlp.{stage}").is_file(), stage
    assert (dump / "mlp.neff").read_bytes() == (tmp_path / "m.neff").read_bytes()
    for name in ("canonicalize", "fold-constants", "cse"):
        assert f"IR Dump After {name}" in result.stderr


def test_errors_are_one_clear_line(tmp_path):
    missing = neuronc("compile", tmp_path / "nope.pt2", "-o", tmp_path / "x.neff", check=False)
    assert missing.returncode == 1
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr

    bogus = tmp_path / "bogus.pt2"
    bogus.write_bytes(b"not a program")
    bad = neuronc("compile", bogus, "-o", tmp_path / "x.neff", check=False)
    assert bad.returncode == 1 and "not a torch.export program" in bad.stderr

    broken = tmp_path / "broken.neff"
    broken.write_bytes(b"\0" * 100)
    corrupt = neuronc("inspect", broken, check=False)
    assert corrupt.returncode == 1 and "Traceback" not in corrupt.stderr
    assert str(broken) in corrupt.stderr or "NEFF" in corrupt.stderr


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
