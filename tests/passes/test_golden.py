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
