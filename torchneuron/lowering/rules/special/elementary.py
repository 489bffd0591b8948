"""Small elementwise functions of real tensors with no StableHLO lowering: angle, hypot
(without overflow) and frexp."""

from __future__ import annotations

import math

import torch

from ..registry import lowering_rule
from .common import aten, elementwise


@lowering_rule(aten.angle.default)
def angle(self):
    # angle(real x) = pi where x < 0, else 0 (NaN stays NaN)
    if self.is_complex():
        return NotImplemented

    def compute(x):
        value = torch.where(x < 0, torch.full_like(x, math.pi), torch.zeros_like(x))
        return torch.where(torch.isnan(x), x, value)

    return elementwise(compute)(self)


@lowering_rule(aten.hypot.default)
@elementwise
def hypot(a, b):
    # hypot(a, b) = m sqrt(1 + (n/m)^2), m = max(|a|, |b|), n = min: no overflow
    a, b = torch.broadcast_tensors(a, b)
    high = torch.maximum(torch.abs(a), torch.abs(b))
    low = torch.minimum(torch.abs(a), torch.abs(b))
    ratio = torch.where(high == 0, torch.zeros_like(high), low / torch.where(high == 0, 1, high))
    value = high * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(a) | torch.isinf(b), torch.full_like(value, math.inf), value)


@lowering_rule(aten.frexp.Tensor)
def frexp(self):
    # x = m 2^e with 0.5 <= |m| < 1: e from log2, corrected by one where rounding missed
    if not self.is_floating_point() or self.dtype == torch.float64:
        return NotImplemented
    x = self.to(torch.float32)
    magnitude = torch.abs(x)
    finite_nonzero = torch.isfinite(x) & (x != 0)
    safe = torch.where(finite_nonzero, magnitude, torch.ones_like(magnitude))
    exponent = torch.floor(torch.log2(safe)) + 1
    # 2^-e as two halves, so that neither overflows for exponents near the range ends
    half = torch.floor(exponent / 2)
    mantissa = safe * torch.exp2(-half) * torch.exp2(-(exponent - half))
    exponent = torch.where(
        mantissa >= 1, exponent + 1, torch.where(mantissa < 0.5, exponent - 1, exponent)
    )
    mantissa = torch.where(
        mantissa >= 1, mantissa / 2, torch.where(mantissa < 0.5, mantissa * 2, mantissa)
    )
    mantissa = torch.where(finite_nonzero, torch.sign(x) * mantissa, x)
    exponent = torch.where(finite_nonzero, exponent, torch.zeros_like(exponent))
    return mantissa.to(self.dtype), exponent.to(torch.int32)
