"""The numpy interpreter of StableHLO: its results match the XLA-compiled program's,
dynamic shapes run at any size, what it does not cover is refused (at read or run time)
rather than answered wrongly, and ``Interpreted`` executes as a ``LoadedNeff`` does."""

from __future__ import annotations

import numpy as np
import pytest

from tests.passes.execute import execute
from torchneuron.passes.ir_utils import parse_module
from torchneuron.runtime import get_core, reset_runtime
from torchneuron.runtime.errors import (
    NeuronCheckError,
    NeuronIndexError,
    out_of_memory_error_type,
)
from torchneuron.runtime.interpreter import Interpreted, InterpretedProgram, Uninterpretable
from torchneuron.runtime.loaded_neff import add_execute_hook, remove_execute_hook

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


# -- the interpreted program computes what the compiled one does ------------------------

FLOAT_OPS = """
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>) {
  %0 = stablehlo.exponential %x : tensor<8xf32>
  %1 = stablehlo.log %y : tensor<8xf32>
  %2 = stablehlo.tanh %x : tensor<8xf32>
  %3 = stablehlo.logistic %x : tensor<8xf32>
  %4 = stablehlo.rsqrt %y : tensor<8xf32>
  %5 = stablehlo.sqrt %y : tensor<8xf32>
  %6 = stablehlo.maximum %x, %y : tensor<8xf32>
  %7 = stablehlo.minimum %x, %y : tensor<8xf32>
  %8 = stablehlo.divide %x, %y : tensor<8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
"""


def test_float_elementwise_ops_match_xla_including_nan_inf_and_zero():
    x = f32(-3.5, -0.25, 0.0, 0.5, 1.75, NAN, 20.0, -20.0)
    y = f32(2.0, 0.5, 0.0, 3.0, NAN, 1.5, -1.0, 0.0)
    exp, log, tanh, logistic, rsqrt, sqrt, maximum, minimum, divide = assert_matches_xla(
        FLOAT_OPS, [x, y]
    )
    # NaN wins in maximum and minimum whichever side it is on
    assert np.isnan(maximum[[4, 5]]).all() and np.isnan(minimum[[4, 5]]).all()
    assert log[2] == -INF and rsqrt[2] == INF and np.isnan(sqrt[6])
    assert np.isnan(divide[2]) and divide[7] == -INF
    np.testing.assert_allclose(logistic[3], 1 / (1 + np.exp(-0.5)), rtol=1e-6)


INTEGER_OPS = """
func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>, %n: tensor<8xi32>, %d: tensor<8xi32>,
    %u: tensor<3xui8>, %v: tensor<3xui8>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi32>,
    tensor<8xi32>, tensor<3xui8>, tensor<3xui8>) {
  %0 = stablehlo.add %a, %b : tensor<8xi32>
  %1 = stablehlo.multiply %a, %b : tensor<8xi32>
  %2 = stablehlo.divide %n, %d : tensor<8xi32>
  %3 = stablehlo.remainder %n, %d : tensor<8xi32>
  %4 = stablehlo.add %u, %v : tensor<3xui8>
  %5 = stablehlo.multiply %u, %v : tensor<3xui8>
  return %0, %1, %2, %3, %4, %5 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>,
    tensor<3xui8>, tensor<3xui8>
}
"""


def test_integer_arithmetic_wraps_and_divides_toward_zero_like_xla():
    a = i32(2**31 - 1, -(2**31), 65536, 46341, -5, 0, 3, 100000)
    b = i32(1, -1, 65536, 46341, 7, 0, -3, 100000)
    n = i32(-7, 7, -7, 7, -(2**31), 5, 0, -1)
    d = i32(2, -2, -2, 3, 2, 7, -3, 4)
    u = np.array([255, 200, 16], np.uint8)
    v = np.array([1, 100, 16], np.uint8)
    total, product, quotient, remainder, utotal, uproduct = assert_matches_xla(
        INTEGER_OPS, [a, b, n, d, u, v]
    )
    assert total[0] == -(2**31) and total[1] == 2**31 - 1
    assert product[2] == 0 and product[3] == 46341 * 46341 - 2**32
    np.testing.assert_array_equal(quotient, [-3, -3, 3, 2, -(2**30), 0, 0, 0])
    np.testing.assert_array_equal(remainder, [-1, 1, -1, 1, 0, 5, 0, -1])
    np.testing.assert_array_equal(utotal, [0, 44, 32])
    np.testing.assert_array_equal(uproduct, [255, 32, 0])


