"""Every documented ``neuronc`` failure is one ``neuronc: error:`` line, never a traceback."""

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def failures(neuronc, tmp_path_factory, mlp_program, affine_program):
    """name -> (neuronc arguments, extra environment) of each documented failure."""
    folder = tmp_path_factory.mktemp("failures")
    program, _, _ = mlp_program
    affine, _ = affine_program
    (folder / "bogus.pt2").write_bytes(b"not a program")
    (folder / "broken.neff").write_bytes(b"\0" * 100)
    (folder / "broken.mlir").write_text("module { func.func @main( ")
    neff = folder / "affine.neff"
    neuronc.run("compile", affine, "-o", neff)
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
def test_each_documented_failure_is_one_error_line(neuronc, failures, failure):
    args, environment = failures[failure]
    result = neuronc.run(*args, check=False, env=environment)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronc: error: "), result.stderr
    assert FAILURE_WORDS.get(failure, "") in lines[0]
