"""What the interpreter's tests share: running a program both ways, and inputs."""

from __future__ import annotations

import numpy as np

from tests.passes.execute import execute
from torchneuron.passes.ir_utils import parse_module
from torchneuron.runtime.interpreter import InterpretedProgram

NAN = np.nan
INF = np.inf


def interpret(text: str, inputs: list[np.ndarray], checks=()) -> list[np.ndarray]:
    outputs, _ = InterpretedProgram(text, "under_test", checks).run(inputs)
    return outputs


def assert_matches_xla(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The interpreted outputs equal the compiled program's: same count, dtypes and
    shapes; integers and bools exactly, floats to a few ulps (NaN matches NaN)."""
    got = interpret(text, inputs)
    want = [np.array(a) for a in execute(parse_module(text), inputs)]
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want)):
        what = f"output {index}"
        assert (g.dtype, g.shape) == (w.dtype, w.shape), what
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=what)
    return got


def f32(*values) -> np.ndarray:
    return np.array(values, np.float32)


def i32(*values) -> np.ndarray:
    return np.array(values, np.int32)


SCATTERS = """
func.func @main(%x: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>,
    %uidx: tensor<3x1xi32>, %uupd: tensor<3x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>) {
  %0 = "stablehlo.scatter"(%x, %idx, %upd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
    inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,
    indices_are_sorted = false, unique_indices = false}
    : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %1 = "stablehlo.scatter"(%x, %uidx, %uupd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
    inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,
    indices_are_sorted = false, unique_indices = true}
    : (tensor<5x3xf32>, tensor<3x1xi32>, tensor<3x3xf32>) -> tensor<5x3xf32>
  return %0, %1 : tensor<5x3xf32>, tensor<5x3xf32>
}
"""


def scatter_inputs(idx=(1, 3, 1, 1), uidx=(4, 0, 2)):
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    upd = (np.arange(12, dtype=np.float32).reshape(4, 3) + 1) / 4  # exact in any order
    uupd = -np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    return [x, i32(*idx).reshape(-1, 1), upd, i32(*uidx).reshape(-1, 1), uupd]