COMPARE_SELECT_CONVERT = """
func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>, %l: tensor<6xi64>, %z: tensor<6xf32>)
    -> (tensor<6xi1>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>, tensor<6xf32>, tensor<6xi1>) {
  %c = stablehlo.compare GT, %x, %y, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
  %s = "stablehlo.select"(%c, %x, %y)
    : (tensor<6xi1>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %i = stablehlo.convert %x : (tensor<6xf32>) -> tensor<6xi32>
  %f = stablehlo.convert %l : (tensor<6xi64>) -> tensor<6xf32>
  %b = stablehlo.convert %c : (tensor<6xi1>) -> tensor<6xf32>
  %t = stablehlo.convert %z : (tensor<6xf32>) -> tensor<6xi1>
  return %c, %s, %i, %f, %b, %t
    : tensor<6xi1>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>, tensor<6xf32>, tensor<6xi1>
}
"""


def test_compare_select_and_converts_match_xla():
    x = f32(-2.75, 2.75, -0.0, 1e9, -2147483520.0, 0.5)
    y = f32(0.0, 3.0, 0.0, NAN, -1.0, 0.25)
    # 2**62 + 2**38 + 1 is just above a float32 tie: rounding via float64 would go down
    wide = np.array([2**62 + 2**38 + 1, -(2**53 + 1), 16777217, -1, 0, 2**63 - 1], np.int64)
    z = f32(0.0, -0.0, NAN, 1e-3, -INF, 2.0)
    greater, chosen, as_int, as_float, from_bool, to_bool = assert_matches_xla(
        COMPARE_SELECT_CONVERT, [x, y, wide, z]
    )
    np.testing.assert_array_equal(greater, [False, False, False, False, False, True])
    np.testing.assert_array_equal(chosen, f32(0.0, 3.0, 0.0, NAN, -1.0, 0.5))
    np.testing.assert_array_equal(as_int, [-2, 2, 0, 10**9, -2147483520, 0])
    assert as_float[0] == np.float32(2**62 + 2**39)
    np.testing.assert_array_equal(from_bool, greater.astype(np.float32))
    np.testing.assert_array_equal(to_bool, [False, False, True, True, True, True])


SHAPE_OPS = """
func.func @main(%x: tensor<2x3xf32>, %r: tensor<3x1xf32>, %w: tensor<3x3xf32>,
    %p: tensor<3x4xf32>, %v1: tensor<1xf32>) -> (tensor<3x4x2xf32>, tensor<5x3xf32>,
    tensor<3x2xf32>, tensor<4x2x3xf32>, tensor<5x3xf32>, tensor<2x2xf32>, tensor<5x9xf32>,
    tensor<2x3xi32>) {
  %v = stablehlo.reshape %v1 : (tensor<1xf32>) -> tensor<f32>
  %0 = stablehlo.broadcast_in_dim %x, dims = [2, 0] : (tensor<2x3xf32>) -> tensor<3x4x2xf32>
  %1 = stablehlo.broadcast_in_dim %r, dims = [1, 0] : (tensor<3x1xf32>) -> tensor<5x3xf32>
  %2 = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.transpose %0, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %4 = stablehlo.concatenate %x, %w, dim = 0 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<5x3xf32>
  %5 = "stablehlo.slice"(%4) {start_indices = array<i64: 1, 0>,
    limit_indices = array<i64: 5, 3>, strides = array<i64: 2, 2>}
    : (tensor<5x3xf32>) -> tensor<2x2xf32>
  %6 = "stablehlo.pad"(%p, %v) {edge_padding_low = array<i64: -1, 2>,
    edge_padding_high = array<i64: 1, -3>, interior_padding = array<i64: 1, 2>}
    : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x9xf32>
  %7 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<2x3xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3x4x2xf32>, tensor<5x3xf32>, tensor<3x2xf32>,
    tensor<4x2x3xf32>, tensor<5x3xf32>, tensor<2x2xf32>, tensor<5x9xf32>, tensor<2x3xi32>
}
"""


