"""Shared check of the reduction and sort semantics tests: both modes against PyTorch, exactly."""

from __future__ import annotations

import torch


def assert_same(got, want):
    """Same type, dtype, shape and values (NaN where PyTorch has NaN, -0.0 kept apart)."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.is_floating_point():
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(torch.signbit(got), torch.signbit(want)) or torch.isnan(want).any()
    else:
        assert torch.equal(got, want), (got, want)


def _to(value, device):
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value.to(device) if isinstance(value, torch.Tensor) else value


def check_both_modes(fn, *args, close=False):
    """``fn(*args)`` compiled and on the device equals ``fn(*args)`` on the CPU."""
    want = fn(*args)
    compiled = torch.compile(fn, backend="neuron")(*args)
    eager = _to(fn(*_to(args, "neuron")), "cpu")
    for got in (compiled, eager):
        if close:
            torch.testing.assert_close(got, want, equal_nan=True)
        else:
            assert_same(got, want)
