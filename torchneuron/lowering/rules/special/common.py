"""Shared pieces of the special-function rules: the float32 compute wrapper and the
exactly reduced trigonometric helpers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

aten = torch.ops.aten

_COMPUTE_IN_FLOAT32 = (torch.bfloat16, torch.float16)


def elementwise(function: Callable) -> Callable:
    """Run ``function`` on floating tensors: ints promoted, half types computed in float32."""

    @functools.wraps(function)
    def rule(*tensors):
        result_dtype = torch.result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
        if not result_dtype.is_floating_point:
            result_dtype = torch.get_default_dtype()
        if result_dtype == torch.float64 or result_dtype.is_complex:
            return NotImplemented
        compute = torch.float32 if result_dtype in _COMPUTE_IN_FLOAT32 else result_dtype
        result = function(*(t.to(compute) for t in tensors))
        return result.to(result_dtype)

    return rule


def horner(t: torch.Tensor, coefficients: Sequence[float]) -> torch.Tensor:
    """c0 + c1 t + c2 t^2 + ...  (coefficients from the constant term up)."""
    result = torch.full_like(t, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = result * t + c
    return result


def sin_pi(x: torch.Tensor) -> torch.Tensor:
    """sin(pi x) with exact argument reduction: x - round(x) is exact in floating point."""
    r = x - torch.round(x)
    sign = torch.where(torch.remainder(torch.round(x), 2) == 0, 1.0, -1.0).to(x.dtype)
    return sign * torch.sin(math.pi * r)


def tan_pi(x: torch.Tensor) -> torch.Tensor:
    """tan(pi x), reduced exactly (tan has period pi)."""
    return torch.tan(math.pi * (x - torch.round(x)))


def nan_like(x):
    return torch.full_like(x, math.nan)