def test_shape_ops_match_xla():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = f32(10, 20, 30).reshape(3, 1)
    w = -np.arange(9, dtype=np.float32).reshape(3, 3)
    p = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    v = f32(-1)  # 1-d: the XLA runner helper makes a 0-d input 1-d
    spread, expanded, reshaped, transposed, joined, strided, padded, iota = assert_matches_xla(
        SHAPE_OPS, [x, r, w, p, v]
    )
    # broadcast_in_dim with dims [2, 0]: result[i, j, k] = x[k, i]
    np.testing.assert_array_equal(spread, np.broadcast_to(x.T[:, None, :], (3, 4, 2)))
    np.testing.assert_array_equal(expanded, np.broadcast_to(r[:, 0], (5, 3)))
    np.testing.assert_array_equal(strided, np.concatenate([x, w])[1:5:2, 0:3:2])
    # rows: low -1 drops p's first row, leaving [pad, p1, pad, p2, pad]; columns: two pads,
    # then p's columns two pads apart, high -3 dropping the last column and the pads before it
    want = np.full((5, 9), -1, np.float32)
    want[1:4:2, 2:9:3] = p[1:, :3]
    np.testing.assert_array_equal(padded, want)
    np.testing.assert_array_equal(iota, [[0, 1, 2], [0, 1, 2]])


DYNAMIC_SLICES = """
func.func @main(%x: tensor<4x5xf32>, %u: tensor<2x3xf32>, %ij: tensor<2xi32>)
    -> (tensor<2x3xf32>, tensor<4x5xf32>) {
  %i1 = "stablehlo.slice"(%ij) {start_indices = array<i64: 0>, limit_indices = array<i64: 1>,
    strides = array<i64: 1>} : (tensor<2xi32>) -> tensor<1xi32>
  %j1 = "stablehlo.slice"(%ij) {start_indices = array<i64: 1>, limit_indices = array<i64: 2>,
    strides = array<i64: 1>} : (tensor<2xi32>) -> tensor<1xi32>
  %i = stablehlo.reshape %i1 : (tensor<1xi32>) -> tensor<i32>
  %j = stablehlo.reshape %j1 : (tensor<1xi32>) -> tensor<i32>
  %0 = "stablehlo.dynamic_slice"(%x, %i, %j) {slice_sizes = array<i64: 2, 3>}
    : (tensor<4x5xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  %1 = "stablehlo.dynamic_update_slice"(%x, %u, %i, %j)
    : (tensor<4x5xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x5xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x5xf32>
}
"""


@pytest.mark.parametrize(
    ("start", "clamped"), [((1, 1), (1, 1)), ((7, -3), (2, 0)), ((-1, 4), (0, 2))]
)
def test_dynamic_slice_and_update_clamp_starts_like_xla(start, clamped):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    u = -np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    inputs = [x, u, i32(*start)]  # 1-d: the XLA runner helper makes a 0-d input 1-d
    window, updated = assert_matches_xla(DYNAMIC_SLICES, inputs)
    a, b = clamped
    np.testing.assert_array_equal(window, x[a : a + 2, b : b + 3])
    np.testing.assert_array_equal(updated[a : a + 2, b : b + 3], u)


def _reduce(name, value, init, dims, operand, result, element):
    return f"""
  {name} = "stablehlo.reduce"({value}, {init}) ({{
    ^bb0(%p: tensor<{element}>, %q: tensor<{element}>):
      %r = stablehlo.{operand} %p, %q : tensor<{element}>
      stablehlo.return %r : tensor<{element}>
  }}) {{dimensions = array<i64: {dims}>}}
    : (tensor<2x3x4x{element}>, tensor<{element}>) -> {result}"""


REDUCES = (
    """
func.func @main(%x: tensor<2x3x4xf32>, %b: tensor<2x3x4xi1>, %c: tensor<2x3x4xi1>) -> (
    tensor<3xf32>,
    tensor<2x4xf32>, tensor<3xi1>, tensor<2xi1>, tensor<f32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %true = stablehlo.constant dense<true> : tensor<i1>
  %false = stablehlo.constant dense<false> : tensor<i1>"""
    + _reduce("%0", "%x", "%zero", "0, 2", "add", "tensor<3xf32>", "f32")
    + _reduce("%1", "%x", "%ninf", "1", "maximum", "tensor<2x4xf32>", "f32")
    + _reduce("%2", "%b", "%true", "0, 2", "and", "tensor<3xi1>", "i1")
    + _reduce("%3", "%c", "%false", "1, 2", "or", "tensor<2xi1>", "i1")
    + _reduce("%4", "%x", "%zero", "0, 1, 2", "add", "tensor<f32>", "f32")
    + """
  return %0, %1, %2, %3, %4
    : tensor<3xf32>, tensor<2x4xf32>, tensor<3xi1>, tensor<2xi1>, tensor<f32>
}
"""
)


