"""Shape arithmetic's unsigned division (``arith.divui``: a view's ``-1`` dimension, the
element count over the known sizes) becomes StableHLO where both operands are counts,
and stays where one may be negative (unsigned and signed division differ there)."""

from __future__ import annotations

import pytest

from tests.passes.shape_arithmetic import legalized, refined

PROGRAM = """
func.func @main(%arg0: tensor<?x?x5xf32>) -> tensor<?xi64> {{
  %shape_of = shape.shape_of %arg0 : tensor<?x?x5xf32> -> tensor<3xindex>
  %count = shape.num_elements %shape_of : tensor<3xindex> -> index
  %n = arith.index_cast %count : index to i64
  %divisor = arith.constant {divisor} : i64
  %c100 = arith.constant 100 : i64
  %dividend = {dividend}
  %q = arith.divui %dividend, %divisor : i64
  %shape = tensor.from_elements %q : tensor<1xi64>
  %r = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}}
"""
COUNT = "arith.addi %n, %divisor : i64"


@pytest.mark.parametrize(("shape", "divisor"), [((2, 7), 5), ((3, 4), 10), ((1, 1), 6)])
def test_a_count_over_a_count_folds_to_the_quotient(shape, divisor):
    module = legalized(PROGRAM.format(divisor=divisor, dividend=COUNT))
    assert "arith." not in str(module) and "shape." not in str(module)
    expected = (shape[0] * shape[1] * 5 + divisor) // divisor
    argument = f"tensor<{shape[0]}x{shape[1]}x5xf32>"
    assert f"-> tensor<{expected}xi64>" in refined(module, argument)


def test_a_dividend_that_may_be_negative_is_left_unsigned():
    # n - 100 is negative for small inputs: as unsigned it is near 2**64, and a signed
    # division would give another quotient, so the op stays (and the caller refuses)
    module = legalized(PROGRAM.format(divisor=5, dividend="arith.subi %n, %c100 : i64"))
    assert "arith.divui" in str(module)
