"""The compiler never writes a program that the runtime's verifier would refuse to load."""

import pytest
from torch_mlir import ir
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.compiler.program import portable_artifact
from torchneuron.lowering.errors import LoweringError

_CUSTOM_CALL = """
func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
"""

# a loop whose counter starts at an argument: its trip count is not proved
_WHILE = """
func.func @main(%arg0: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.while(%iter = %arg0) : tensor<i32>
    cond {
      %c = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare LT, %iter, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iter, %c1 : tensor<i32>
      stablehlo.return %2 : tensor<i32>
    }
  return %0 : tensor<i32>
}
"""

_ADD = """
func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def _module(text: str) -> ir.Module:
    context = ir.Context()
    _stablehlo.register_dialect(context)
    return ir.Module.parse(text, context)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (_CUSTOM_CALL, "stablehlo.custom_call @lapack_sgetrf_ffi"),
        (_WHILE, "stablehlo.while.*does not start at a constant"),
    ],
)
def test_compiler_refuses_to_serialize_an_op_the_verifier_refuses(text, named):
    with pytest.raises(LoweringError, match=named):
        portable_artifact(_module(text))


def test_compiler_serializes_an_allowed_program():
    artifact = portable_artifact(_module(_ADD))
    assert artifact[:4] == b"ML\xefR"


def test_compiler_names_the_pass_missing_when_ops_of_another_dialect_remain():
    text = """
func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = arith.addf %arg0, %arg0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
    with pytest.raises(LoweringError, match=r"arith\.addf.*put legalize-to-stablehlo first"):
        portable_artifact(_module(text))