def test_reductions_over_several_dims_match_xla():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, :, 1] = -INF  # a max over only -inf keeps the -inf init
    b = np.ones((2, 3, 4), bool)
    b[1, 1, 2] = False  # the and over dims (0, 2) is false for row 1 only
    c = np.zeros((2, 3, 4), bool)
    c[0, 2, 3] = True  # the or over dims (1, 2) is true for batch 0 only
    total, largest, every, some, everything = assert_matches_xla(REDUCES, [x, b, c])
    np.testing.assert_allclose(total, x.sum(axis=(0, 2)), rtol=1e-6)
    assert largest[0, 1] == -INF
    np.testing.assert_array_equal(every, [True, False, True])
    np.testing.assert_array_equal(some, [True, False])
    assert everything.shape == () and np.isclose(everything, x.sum(), rtol=1e-5)


def test_reduce_propagates_nan_like_xla():
    x = np.ones((2, 3, 4), np.float32)
    x[1, 2, 3] = NAN
    flags = np.ones((2, 3, 4), bool)
    total, largest, *_ = assert_matches_xla(REDUCES, [x, flags, flags])
    assert np.isnan(total[2]) and not np.isnan(total[:2]).any()
    assert np.isnan(largest[1, 3]) and np.isnan(largest).sum() == 1


DOTS = """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %l: tensor<4x2x3xf32>,
    %r: tensor<2x5x4xf32>, %ia: tensor<2x3xi32>, %ib: tensor<3x2xi32>)
    -> (tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x2xi32>) {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<
    lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}
    : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = "stablehlo.dot_general"(%l, %r) {dot_dimension_numbers = #stablehlo.dot<
    lhs_batching_dimensions = [1], rhs_batching_dimensions = [0],
    lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [2]>}
    : (tensor<4x2x3xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  %2 = "stablehlo.dot_general"(%ia, %ib) {dot_dimension_numbers = #stablehlo.dot<
    lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}
    : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi32>
  return %0, %1, %2 : tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x2xi32>
}
"""


