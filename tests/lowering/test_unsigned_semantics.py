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


@pytest.mark.parametrize("other_dtype", [torch.int8, torch.int16, torch.int64])
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
    for compare in COMPARISONS:
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
