"""Golden-IR tests: one .mlir file per pass under golden/ (see golden_runner.py)."""

from pathlib import Path

import pytest

from tests.passes.golden_runner import GOLDEN_DIR, check_golden

GOLDEN_FILES = sorted(GOLDEN_DIR.glob("*.mlir"))


def test_every_pass_of_ours_lives_in_its_own_file_with_a_golden_file():
    # One pass per file, the file named after the pass (dce <-> dce.py), and its golden
    # tests in golden/<file>.mlir; upstream wrappers live together in upstream.py.
    from torchneuron.passes import get_pass, list_passes

    names = {path.stem for path in GOLDEN_FILES}
    ours = [name for name in list_passes() if not get_pass(name).__module__.endswith(".upstream")]
    assert ours, "no passes of ours registered"
    for name in ours:
        stem = name.replace("-", "_")
        assert get_pass(name).__module__ == f"torchneuron.passes.{stem}", name
        assert stem in names, f"missing tests/passes/golden/{stem}.mlir"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_golden(path: Path):
    check_golden(path)


def test_a_wrong_check_line_fails(tmp_path: Path):
    golden = tmp_path / "wrong.mlir"
    golden.write_text(
        "// RUN: fold-constants\n"
        "// CHECK: stablehlo.constant dense<4.000000e+00>\n"
        "func.func @main() -> tensor<f32> {\n"
        "  %a = stablehlo.constant dense<1.5> : tensor<f32>\n"
        "  %0 = stablehlo.add %a, %a : tensor<f32>\n"
        "  return %0 : tensor<f32>\n"
        "}\n"
    )
    with pytest.raises(AssertionError, match="FileCheck failed for wrong.mlir"):
        check_golden(golden)
    golden.write_text(golden.read_text().replace("4.000000e+00", "3.000000e+00"))
    check_golden(golden)


def test_golden_file_needs_one_run_line(tmp_path: Path):
    golden = tmp_path / "norun.mlir"
    golden.write_text("func.func @main() { return }\n")
    with pytest.raises(ValueError, match="expected exactly one '// RUN: <pipeline>' line, found 0"):
        check_golden(golden)
