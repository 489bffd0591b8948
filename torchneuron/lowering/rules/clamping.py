"""Clamps and the piecewise activations built on them, with PyTorch's signed zeros and NaNs.

torch-mlir lowers a clamp to StableHLO ``maximum``/``minimum``, which order -0.0
below 0.0: ``relu(-0.0)`` came out 0.0. PyTorch's CPU kernels keep ``x`` unless it
lies strictly outside a bound (``x < lo ? lo : x``), so ``relu(-0.0)``,
``clamp(-0.0, min=0)`` and ``hardtanh(-0.0, 0, 6)`` are -0.0, a NaN input stays NaN,
and a NaN bound gives NaN. ``leaky_relu`` and ``elu`` keep the sign of a zero input
too (``-0.0 * slope``, ``expm1(-0.0)``). Inputs are promoted with the bounds
first, as in PyTorch (an integer tensor clamped by a float bound is float); integer
clamps take the same comparisons (torch-mlir had no lowering for some of them).
Bools are clamped where PyTorch's kernels clamp them (by one tensor bound: torch-mlir
compared them signed, True < False) and refused as PyTorch refuses them elsewhere, with
a ``NotImplementedError`` (``BoolClampError``).
"""

from __future__ import annotations

import math

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from torchneuron.errors import TorchNeuronError

from .registry import lowering_rule

aten = torch.ops.aten
DEFAULT_PROMOTION = ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT


class BoolClampError(TorchNeuronError, NotImplementedError):
    """A clamp of bool values that PyTorch's CPU kernels do not implement."""


def _result_dtype(self, *bounds, bool_allowed: bool = False) -> torch.dtype | None:
    """The clamp's result dtype (PyTorch's promotion of ``self`` and the bounds); None for a
    complex result. A bool result is PyTorch's refusal unless ``bool_allowed`` (its kernels
    clamp bools only by a single tensor bound: ``clamp_min``/``clamp_max``)."""
    present = [bound for bound in bounds if bound is not None]
    _, dtype = elementwise_dtypes(self, *present, type_promotion_kind=DEFAULT_PROMOTION)
    if dtype == torch.bool and not bool_allowed:
        kernel = (
            "clamp"
            if len(present) != 1
            else ("clamp_min" if bounds[0] is not None else "clamp_max")
        )
        scalar = "" if any(isinstance(b, torch.Tensor) for b in present) else "_scalar"
        raise BoolClampError(f"\"{kernel}{scalar}_cpu\" not implemented for 'Bool'")
    return None if dtype.is_complex else dtype


def _single_tensor_bound(*bounds) -> bool:
    present = [bound for bound in bounds if bound is not None]
    return len(present) == 1 and isinstance(present[0], torch.Tensor)


def _clamped(self, low, high, dtype):
    # x < lo ? lo : x, then v > hi ? hi : v; a NaN bound gives NaN (x's own NaN stays)
    result = self.to(dtype)
    for bound, outside in ((low, torch.lt), (high, torch.gt)):
        if bound is None:
            continue
        if isinstance(bound, torch.Tensor):
            bound = bound.to(dtype)
            chosen = outside(result, bound)
            if dtype.is_floating_point:
                chosen = chosen | torch.isnan(bound)
        elif math.isnan(bound):
            return torch.full_like(result, math.nan)
        else:
            bound = torch.scalar_tensor(bound, dtype=dtype, device=self.device)
            chosen = outside(result, bound)
        result = torch.where(chosen, bound, result)
    return result


@lowering_rule(aten.clamp.default, aten.clamp.Tensor)
def clamp(self, min=None, max=None):
    # clamp(x, lo, hi) -> where(x < lo, lo, x), then where(v > hi, hi, v)
    dtype = _result_dtype(self, min, max, bool_allowed=_single_tensor_bound(min, max))
    if dtype is None:
        return NotImplemented
    return _clamped(self, min, max, dtype)


@lowering_rule(aten.clamp_min.default, aten.clamp_min.Tensor)
def clamp_min(self, min):
    # clamp_min(x, lo) -> where(x < lo, lo, x)
    dtype = _result_dtype(self, min, None, bool_allowed=isinstance(min, torch.Tensor))
    if dtype is None:
        return NotImplemented
    return _clamped(self, min, None, dtype)


@lowering_rule(aten.clamp_max.default, aten.clamp_max.Tensor)
def clamp_max(self, max):
    # clamp_max(x, hi) -> where(x > hi, hi, x)
    dtype = _result_dtype(self, None, max, bool_allowed=isinstance(max, torch.Tensor))
    if dtype is None:
        return NotImplemented
    return _clamped(self, None, max, dtype)


@lowering_rule(aten.relu.default)
def relu(self):
    # relu(x) -> clamp_min(x, 0): -0.0 and NaN stay as they are
    if not self.is_floating_point():
        return NotImplemented
    return _clamped(self, 0, None, self.dtype)


@lowering_rule(aten.hardtanh.default)
def hardtanh(self, min_val=-1, max_val=1):
    # hardtanh(x, lo, hi) -> clamp(x, lo, hi)
    if not self.is_floating_point():
        return NotImplemented
    return _clamped(self, min_val, max_val, self.dtype)


@lowering_rule(aten.leaky_relu.default)
def leaky_relu(self, negative_slope=0.01):
    # leaky_relu(x, a) -> where(x > 0, x, x * a)
    if not self.is_floating_point():
        return NotImplemented
    return torch.where(self > 0, self, self * negative_slope)


@lowering_rule(aten.elu.default)
def elu(self, alpha=1, scale=1, input_scale=1):
    # elu(x) -> where(x > 0, x * scale, expm1(x * input_scale) * alpha * scale)
    if not self.is_floating_point():
        return NotImplemented
    negative = torch.expm1(self * input_scale) * (alpha * scale)
    return torch.where(self > 0, self * scale, negative)
