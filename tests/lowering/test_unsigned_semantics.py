"""Unsigned, bool and integer arithmetic give PyTorch's values, in both modes, natively.

Each case is compared exactly with PyTorch on the CPU (values and dtype), through
``torch.compile`` and through eager ``neuron`` tensors, with the CPU fallback off.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering: these must run on the device
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def assert_both_modes_match(fn, *tensors):
    expected = fn(*tensors)
    compiled = torch.compile(fn, backend="neuron")(*tensors)
    eager = fn(*(t.to("neuron") for t in tensors)).cpu()
    for mode, got in (("compile", compiled), ("eager", eager)):
        assert got.dtype == expected.dtype, (mode, got.dtype, expected.dtype)
        assert torch.equal(got, expected), (mode, got, expected)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.uint32, torch.bool])
def test_constant_unsigned_tensors_lower_in_both_modes(dtype):
    # torch-mlir folded them into an unsigned literal it could not convert
    values = torch.tensor([0, 1, 1]).to(dtype)
    fill = True if dtype == torch.bool else 200
    assert_both_modes_match(torch.zeros_like, values)
    assert_both_modes_match(lambda t: torch.full((3,), fill, dtype=t.dtype), values)
    assert_both_modes_match(lambda t: torch.eq(t, torch.full_like(t, fill)), values)
    assert torch.equal(
        torch.zeros(3, dtype=dtype, device="neuron").cpu(), torch.zeros(3, dtype=dtype)
    )
    filled = torch.empty(2, 3, dtype=dtype, device="neuron").fill_(fill)
    assert torch.equal(filled.cpu(), torch.full((2, 3), fill, dtype=dtype))


COMPARISONS = [torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge]


@pytest.mark.parametrize("other_dtype", [torch.int8, torch.int64])
def test_comparison_of_uint8_or_bool_with_signed_integers_promotes_like_pytorch(other_dtype):
    # uint8 < int8 compares in int16: 200 < 7 is false (it was true, 200 read as -56)
    unsigned = torch.tensor([1, 200, 7, 128, 0, 255], dtype=torch.uint8)
    flags = torch.tensor([True, False, True, False, True, False])
    signed = torch.tensor([-1, 7, 7, 1, -128, 127], dtype=other_dtype)
    for left in (unsigned, flags):
        for compare in (*COMPARISONS, torch.maximum, torch.minimum):
            assert_both_modes_match(compare, left, signed)
            assert_both_modes_match(compare, signed, left)


def test_comparison_with_an_out_of_range_integer_scalar_wraps_like_pytorch():
    # PyTorch converts the scalar to the tensor's dtype: uint8 < -1 compares with 255
    unsigned = torch.tensor([1, 200, 44, 0, 255], dtype=torch.uint8)
    signed = torch.tensor([1, 100, -5, 44, -56], dtype=torch.int8)
    for compare in (torch.eq, torch.lt, torch.ge):
        for scalar in (-1, 300, -200):
            assert_both_modes_match(lambda t, c=compare, s=scalar: c(t, s), unsigned)
            assert_both_modes_match(lambda t, c=compare, s=scalar: c(t, s), signed)
        flags = torch.tensor([True, False])
        assert_both_modes_match(lambda t, c=compare: c(t, -1), flags)
        assert_both_modes_match(lambda t, c=compare: c(t, True), flags)


def test_equality_of_uint32_tensors_matches_pytorch():
    values = torch.tensor([0, 4_000_000_000, 3]).to(torch.uint32)
    other = torch.tensor([0, 4_000_000_000, 2_000_000_000]).to(torch.uint32)
    assert_both_modes_match(torch.eq, values, other)
    assert_both_modes_match(torch.ne, values, other)


SHIFT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def _shift_operands(dtype):
    info = torch.iinfo(dtype)
    values = torch.tensor([1, 3, info.max, info.min, 0, 100, 0 if info.min == 0 else -100])
    counts = [0, 1, info.bits - 1, info.bits, info.bits + 1, -1, 2]
    return values.to(dtype), torch.tensor(counts).to(dtype)


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
def test_shifts_by_any_count_match_pytorch(dtype):
    # counts >= bits or < 0 give 0 (left), the sign fill (signed right) or 0 (unsigned right);
    # uint8 shifts right logically (200 >> 2 is 50; it came out 242)
    values, counts = _shift_operands(dtype)
    assert_both_modes_match(lambda a, s: a << s, values, counts)
    assert_both_modes_match(lambda a, s: a >> s, values, counts)
    assert_both_modes_match(torch.bitwise_right_shift, values, counts)


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
def test_shifts_by_a_python_integer_lower_and_match_pytorch(dtype):
    # x << 2 and x >> 2 had no lowering; a count out of the dtype's range wraps into it
    values, _ = _shift_operands(dtype)
    bits = torch.iinfo(dtype).bits
    for count in (2, bits - 1, bits, -1, 257):
        assert_both_modes_match(lambda a, c=count: a << c, values)
        assert_both_modes_match(lambda a, c=count: a >> c, values)
    assert_both_modes_match(lambda a: torch.bitwise_left_shift(3, a), values.abs())


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
def test_integer_power_overflow_wraps_like_pytorch(dtype):
    # 3 ** 100 wraps modulo 2**bits (XLA's integer power gave other values in int16..int64)
    exponents = torch.tensor([0, 1, 5, 7, 100, 3]).to(dtype)
    assert_both_modes_match(lambda e: 3**e, exponents)
    assert_both_modes_match(lambda e: (-3) ** e, exponents)
    assert_both_modes_match(lambda b: b**100, exponents)
    assert_both_modes_match(lambda b, e: b**e, exponents, torch.tensor([3, 100, 2, 63, 64, 1]))
    if torch.iinfo(dtype).min < 0:
        bases = torch.tensor([1, -1, -1, 2, 0, 5]).to(dtype)
        assert_both_modes_match(lambda b, e: b**e, bases, torch.tensor([-3, -3, -2, -1, 0, 2]))


def _raised_in_compile_mode(fn, *tensors) -> BaseException:
    with pytest.raises(RuntimeError) as raised:
        torch.compile(fn, backend="neuron")(*tensors)
    return getattr(raised.value, "inner_exception", None) or raised.value


@pytest.mark.parametrize(
    "clamp",
    [
        lambda b: torch.clamp(b, True),
        lambda b: torch.clamp(b, max=False),
        lambda b: torch.clamp_min(b, True),
        lambda b: torch.clamp(b, torch.tensor(False), torch.tensor(True)),
    ],
)
def test_compiled_bool_clamps_pytorch_does_not_implement_raise_not_implemented(clamp):
    flags = torch.tensor([True, False])
    with pytest.raises(NotImplementedError):
        clamp(flags)
    assert isinstance(_raised_in_compile_mode(clamp, flags), NotImplementedError)


def test_bool_clamp_by_one_tensor_bound_matches_pytorch():
    # torch-mlir compared bools signed (True below False): clamp(b, tensor(True)) was all False
    flags, true, false = torch.tensor([True, False]), torch.tensor(True), torch.tensor(False)
    assert_both_modes_match(lambda b, t: torch.clamp(b, t), flags, true)
    assert_both_modes_match(lambda b, f: torch.clamp(b, None, f), flags, false)
    assert_both_modes_match(torch.clamp_min, flags, true)
    assert_both_modes_match(torch.clamp_max, flags, false)
