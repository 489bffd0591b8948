"""The numpy interpreter of StableHLO: its results match the XLA-compiled program's on
every op it covers, and dynamic shapes run at any size (its refusals and its executor:
``test_interpreter_refusals.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.runtime.interpreter_cases import (
    INF,
    NAN,
    SCATTERS,
    assert_matches_xla,
    f32,
    i32,
    scatter_inputs,
)
from torchneuron.runtime.interpreter import InterpretedProgram

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
