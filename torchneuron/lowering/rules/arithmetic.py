"""Arithmetic and comparisons that torch-mlir lowers wrongly or not at all.

- ``remainder``: torch-mlir lowers it as ``fmod`` (truncated), which differs from
  PyTorch's floored remainder whenever the operands' signs differ: a silently
  wrong program. Here it is fmod plus the sign correction.
- ``fmod`` with a Python scalar has no StableHLO lowering; the tensor form does.
- ``fmax``/``fmin`` with a broadcast operand build an ill-typed compare.
- comparisons of ``bool`` or ``uint8`` tensors become ``compare`` ops XLA rejects
  (torch-mlir marks them signed; XLA wants unsigned); they are compared as ``int32``.
"""

from __future__ import annotations

import torch

from . import lowering_rule

aten = torch.ops.aten


def _floored_remainder(self, other):
    # Python's modulo: fmod, moved into the divisor's sign when it is not there already
    truncated = aten.fmod.Tensor(self, other)
    wrong_sign = (truncated != 0) & torch.logical_xor(truncated < 0, other < 0)
    return torch.where(wrong_sign, truncated + other, truncated)


@lowering_rule(aten.remainder.Scalar)
def remainder_scalar(self, other):
    # remainder(x, s) -> r = fmod(x, s); r + s where r != 0 and sign(r) != sign(s)
    if self.dtype == torch.bool:
        return NotImplemented
    dtype = torch.result_type(self, other)
    divisor = torch.scalar_tensor(other, dtype=dtype, device=self.device)
    return _floored_remainder(self.to(dtype), divisor)


@lowering_rule(aten.remainder.Tensor)
def remainder_tensor(self, other):
    # remainder(x, y) -> r = fmod(x, y); r + y where r != 0 and sign(r) != sign(y)
    if not isinstance(other, torch.Tensor):
        return remainder_scalar(self, other)
    if self.dtype == torch.bool or other.dtype == torch.bool:
        return NotImplemented
    dtype = torch.result_type(self, other)
    return _floored_remainder(self.to(dtype), other.to(dtype))


@lowering_rule(aten.fmod.Scalar)
def fmod_scalar(self, other):
    # fmod(x, s) -> fmod(x, tensor(s))
    dtype = torch.result_type(self, other)
    divisor = torch.scalar_tensor(other, dtype=dtype, device=self.device)
    return aten.fmod.Tensor(self.to(dtype), divisor)


def _nan_ignoring(extreme):
    def rule(self, other):
        # fmax(a, b) = the other operand where one is NaN, else maximum(a, b)
        a, b = torch.broadcast_tensors(self, other)
        if not a.is_floating_point():
            return extreme(a, b)
        return torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, extreme(a, b)))

    rule.__name__ = f"nan_ignoring_{extreme.__name__}"
    return rule


lowering_rule(aten.fmax.default)(_nan_ignoring(torch.maximum))
lowering_rule(aten.fmin.default)(_nan_ignoring(torch.minimum))


@lowering_rule(aten.nextafter.default)
def nextafter(self, other):
    # the float after x towards y: its bit pattern plus or minus one (zero: the smallest
    # subnormal with y's sign)
    if self.dtype != torch.float32 or other.dtype != torch.float32:
        return NotImplemented
    x, y = torch.broadcast_tensors(self, other)
    bits = x.view(torch.int32)
    step = torch.where((y > x) == (x > 0), 1, -1).to(torch.int32)
    moved = (bits + step).view(torch.float32)
    smallest = torch.where(y > 0, 1, -2147483647).to(torch.int32).view(torch.float32)
    result = torch.where(x == 0, smallest, moved)
    result = torch.where(x == y, y, result)
    return torch.where(torch.isnan(x) | torch.isnan(y), x + y, result)


_UNSIGNED = (torch.bool, torch.uint8)


def _unsigned_comparison(op):
    def compare(self, other):
        # bool/uint8 <op> bool/uint8 -> int32 <op> int32 (same order, no sign issue)
        other_dtype = other.dtype if isinstance(other, torch.Tensor) else None
        if self.dtype not in _UNSIGNED or (
            other_dtype is not None and other_dtype not in _UNSIGNED
        ):
            return NotImplemented
        if isinstance(other, torch.Tensor):
            other = other.to(torch.int32)
        elif isinstance(other, bool):
            other = int(other)
        return op(self.to(torch.int32), other)

    compare.__name__ = f"unsigned_{op.__name__}"
    return compare


for _tensor_op, _scalar_op in (
    (aten.eq.Tensor, aten.eq.Scalar),
    (aten.ne.Tensor, aten.ne.Scalar),
    (aten.lt.Tensor, aten.lt.Scalar),
    (aten.le.Tensor, aten.le.Scalar),
    (aten.gt.Tensor, aten.gt.Scalar),
    (aten.ge.Tensor, aten.ge.Scalar),
):
    lowering_rule(_tensor_op)(_unsigned_comparison(_tensor_op))
    lowering_rule(_scalar_op)(_unsigned_comparison(_scalar_op))
