"""``neuronc bisect``: a program run on the device and the CPU, as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from tests.cli.neuronc import ENV, console_script

# neuronc with one lowering rule made wrong (remainder 0.1 too high), in a real process
WRONG_RULE = textwrap.dedent(
    """
    import sys, torch
    from torchneuron.lowering import decompositions
    from torchneuron.lowering.rules import lowering_rules, registry
    lowering_rules()
    aten = torch.ops.aten
    def off_by_a_tenth(self, other):
        quotient = aten.floor.default(aten.div.Tensor(self, other))
        return aten.add.Tensor(aten.sub.Tensor(self, aten.mul.Tensor(quotient, other)), 0.1)
    for op in (aten.remainder.Scalar, aten.remainder.Tensor):
        registry.LOWERING_RULES[op] = off_by_a_tenth
    decompositions.decomposition_table.cache_clear()
    from torchneuron.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


class Remainders(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(9, 3))

    def forward(self, x):
        y = x @ self.w
        z = torch.remainder(y, 0.7)  # bisect names this line
        return torch.tanh(z) + 1


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("bisect") / "remainders.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Remainders(), (torch.randn(4, 9),)), path)
    return path


def _env(tmp_path):
    return {"TORCHNEURON_CACHE_DIR": str(tmp_path / "cache"), "TORCHNEURON_NO_FALLBACK": "1"}


def test_a_right_program_exits_0(program, tmp_path):
    done = console_script("bisect", program, env=_env(tmp_path))
    assert done.stdout.strip() == (
        "remainders: 1 output(s) equal the CPU's within their dtypes' tolerances"
    )


def test_a_wrong_rule_is_named_with_its_line_and_repro(program, tmp_path):
    repro = tmp_path / "repro"
    done = subprocess.run(
        [sys.executable, "-c", WRONG_RULE, "bisect", str(program), "--repro-dir", str(repro)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **ENV, **_env(tmp_path)},
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "first wrong node: node remainder (call_function aten.remainder.Scalar)" in done.stderr
    assert "z = torch.remainder(y, 0.7)  # bisect names this line" in done.stderr
    assert "max error 0.09" in done.stderr or "max error 0.1" in done.stderr
    for suffix in (".py", ".pt", ".stablehlo.mlir"):
        assert (repro / f"remainders_remainder{suffix}").is_file(), suffix


def test_inputs_from_a_file(program, tmp_path):
    inputs = tmp_path / "inputs.pt"
    torch.save((torch.ones(4, 9),), inputs)
    done = console_script("bisect", program, "--inputs", inputs, env=_env(tmp_path))
    assert "1 output(s) equal" in done.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a pickle", "not tensors saved with torch.save"),
        (None, "2 value(s), the program takes 1"),
    ],
)
def test_bad_inputs_are_a_usage_error(program, tmp_path, content, message):
    inputs = tmp_path / "inputs.pt"
    if content is None:
        torch.save([torch.ones(4, 9), torch.ones(4, 9)], inputs)
    else:
        inputs.write_bytes(content)
    done = console_script("bisect", program, "--inputs", inputs, check=False, env=_env(tmp_path))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
