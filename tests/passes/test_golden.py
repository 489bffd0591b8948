"""Golden-IR tests: one .mlir file per pass under golden/ (see golden_runner.py)."""

from pathlib import Path

import pytest

from tests.passes.golden_runner import GOLDEN_DIR, check_golden

GOLDEN_FILES = sorted(GOLDEN_DIR.glob("*.mlir"))


def test_every_pass_of_ours_has_a_golden_file():
    names = {path.stem for path in GOLDEN_FILES}
    for required in (
        "legalize_to_stablehlo",
        "fold_constants",
        "algebraic_simplify",
        "dead_code_elimination",
        "externalize_constants",
    ):
        assert required in names, f"missing tests/passes/golden/{required}.mlir"


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
