"""Shape arithmetic's floor division (``arith.floordivsi``, Python's // on sizes) becomes
StableHLO that refinement folds to Python's value, for operands of either sign."""

from __future__ import annotations

import pytest

from tests.passes.shape_arithmetic import legalized, refined

PROGRAM = """
func.func @main(%arg0: tensor<?xf32>) -> tensor<?xi64> {{
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?xf32>
  %n = arith.index_cast %dim : index to i64
  %offset = arith.constant {offset} : i64
  %divisor = arith.constant {divisor} : i64
  %plus = arith.constant {plus} : i64
  %a = arith.subi %n, %offset : i64
  %q = arith.floordivsi %a, %divisor : i64
  %size = arith.addi %q, %plus : i64
  %shape = tensor.from_elements %size : tensor<1xi64>
  %r = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}}
"""


@pytest.mark.parametrize(
    "length, offset, divisor, plus",
    [
        (4, 7, 2, 5),  # (-3) // 2 = -2 (truncation would give -1)
        (9, 7, 2, 5),  # 2 // 2 = 1
        (4, -7, -2, 9),  # 11 // -2 = -6
        (10, 7, -2, 5),  # 3 // -2 = -2
        (3, 7, -2, 0),  # (-4) // -2 = 2
        (8, 1, 7, 0),  # 7 // 7 = 1
    ],
)
def test_floor_division_of_sizes_folds_to_pythons_value(length, offset, divisor, plus):
    module = legalized(PROGRAM.format(offset=offset, divisor=divisor, plus=plus))
    assert "arith." not in str(module)
    expected = (length - offset) // divisor + plus
    assert f"-> tensor<{expected}xi64>" in refined(module, f"tensor<{length}xf32>")