def test_dot_general_matmul_and_batched_with_leading_contraction_match_xla():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    lhs = rng.standard_normal((4, 2, 3)).astype(np.float32)
    rhs = rng.standard_normal((2, 5, 4)).astype(np.float32)
    ia = i32(65536, 3, -4, 1, 2, 3).reshape(2, 3)
    ib = i32(65536, 1, 2, -2, 5, 7).reshape(3, 2)  # 65536 * 65536 wraps to 0
    plain, batched, integer = assert_matches_xla(DOTS, [a, b, lhs, rhs, ia, ib])
    np.testing.assert_allclose(plain, a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batched, np.einsum("kbm,bnk->bmn", lhs, rhs), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(integer, (ia.astype(np.int64) @ ib).astype(np.int32))


GATHERS = """
func.func @main(%table: tensor<5x4xf32>, %ids: tensor<6xi32>, %grid: tensor<4x5xf32>,
    %points: tensor<2x3x2xi32>, %corners: tensor<3x2xi32>)
    -> (tensor<6x4xf32>, tensor<2x3xf32>, tensor<2x3x3xf32>) {
  %0 = "stablehlo.gather"(%table, %ids) {dimension_numbers = #stablehlo.gather<
    offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0],
    index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>, indices_are_sorted = false}
    : (tensor<5x4xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  %1 = "stablehlo.gather"(%grid, %points) {dimension_numbers = #stablehlo.gather<
    collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>,
    slice_sizes = array<i64: 1, 1>, indices_are_sorted = false}
    : (tensor<4x5xf32>, tensor<2x3x2xi32>) -> tensor<2x3xf32>
  %2 = "stablehlo.gather"(%grid, %corners) {dimension_numbers = #stablehlo.gather<
    offset_dims = [0, 2], start_index_map = [1, 0], index_vector_dim = 1>,
    slice_sizes = array<i64: 2, 3>, indices_are_sorted = false}
    : (tensor<4x5xf32>, tensor<3x2xi32>) -> tensor<2x3x3xf32>
  return %0, %1, %2 : tensor<6x4xf32>, tensor<2x3xf32>, tensor<2x3x3xf32>
}
"""


def test_gathers_match_xla_and_clamp_out_of_range_starts():
    table = np.arange(20, dtype=np.float32).reshape(5, 4)
    ids = i32(3, 0, 4, 3, 1, 1)
    grid = np.arange(100, 120, dtype=np.float32).reshape(4, 5)
    points = i32(0, 0, 3, 4, -1, 9, 2, 1, 7, -5, 1, 3).reshape(2, 3, 2)
    corners = i32(1, 0, 4, 3, -2, 1).reshape(3, 2)  # (column, row) starts: map [1, 0]
    rows, picked, windows = assert_matches_xla(GATHERS, [table, ids, grid, points, corners])
    np.testing.assert_array_equal(rows, table[ids])
    np.testing.assert_array_equal(picked, grid[[[0, 3, 0], [2, 3, 1]], [[0, 4, 4], [1, 0, 3]]])
    # window 1 starts at column 4, row 3: clamped to column 2, row 2
    np.testing.assert_array_equal(windows[:, 1, :], grid[2:4, 2:5])


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


def test_scatter_add_with_duplicates_and_replace_with_unique_indices_match_xla():
    x, _, upd, _, uupd = inputs = scatter_inputs()
    added, replaced = assert_matches_xla(SCATTERS, inputs)
    np.testing.assert_array_equal(added[1], x[1] + upd[0] + upd[2] + upd[3])
    np.testing.assert_array_equal(added[3], x[3] + upd[1])
    np.testing.assert_array_equal(added[[0, 2, 4]], x[[0, 2, 4]])
    np.testing.assert_array_equal(replaced[[4, 0, 2]], uupd)
    np.testing.assert_array_equal(replaced[[1, 3]], x[[1, 3]])


# -- dynamic shapes ---------------------------------------------------------------------

DYNAMIC = """
func.func @main(%x: tensor<?x4xf32>, %row: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>,
    tensor<?x4xi32>, tensor<?x?xf32>, tensor<i32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %four = stablehlo.constant dense<4> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %four, dim = 0
    : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %row, %shape, dims = [1]
    : (tensor<4xf32>, tensor<2xi32>) -> tensor<?x4xf32>
  %sum = stablehlo.add %x, %b : tensor<?x4xf32>
  %length = stablehlo.multiply %n1, %four : tensor<1xi32>
  %flat = stablehlo.dynamic_reshape %sum, %length
    : (tensor<?x4xf32>, tensor<1xi32>) -> tensor<?xf32>
  %iota = "stablehlo.dynamic_iota"(%shape) {iota_dimension = 0 : i64}
    : (tensor<2xi32>) -> tensor<?x4xi32>
  %starts = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %strides = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %sliced = "stablehlo.real_dynamic_slice"(%x, %starts, %shape, %strides)
    : (tensor<?x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xf32>
  return %sum, %flat, %iota, %sliced, %n
    : tensor<?x4xf32>, tensor<?xf32>, tensor<?x4xi32>, tensor<?x?xf32>, tensor<i32>
}
"""


def test_dynamic_shape_program_runs_at_each_size():
    program = InterpretedProgram(DYNAMIC, "dynamic")
    assert program.inputs[0] == (np.dtype(np.float32), (None, 4))
    row = f32(0.5, -1.0, 2.0, 4.0)
    for n in (3, 6):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        (total, flat, iota, sliced, size), _ = program.run([x, row])
        np.testing.assert_array_equal(total, x + row)
        np.testing.assert_array_equal(flat, (x + row).reshape(-1))
        assert iota.dtype == np.int32
        np.testing.assert_array_equal(iota, np.repeat(np.arange(n), 4).reshape(n, 4))
        np.testing.assert_array_equal(sliced, x[1:n:2, 0:4:3])
        assert size.dtype == np.int32 and size.shape == () and size == n


# -- refused when read: the program is compiled instead ---------------------------------

REFUSED_PROGRAMS = {
    "sort": (
        "stablehlo.sort",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.sort"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64, is_stable = false} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}""",
    ),
    "while": (
        "stablehlo.while",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.while"(%x) ({
    ^bb0(%a: tensor<4xf32>):
      %c = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %c : tensor<i1>
  }, {
    ^bb0(%a: tensor<4xf32>):
      stablehlo.return %a : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}""",
    ),
    "custom_call": (
        "stablehlo.custom_call",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @some_kernel(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}""",
    ),
    "bf16_input": (
        "bf16",
        """
func.func @main(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = stablehlo.add %x, %x : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}""",
    ),
    "bf16_value": (
        "bf16",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xbf16>
  %1 = stablehlo.convert %0 : (tensor<4xbf16>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}""",
    ),
    "total_order_compare": (
        "TOTALORDER",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xi1> {
  %0 = stablehlo.compare LT, %x, %x, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}""",
    ),
    "reduce_body_of_two_ops": (
        "stablehlo.reduce",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce"(%x, %zero) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      %t = stablehlo.multiply %s, %s : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}""",
    ),
    "reduce_body_not_combining": (
        "stablehlo.reduce",
        """
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce"(%x, %zero) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.subtract %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}""",
    ),
    "reduce_of_two_inputs": (
        "stablehlo.reduce",
        """
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %none = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.reduce"(%x, %i, %zero, %none) ({
    ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      %t = stablehlo.add %ai, %bi : tensor<i32>
      stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }) {dimensions = array<i64: 0>}
    : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
  return %0#0 : tensor<f32>
}""",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_PROGRAMS))
def test_what_it_does_not_cover_is_refused_when_read(case):
    named, text = REFUSED_PROGRAMS[case]
    with pytest.raises(Uninterpretable, match=named):
        InterpretedProgram(text, case)


