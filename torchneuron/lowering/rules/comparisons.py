"""Comparisons with a ``bool`` or unsigned operand, and with integer scalars out of range.

torch-mlir gets three things wrong here:

- ``compare`` ops on ``bool``/``uint8`` operands are marked signed, which XLA's verifier
  rejects ("Expected comparison type UNSIGNED");
- mixing ``uint8`` with a signed integer tensor (``uint8 < int8``) compares without
  PyTorch's promotion to ``torch.result_type`` (``int16``): ``200 < 7`` came out true;
- a Python integer (or a 0-d tensor of a wider integer dtype, as eager mode passes
  a Python number) is compared as it is, where PyTorch first converts it to the
  promoted integer dtype, wrapping (``uint8_tensor < -1`` compares with 255,
  ``int8_tensor < 300`` with 44).

Here both operands are converted to ``torch.result_type`` (a scalar wrapped to it
exactly), and a ``bool``/unsigned comparison runs in a wider signed dtype, where the
order of every value is the same (``uint32`` in ``int64``).
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

# unsigned dtypes -> the signed dtype they are compared in (which holds every value, in order)
_COMPARED_AS = {
    torch.bool: torch.int32,
    torch.uint8: torch.int32,
    torch.uint16: torch.int32,
    torch.uint32: torch.int64,
}


def wrapped_integer(value: int, dtype: torch.dtype) -> int:
    """``value`` converted to the integer ``dtype`` as PyTorch converts a scalar: modulo 2**bits."""
    bits = torch.iinfo(dtype).bits
    value %= 1 << bits
    if torch.iinfo(dtype).min < 0 and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def in_dtype(value, dtype: torch.dtype, device) -> torch.Tensor:
    """A tensor or Python number converted to ``dtype`` as PyTorch's promotion converts it
    (an integer wrapped, not refused, when it does not fit)."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype)
    if isinstance(value, int) and not isinstance(value, bool) and dtype != torch.bool:
        if not (dtype.is_floating_point or dtype.is_complex):
            value = wrapped_integer(value, dtype)
    return torch.scalar_tensor(value, dtype=dtype, device=device)


def _promoted_comparison(tensor_op):
    def compare(self, other):
        # a <op> b -> promoted(a) <op> promoted(b), widened to signed where that is unsigned
        operands = (self, other)
        dtype = torch.result_type(self, other)
        if dtype.is_complex or not (_needs_promotion(operands, dtype)):
            return NotImplemented
        a, b = (in_dtype(v, dtype, self.device) for v in operands)
        if dtype in _COMPARED_AS:
            a, b = a.to(_COMPARED_AS[dtype]), b.to(_COMPARED_AS[dtype])
        return tensor_op(a, b)

    compare.__name__ = f"promoted_{tensor_op.__name__.replace('.', '_')}"
    return compare


def _needs_promotion(operands, dtype: torch.dtype) -> bool:
    """Whether torch-mlir's own comparison would be wrong: a bool/unsigned operand, or an integer
    comparison whose operands are not all of ``dtype`` already (a wider 0-d tensor, a
    Python integer out of ``dtype``'s range)."""
    tensors = [v for v in operands if isinstance(v, torch.Tensor)]
    if any(t.dtype in _COMPARED_AS for t in tensors):
        return True
    if dtype.is_floating_point:
        return False
    if any(t.dtype != dtype for t in tensors):
        return True
    info = torch.iinfo(dtype)
    return any(
        isinstance(v, int) and not isinstance(v, bool) and not info.min <= v <= info.max
        for v in operands
    )


for _tensor_op, _scalar_op in (
    (aten.eq.Tensor, aten.eq.Scalar),
    (aten.ne.Tensor, aten.ne.Scalar),
    (aten.lt.Tensor, aten.lt.Scalar),
    (aten.le.Tensor, aten.le.Scalar),
    (aten.gt.Tensor, aten.gt.Scalar),
    (aten.ge.Tensor, aten.ge.Scalar),
):
    lowering_rule(_tensor_op, _scalar_op)(_promoted_comparison(_tensor_op))
