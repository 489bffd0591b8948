"""An index-tensor constant (torch-mlir's start and stride operands of a dynamic slice)
becomes an i64 StableHLO constant that its users read, and the slice refines to the
right size."""

from __future__ import annotations

import pytest

from tests.passes.shape_arithmetic import legalized, refined

PROGRAM = """
func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %starts = arith.constant dense<[1, 0]> : tensor<2xindex>
  %strides = arith.constant dense<1> : tensor<2xindex>
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %limits = tensor.from_elements %dim, %c2 : tensor<2xindex>
  %r = stablehlo.real_dynamic_slice %arg0, %starts, %limits, %strides : (tensor<?x4xf32>, tensor<2xindex>, tensor<2xindex>, tensor<2xindex>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("rows", [3, 7])
def test_index_tensor_constants_become_i64_constants(rows):
    module = legalized(PROGRAM)
    text = str(module)
    assert "arith." not in text and "xindex>" not in text.split("real_dynamic_slice")[1]
    assert "dense<[1, 0]> : tensor<2xi64>" in text
    assert f"-> tensor<{rows - 1}x2xf32>" in refined(module, f"tensor<{rows}x4xf32>")
