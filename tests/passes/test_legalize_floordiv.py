"""Shape arithmetic's floor division (``arith.floordivsi``, Python's // on sizes) becomes
StableHLO that refinement folds to Python's value, for operands of either sign."""

from __future__ import annotations

import pytest
from torch_mlir import ir
from torch_mlir.passmanager import PassManager as UpstreamPassManager

from torchneuron.compiler import stages
from torchneuron.compiler.dynamic_program import _settle
from torchneuron.passes import PassContext, PassManager
from torchneuron.passes.upstream import _register_stablehlo_passes

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
    _register_stablehlo_passes()
    text = PROGRAM.format(offset=offset, divisor=divisor, plus=plus)
    module = ir.Module.parse(text, stages.make_context())
    PassManager.from_pipeline("legalize-to-stablehlo").run(module, PassContext())
    assert "arith." not in str(module)
    UpstreamPassManager.parse(
        f"builtin.module(stablehlo-refine-arguments{{types=tensor<{length}xf32>}},"
        "stablehlo-refine-shapes)",
        context=module.context,
    ).run(module.operation)
    _settle(module)
    expected = (length - offset) // divisor + plus
    assert f"-> tensor<{expected}xi64>" in str(module)
