"""``neuronc`` with a dynamic program: a .pt2 exported with a ``Dim`` compiles to ONE
NEFF, which ``inspect`` shows with its symbolic signature, ``run`` runs at several
shapes (against eager PyTorch on the CPU) and ``estimate --shape`` prices at a shape.
Each command line runs in its own process (tests/cli/neuronc.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.cli.neuronc import NeuroncSession

IN, OUT = 16, 4


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(IN, OUT)

    def forward(self, x):
        return torch.relu(self.linear(x))


@pytest.fixture(scope="module")
def neuronc():
    # The compiled route alone: a fallback to the CPU would hide a failure.
    runner = NeuroncSession(env={"TORCHNEURON_NO_FALLBACK": "1", "OMP_NUM_THREADS": "1"})
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = _Mlp()
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(model, (torch.randn(4, IN),), dynamic_shapes=({0: batch},))
    folder = tmp_path_factory.mktemp("dynamic_cli")
    torch.export.save(program, folder / "mlp.pt2")
    return model, folder


def test_compile_once_inspect_run_at_three_shapes_estimate(neuronc, exported):
    model, folder = exported
    neff = folder / "mlp.neff"
    dump = folder / "dump"
    compiled = neuronc.run("compile", folder / "mlp.pt2", "-o", neff, "--dump-dir", dump)
    assert "dynamic program: s" in compiled.stderr and "in [2, 64]" in compiled.stderr
    # one program, dumped once: its text and the same NEFF, byte for byte
    assert sorted(p.name for p in dump.iterdir()) == ["mlp.neff", "mlp.stablehlo.mlir"]
    assert (dump / "mlp.neff").read_bytes() == neff.read_bytes()
    assert "tensor<?x16xf32>" in (dump / "mlp.stablehlo.mlir").read_text()

    shown = neuronc.run("inspect", neff).stdout
    assert "neff_version         1.1" in shown
    line = next(row for row in shown.splitlines() if "input  x:" in row)
    symbol = line.split("[")[1].split(",")[0]
    assert line.strip() == f"input  x: float32[{symbol}, {IN}]"
    assert f"symbol {symbol} in [2, 64]" in shown

    for n in (2, 7, 64):
        x = torch.randn(n, IN)
        np.save(folder / f"x{n}.npy", x.numpy())
        out_dir = folder / f"out{n}"
        ran = neuronc.run(
            "run", neff, "--input", f"x={folder / f'x{n}.npy'}", "--output-dir", out_dir
        )
        assert f"output0: float32[{n}, {OUT}]" in ran.stdout
        got = np.load(out_dir / "output0.npy")
        torch.testing.assert_close(torch.from_numpy(got), model(x).detach(), rtol=1e-5, atol=1e-5)

    # out of the signature's range: one line naming the input, the dimension and the rule
    np.save(folder / "x65.npy", np.zeros((65, IN), np.float32))
    refused = neuronc.run("run", neff, "--input", f"x={folder / 'x65.npy'}", check=False)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1
    assert "input 'x' dimension 0 is 65" in refused.stderr and "[2, 64]" in refused.stderr

    figures = {}
    for n in (4, 64):
        priced = neuronc.run("estimate", neff, "--shape", f"x={n}x{IN}", "--json")
        figures[n] = json.loads(priced.stdout)["targets"]["trn2"]
    # the only matmul: 2 * n * IN * OUT FLOPs, from first principles
    assert figures[4]["flops"] == 2 * 4 * IN * OUT
    assert figures[64]["flops"] == 2 * 64 * IN * OUT
    assert figures[64]["hbm_bytes"] > figures[4]["hbm_bytes"] > 0
    assert figures[64]["latency_us"] > figures[4]["latency_us"] > 0

    # the .pt2 itself, specialized the same way
    priced = neuronc.run("estimate", folder / "mlp.pt2", "--shape", f"8x{IN}", "--json")
    assert json.loads(priced.stdout)["targets"]["trn2"]["flops"] == 2 * 8 * IN * OUT


def test_estimate_refusals_are_one_line(neuronc, exported):
    _, folder = exported
    neff = folder / "mlp.neff"
    if not neff.exists():
        neuronc.run("compile", folder / "mlp.pt2", "-o", neff)
    cases = [
        ((), 2, ["symbolic dimensions", "x: float32[", "in [2, 64]", "--shape x=Nx16"]),
        (("--shape", f"x=1x{IN}"), 1, ["input 'x' dimension 0 is 1", "[2, 64]"]),
        (("--shape", "x=4x17"), 1, ["input 'x' dimension 1 is 17", "requires 16"]),
        (("--shape", "y=4x16"), 2, ["--shape y: no such input"]),
        (("--shape", "x=4by16"), 2, ["expected NAME=AxBx"]),
    ]
    for extra, status, words in cases:
        result = neuronc.run("estimate", neff, *extra, check=False)
        assert result.returncode == status, (extra, result.stderr)
        assert result.stderr.count("\n") == 1, result.stderr
        for word in words:
            assert word in result.stderr, (word, result.stderr)
