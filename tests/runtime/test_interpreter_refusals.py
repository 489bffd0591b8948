"""The interpreter refuses what it does not cover (when reading a program, or when a
call's values need the compiled program) rather than answering wrongly; inputs that do
not fit raise; ``Interpreted`` executes as a ``LoadedNeff`` does (checks, execute
hooks, HBM, outputs it owns)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.passes.execute import execute
from tests.runtime.interpreter_cases import (
    INF,
    NAN,
    SCATTERS,
    assert_matches_xla,
    f32,
    i32,
    interpret,
    scatter_inputs,
)
from torchneuron.passes.ir_utils import parse_module
from torchneuron.runtime import get_core, reset_runtime
from torchneuron.runtime.errors import (
    NeuronCheckError,
    NeuronIndexError,
    out_of_memory_error_type,
)
from torchneuron.runtime.interpreter import Interpreted, InterpretedProgram, Uninterpretable
from torchneuron.runtime.loaded_neff import add_execute_hook, remove_execute_hook

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
