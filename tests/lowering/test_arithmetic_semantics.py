"""Elementwise arithmetic gives PyTorch's values and dtypes, in both modes, natively.

Each case is compared exactly with PyTorch on the CPU (dtype, NaN positions and the
sign of zeros included), through ``torch.compile`` and through eager ``neuron`` tensors,
with the CPU fallback off (a fallback would hide a wrong lowering).
"""

from __future__ import annotations

import pytest
import torch

from torchneuron.lowering.rules.arithmetic import (
    IntegerDivisionByZeroError,
    NegativeIntegerPowerError,
)


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def assert_same(got: torch.Tensor, expected: torch.Tensor, mode: str) -> None:
    assert got.dtype == expected.dtype, (mode, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (mode, got.shape, expected.shape)
    nan = (
        expected.isnan()
        if expected.is_floating_point()
        else torch.zeros_like(expected, dtype=torch.bool)
    )
    if expected.is_floating_point():
        assert torch.equal(got.isnan(), nan), (mode, got, expected)
        assert torch.equal(got.signbit()[~nan], expected.signbit()[~nan]), (mode, got, expected)
    assert torch.equal(got[~nan], expected[~nan]), (mode, got, expected)


def assert_both_modes_match(fn, *tensors):
    expected = fn(*tensors)
    assert_same(torch.compile(fn, backend="neuron")(*tensors), expected, "compile")
    eager = fn(*(t.to("neuron") for t in tensors))
    assert_same(eager.cpu(), expected, "eager")


def test_remainder_of_bool_by_negative_scalar_matches_pytorch():
    flags = torch.tensor([True, False])
    assert_both_modes_match(lambda t: torch.remainder(t, -3), flags)  # [-2, 0], int64
    assert_both_modes_match(lambda t: torch.remainder(t, -2.5), flags)  # [-1.5, 0.0]


def test_remainder_of_float_by_bool_scalar_matches_pytorch():
    assert_both_modes_match(lambda t: torch.remainder(t, True), torch.tensor([-7.5, 0.0, 5.25]))


def test_remainder_and_floor_division_of_integers_by_negative_scalars_match_pytorch():
    for dtype in (torch.int8, torch.int32, torch.int64):
        values = torch.tensor([-7, -6, 0, 5, 6, 127], dtype=dtype)
        assert_both_modes_match(lambda t: torch.remainder(t, -4), values)
        assert_both_modes_match(lambda t: t // -4, values)
        assert_both_modes_match(lambda t: torch.div(t, -4, rounding_mode="floor"), values)


def test_int64_floor_division_is_exact_above_2_pow_53():
    big = torch.tensor([2**53 + 1, 2**62 + 1, -(2**62) - 1, -(2**53) - 3])
    assert_both_modes_match(lambda t: t // 1, big)
    assert_both_modes_match(lambda t: torch.floor_divide(t, 3), big)
    assert_both_modes_match(lambda t: torch.div(t, -3, rounding_mode="floor"), big)
    assert_both_modes_match(lambda t, d: t // d, big, torch.tensor([7, -7, 7, -7]))
    assert_both_modes_match(lambda t: torch.remainder(t, 7), big)


def test_float_floor_division_follows_pytorch_rounding():
    # 1 // 0.1 is 9 in PyTorch (fmod(1, 0.1) is just under 0.1), not floor(1 / 0.1) = 10
    dividend = torch.tensor([1.0, -1.0, 7.5, 0.0, -0.0, 5.0, float("inf"), float("nan")])
    divisor = torch.tensor([0.1, 0.1, -0.1, 3.0, 3.0, 0.0, 2.0, 1.0])
    assert_both_modes_match(lambda a, b: a // b, dividend, divisor)
    assert_both_modes_match(lambda a: a // 0.1, dividend)


def test_fmod_of_floats_is_exact():
    # fmod(1, 0.1) is 0.09999999..., not 1 - 10 * 0.1
    dividend = torch.tensor([1.0, -1.0, 7.5, 5.0, -0.0, 3.0])
    divisor = torch.tensor([0.1, 0.1, -0.1, 3.0, 2.0, float("inf")])
    assert_both_modes_match(torch.fmod, dividend, divisor)
    assert_both_modes_match(torch.remainder, dividend, divisor)


SIGNED = torch.tensor([-0.0, 0.0, -1.0, 1.0, float("nan"), float("inf"), -float("inf"), 6.0, 7.0])


def test_relu_of_negative_zero_is_negative_zero():
    # PyTorch's relu is clamp_min(x, 0): x unless x < 0, so -0.0 and NaN stay
    assert_both_modes_match(torch.relu, SIGNED)
    assert_both_modes_match(torch.nn.functional.relu6, SIGNED)


def test_clamp_and_hardtanh_keep_negative_zero_and_propagate_nan():
    assert_both_modes_match(lambda t: torch.clamp(t, min=0.0), SIGNED)
    assert_both_modes_match(lambda t: torch.clamp(t, 0.0, 6.0), SIGNED)
    assert_both_modes_match(lambda t: torch.clamp(t, max=-0.0), SIGNED)
    assert_both_modes_match(lambda t: torch.nn.functional.hardtanh(t, 0.0, 6.0), SIGNED)
    bound = torch.tensor([1.0, 2.0, float("nan"), 0.5, 1.0, float("nan"), -1.0, 3.0, 9.0])
    assert_both_modes_match(lambda t, b: torch.clamp(t, min=b), SIGNED, bound)
    assert_both_modes_match(lambda t, b: torch.clamp(t, max=b), SIGNED, bound)


def test_leaky_relu_and_elu_keep_negative_zero():
    assert_both_modes_match(lambda t: torch.nn.functional.leaky_relu(t, 0.1), SIGNED)
    assert_both_modes_match(torch.nn.functional.elu, SIGNED)
    assert_both_modes_match(torch.nn.functional.selu, SIGNED)


def test_clamp_of_integers_by_a_float_bound_promotes_like_pytorch():
    values = torch.tensor([-7, 0, 5], dtype=torch.int32)
    assert_both_modes_match(lambda t: torch.clamp(t, min=-2.5), values)  # float32
    assert_both_modes_match(lambda t: torch.clamp(t, -2.5, 4), values)
    assert_both_modes_match(lambda t: torch.clamp(t, max=3), values)  # stays int32
    bytes_ = torch.tensor([0, 5, 250], dtype=torch.uint8)
    assert_both_modes_match(lambda t: torch.clamp(t, min=True), bytes_)  # stays uint8
    assert_both_modes_match(lambda t: torch.clamp(t, 3, 200), bytes_)


def test_div_with_rounding_mode_none_of_float_by_integer_is_true_division():
    dividend, divisor = torch.tensor([0.5, 1.5, -2.0, 3.0]), torch.tensor([1, 2, 3, -1])
    assert_both_modes_match(lambda a, b: torch.div(a, b, rounding_mode=None), dividend, divisor)
    assert_both_modes_match(lambda b: torch.div(b, b, rounding_mode=None), divisor)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_instance_norm_over_long_rows_accumulates_in_float32(dtype):
    # 65536-element rows far from zero: statistics summed in half precision drift by
    # many ulp; computed in float32 and rounded once, the result is the float64 one
    generator = torch.Generator().manual_seed(0)
    rows = (torch.randn(1, 2, 65536, generator=generator) * 0.5 + 60).to(dtype)
    expected = torch.nn.functional.instance_norm(rows.double()).to(dtype).double()
    tolerance = 2 * torch.finfo(dtype).eps * expected.abs().max()
    norm = torch.nn.functional.instance_norm
    compiled = torch.compile(norm, backend="neuron")(rows)
    eager = norm(rows.to("neuron")).cpu()
    for got in (compiled, eager):
        assert got.dtype == dtype
        assert (got.double() - expected).abs().max() <= tolerance


@pytest.mark.parametrize(
    "divide",
    [
        lambda t: t // 0,
        lambda t: torch.div(t, 0, rounding_mode="trunc"),
        lambda t: torch.remainder(t, 0),
        lambda t: torch.fmod(t, 0),
    ],
)
def test_integer_division_by_a_constant_zero_raises_like_pytorch(divide):
    # PyTorch raises a RuntimeError; StableHLO would give -1 or the dividend
    values = torch.tensor([7, -7, 0])
    with pytest.raises(RuntimeError):
        divide(values)
    with pytest.raises(RuntimeError) as raised:
        torch.compile(divide, backend="neuron")(values)
    causes = [raised.value, getattr(raised.value, "inner_exception", None), raised.value.__cause__]
    assert any(isinstance(cause, IntegerDivisionByZeroError) for cause in causes), causes


def test_bool_times_infinity_or_over_zero_keeps_nan_like_pytorch():
    # XLA rewrote float(b) * y as select(b, y, 0): False * inf gave 0, not NaN
    flags = torch.tensor([True, False, True, False])
    values = torch.tensor([float("inf"), float("inf"), float("nan"), -float("inf")])
    assert_both_modes_match(lambda b: b / 0, flags)
    assert_both_modes_match(lambda b: b * float("inf"), flags)
    assert_both_modes_match(lambda b, x: b * x, flags, values)
    assert_both_modes_match(lambda b, x: b.float() * x, flags, values)


def test_integer_to_a_constant_negative_power_raises_like_pytorch():
    values = torch.tensor([1, 2, -1])
    with pytest.raises(RuntimeError):
        values**-1
    with pytest.raises(RuntimeError) as raised:
        torch.compile(lambda t: t**-1, backend="neuron")(values)
    causes = [raised.value, getattr(raised.value, "inner_exception", None), raised.value.__cause__]
    assert any(isinstance(cause, NegativeIntegerPowerError) for cause in causes), causes


def test_compiled_subtraction_with_a_bool_operand_raises_like_pytorch():
    flags, values = torch.tensor([True, False]), torch.tensor([3, 4])
    for subtract in (lambda b, v: b - 1, lambda b, v: v - b, lambda b, v: 1 - b):
        with pytest.raises(RuntimeError):
            subtract(flags, values)
        with pytest.raises(RuntimeError):
            torch.compile(subtract, backend="neuron")(flags, values)