def test_a_check_raising_an_unknown_error_kind_is_refused_when_read():
    text = """
func.func @main(%x: tensor<i1>) -> tensor<i1> {
  return %x : tensor<i1>
}"""
    with pytest.raises(Uninterpretable, match="KeyError"):
        InterpretedProgram(text, "checked", [(0, "KeyError", "no such key")])


# -- refused when run: the call is compiled instead, never answered wrongly -------------

INTEGER_DIVIDE = """
func.func @main(%a: tensor<3xi32>, %b: tensor<3xi32>) -> (tensor<3xi32>) {
  %0 = stablehlo.{op} %a, %b : tensor<3xi32>
  return %0 : tensor<3xi32>
}"""


@pytest.mark.parametrize(("op", "fitting"), [("divide", [3, -3, -2]), ("remainder", [1, -1, 1])])
@pytest.mark.parametrize(
    ("a", "b"), [((1, 2, 3), (1, 0, 3)), ((1, -(2**31), 3), (1, -1, 3))], ids=["zero", "overflow"]
)
def test_integer_division_by_zero_or_overflow_is_refused_when_run(op, fitting, a, b):
    program = InterpretedProgram(INTEGER_DIVIDE.replace("{op}", op), op)
    np.testing.assert_array_equal(program.run([i32(7, -7, 9), i32(2, 2, -4)])[0][0], fitting)
    with pytest.raises(Uninterpretable, match=f"stablehlo.{op}"):
        program.run([i32(*a), i32(*b)])


TO_I32 = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xi32> {
  %0 = stablehlo.convert %x : (tensor<2xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}"""


@pytest.mark.parametrize("value", [NAN, INF, -INF, 3e9, -3e9, -2147483904.0])
def test_float_to_int_conversion_out_of_range_is_refused_when_run(value):
    program = InterpretedProgram(TO_I32, "to_i32")
    np.testing.assert_array_equal(program.run([f32(-2.5, 2147483520.0)])[0][0], [-2, 2147483520])
    with pytest.raises(Uninterpretable, match="range"):
        program.run([f32(1.0, value)])


def test_float_to_int_conversion_of_two_to_the_31_is_refused_when_run():
    with pytest.raises(Uninterpretable):
        interpret(TO_I32, [f32(1.0, 2.0**31)])


@pytest.mark.parametrize("idx", [(1, 5, 0, 0), (1, -1, 0, 0)], ids=["past_end", "negative"])
def test_scatter_window_out_of_range_is_refused_when_run(idx):
    with pytest.raises(Uninterpretable, match="out of range"):
        interpret(SCATTERS, scatter_inputs(idx=idx))


def test_replacing_scatter_writing_one_element_twice_is_refused_when_run():
    with pytest.raises(Uninterpretable, match="twice"):
        interpret(SCATTERS, scatter_inputs(uidx=(4, 0, 4)))


# -- roundings and widenings that once disagreed with the compiled program -------------


def test_round_nearest_afz_matches_xla_near_halves():
    text = """
func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = stablehlo.round_nearest_afz %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}"""
    x = f32(0.49999997, -0.49999997, 8388609.0, 2.5, -2.5, 0.5)
    (got,) = interpret(text, [x])
    (want,) = execute(parse_module(text), [x])
    np.testing.assert_array_equal(got, want)  # exactly: a rounding has no last-bit slack
    np.testing.assert_array_equal(want, f32(0, -0.0, 8388609, 3, -3, 1))


def test_dot_general_to_a_wider_result_type_matches_xla():
    text = """
