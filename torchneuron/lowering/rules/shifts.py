"""Bit shifts with PyTorch's semantics for every integer dtype and every shift count.

torch-mlir lowers only ``bitwise_left_shift``/``bitwise_right_shift`` of two tensors (``x << 2``,
``x >> 2`` and the ``__lshift__``/``__rshift__`` forms had no lowering), and it shifts a
``uint8`` right arithmetically (``200 >> 2`` came out 242, not 50). PyTorch's CPU kernels
define every count, in the operands' promoted dtype (a Python integer wrapped to it):

- ``a << s`` is ``a`` shifted left, modulo 2**bits, for ``0 <= s < bits``; 0 otherwise;
- ``a >> s`` is the arithmetic (signed) or logical (unsigned) shift for ``0 <= s < bits``;
  otherwise the sign fill for a signed ``a`` (-1 or 0), 0 for an unsigned one.

Here each shift is StableHLO's shift by a count kept in ``[0, bits)``, with the results
of the other counts chosen explicitly; a ``uint8`` shifts right zero-extended in ``int32``.
"""

from __future__ import annotations

import threading

import torch

from .comparisons import in_dtype
from .registry import lowering_rule

aten = torch.ops.aten

_SHIFTABLE = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

# Set while a rule issues StableHLO's own shift (a count known to be in range), so that
# the rules decline that inner call.
_in_range = threading.local()


def _shifted(op, a, count):
    _in_range.active = True
    try:
        return op(a, count)
    finally:
        _in_range.active = False


def _promoted(self, other):
    """(dtype, a, count) in PyTorch's promoted dtype; dtype None where no rule applies."""
    dtype = torch.result_type(self, other)
    if dtype not in _SHIFTABLE:
        return None, None, None  # float/bool/complex: PyTorch refuses them itself
    device = next(v.device for v in (self, other) if isinstance(v, torch.Tensor))
    a, count = (in_dtype(v, dtype, device) for v in (self, other))
    return dtype, *torch.broadcast_tensors(a, count)


def left_shift(self, other):
    # a << s -> where(0 <= s < bits, shift_left(a, s), 0)
    if getattr(_in_range, "active", False):
        return NotImplemented
    dtype, a, count = _promoted(self, other)
    if dtype is None:
        return NotImplemented
    out_of_range = (count < 0) | (count >= torch.iinfo(dtype).bits)
    shifted = _shifted(aten.bitwise_left_shift.Tensor, a, torch.where(out_of_range, 0, count))
    return torch.where(out_of_range, torch.zeros_like(shifted), shifted)


def right_shift(self, other):
    # signed a >> s -> shift_right_arithmetic(a, s < 0 or s >= bits ? bits - 1 : s)
    # unsigned a >> s -> where(s < bits, uint8(int32(a) >> s), 0)
    if getattr(_in_range, "active", False):
        return NotImplemented
    dtype, a, count = _promoted(self, other)
    if dtype is None:
        return NotImplemented
    bits = torch.iinfo(dtype).bits
    out_of_range = (count < 0) | (count >= bits)
    if torch.iinfo(dtype).min < 0:
        return _shifted(
            aten.bitwise_right_shift.Tensor, a, torch.where(out_of_range, bits - 1, count)
        )
    count = torch.where(out_of_range, 0, count).to(torch.int32)
    shifted = _shifted(aten.bitwise_right_shift.Tensor, a.to(torch.int32), count).to(dtype)
    return torch.where(out_of_range, torch.zeros_like(shifted), shifted)


lowering_rule(
    aten.__lshift__.Scalar,
    aten.__lshift__.Tensor,
    aten.bitwise_left_shift.Tensor,
    aten.bitwise_left_shift.Tensor_Scalar,
    aten.bitwise_left_shift.Scalar_Tensor,
)(left_shift)
lowering_rule(
    aten.__rshift__.Scalar,
    aten.__rshift__.Tensor,
    aten.bitwise_right_shift.Tensor,
    aten.bitwise_right_shift.Tensor_Scalar,
    aten.bitwise_right_shift.Scalar_Tensor,
)(right_shift)