func.func @main(%a: tensor<2x3xi8>, %b: tensor<3x2xi8>) -> tensor<2x2xi32> {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<
    lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}
    : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}"""
    a = np.full((2, 3), 100, np.int8)
    assert_matches_xla(text, [a, a.T.copy()])


# -- inputs that do not fit the signature -----------------------------------------------

ADD = """
func.func @main(%x: tensor<2x3xf32>, %y: tensor<?x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %x, %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}"""


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([np.zeros((2, 3)), np.zeros((1, 3), np.float32)], r"input 0 is float64\[2, 3\]"),
        ([np.zeros((2, 4), np.float32), np.zeros((1, 3), np.float32)], r"input 0 .*\[2, 4\]"),
        ([np.zeros((2, 3), np.float32), np.zeros((5, 2), np.float32)], r"input 1 .*\['\?', 3\]"),
        ([np.zeros((2, 3), np.float32), np.zeros(3, np.float32)], r"input 1 is float32\[3\]"),
        ([np.zeros((2, 3), np.float32)], "takes 2 inputs, got 1"),
    ],
    ids=["dtype", "static_dim", "dynamic_rank_dim", "rank", "count"],
)
def test_inputs_that_do_not_fit_raise_value_error_naming_the_input(inputs, message):
    program = InterpretedProgram(ADD, "add")
    program.run([np.zeros((2, 3), np.float32), np.zeros((7, 3), np.float32)])  # fits
    with pytest.raises(ValueError, match=message):
        program.run(inputs)


# -- Interpreted: executed as a LoadedNeff is -------------------------------------------

CHECKED = """
func.func @main(%x: tensor<4xi32>, %n: tensor<i32>) -> (tensor<i1>, tensor<4xi32>) {
  %limit = stablehlo.broadcast_in_dim %n, dims = [] : (tensor<i32>) -> tensor<4xi32>
  %below = stablehlo.compare LT, %x, %limit : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %true = stablehlo.constant dense<true> : tensor<i1>
  %ok = "stablehlo.reduce"(%below, %true) ({
    ^bb0(%a: tensor<i1>, %b: tensor<i1>):
      %c = stablehlo.and %a, %b : tensor<i1>
      stablehlo.return %c : tensor<i1>
  }) {dimensions = array<i64: 0>} : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  %twice = stablehlo.add %x, %x : tensor<4xi32>
  return %ok, %twice : tensor<i1>, tensor<4xi32>
}"""


def test_execute_drops_a_passing_check_and_raises_a_failing_one():
    message = "index 9 is out of bounds for dimension 0 with size 5"
    program = InterpretedProgram(CHECKED, "checked", [(0, "IndexError", message)])
    loaded = Interpreted(program, get_core(0))
    outputs = loaded.execute([i32(0, 4, 2, 1), np.array(5, np.int32)])
    assert len(outputs) == 1
    np.testing.assert_array_equal(outputs[0], [0, 8, 4, 2])
    with pytest.raises(NeuronIndexError, match=message) as info:
        loaded.execute([i32(0, 9, 2, 1), np.array(5, np.int32)])
    assert isinstance(info.value, IndexError)
    runtime_check = InterpretedProgram(CHECKED, "checked", [(0, "RuntimeError", "bad")])
    with pytest.raises(NeuronCheckError, match="bad"):
        Interpreted(runtime_check, get_core(0))([i32(7, 0, 0, 0), np.array(5, np.int32)])


def test_execute_calls_the_execute_hooks():
    seen = []

    def hook(loaded, start, seconds):
        seen.append((loaded, seconds))

    loaded = Interpreted(InterpretedProgram(CHECKED, "hooked"), get_core(0))
    add_execute_hook(hook)
    try:
        outputs = loaded.execute([i32(1, 2, 3, 4), np.array(9, np.int32)])
    finally:
        remove_execute_hook(hook)
    assert len(outputs) == 2  # no checks: the check-like output is kept
    assert len(seen) == 1 and seen[0][0] is loaded and seen[0][1] >= 0
    assert loaded.name == "hooked (interpreted)" and loaded.schedule is None


NEGATE = """
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {
  %0 = stablehlo.negate %x : tensor<{n}xf32>
  return %0 : tensor<{n}xf32>
}"""


def test_run_reports_the_bytes_its_values_held_at_once():
    program = InterpretedProgram(NEGATE.replace("{n}", "1024"), "negate")
    (out,), peak = program.run([np.ones(1024, np.float32)])
    assert peak == 2 * 1024 * 4  # the input and the result
    np.testing.assert_array_equal(out, -np.ones(1024, np.float32))


def test_execute_charges_hbm_and_raises_out_of_memory(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_HBM_BYTES_PER_CORE", "64KiB")
    reset_runtime()
    core = get_core(0)
    n = 12 * 1024  # 48 KiB in, 48 KiB out: 96 KiB held, more than the core has
    big = Interpreted(InterpretedProgram(NEGATE.replace("{n}", str(n)), "big"), core)
    x = np.ones(n, np.float32)
    with pytest.raises(out_of_memory_error_type(), match=r"program 'big \(interpreted\)'"):
        big.execute([x])
    assert core.hbm.allocated == 0 and core.hbm.stats()["num_ooms"] == 1
    # inputs already in device memory are not charged again: 48 KiB fits
    (out,) = big.execute([x], resident=True)
    np.testing.assert_array_equal(out, -x)
    small = Interpreted(InterpretedProgram(NEGATE.replace("{n}", "1024"), "small"), core)
    core.hbm.reset_peak()
    small.execute([np.ones(1024, np.float32)])
    assert core.hbm.allocated == 0 and core.hbm.peak >= 2 * 1024 * 4


RETURNS_VIEWS = """
func.func @main(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<3x2xf32>,
    tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %n = stablehlo.negate %x : tensor<2x3xf32>
  return %x, %t, %b, %c, %n, %n
    : tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>,
      tensor<2x3xf32>
}"""


def test_outputs_are_writable_contiguous_and_never_alias_inputs_or_each_other():
    loaded = Interpreted(InterpretedProgram(RETURNS_VIEWS, "views"), get_core(0))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s = np.array(2.5, np.float32)
    outputs = loaded.execute([x, s])
    same, transposed, spread, constant, negated, again = outputs
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(transposed, x.T)
    np.testing.assert_array_equal(spread, np.full((2, 3), 2.5, np.float32))
    np.testing.assert_array_equal(constant, f32(1, 2, 3))
    np.testing.assert_array_equal(again, negated)
    for index, output in enumerate(outputs):
        assert output.flags.writeable and output.flags.c_contiguous, index
        assert not np.shares_memory(output, x) and not np.shares_memory(output, s), index
        for other in outputs[index + 1 :]:
            assert not np.shares_memory(output, other), index
    # writing an output changes neither the input nor the program's constant
    same[0, 0] = 99
    constant[0] = 99
    assert x[0, 0] == 0
    np.testing.assert_array_equal(loaded.execute([x, s])[3], f32(1, 2, 3))


def test_a_reduce_whose_init_is_not_its_identity_is_refused_when_run():
    text = """
func.func @main(%x: tensor<4x3xf32>, %init: tensor<f32>) -> tensor<3xf32> {
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [0]
    : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}"""
    program = InterpretedProgram(text, "sum")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(program.run([x, np.float32(0)])[0][0], x.sum(0))
    # XLA may fold a non-identity init in once per partial sum: left to the compiled program
    with pytest.raises(Uninterpretable, match="not its identity"):
        program.run([x, np.float32(1)])


def test_the_one_blas_thread_limit_is_counted_across_threads():
    from torchneuron.runtime.interpreter import _one_blas_thread, numpy_blas

    blas = numpy_blas()  # numpy's own: SciPy's OpenBLAS, if loaded, is another library
    if not blas.lib_controllers:
        pytest.skip("numpy's BLAS is not OpenBLAS here")

    def threads():
        return blas.info()[0]["num_threads"]

    before = threads()
    with _one_blas_thread:
        with _one_blas_thread:  # a second run, overlapping (another thread's)
            assert threads() == 1
        assert threads() == 1  # the first still runs
    assert threads() == before
