"""Arithmetic and comparisons that torch-mlir lowers wrongly or not at all.

- ``remainder``: torch-mlir lowers it as ``fmod`` (truncated), which differs from
  PyTorch's floored remainder whenever the operands' signs differ: a silently
  wrong program. Here it is fmod plus the sign correction, in the promoted dtype
  (a bool operand included: ``remainder(tensor([True]), -3)`` is ``-2``).
- floor division (``floor_divide``, ``div(rounding_mode="floor")``): torch-mlir
  divides in floating point and floors, which loses the low bits of int64
  operands above 2**53 and rounds some float quotients up (``1 // 0.1`` is 9, not
  10). Integers divide exactly (truncating divide, then one step down where the
  signs differ and the division is inexact); floats follow PyTorch's formula.
- ``fmod``: torch-mlir computes it as ``a - trunc(a / b) * b`` for floats, off by
  one divisor whenever the quotient rounds across an integer; StableHLO's own
  ``remainder`` is C's exact fmod, and is what both rules build on.
- ``fmax``/``fmin`` with a broadcast operand build an ill-typed compare.
"""

from __future__ import annotations

import threading

import torch

from torchneuron.errors import TorchNeuronError

from ..loops import counted_loop
from .comparisons import in_dtype
from .registry import lowering_rule

aten = torch.ops.aten

_UNSIGNED = (torch.bool, torch.uint8)


# Set while a rule issues ``remainder`` for StableHLO's own ``remainder`` (C's fmod,
# exact) so that the remainder rule declines that inner call.
_truncating = threading.local()


def _truncated_remainder(a, b):
    """C's fmod(a, b), exactly: torch-mlir lowers a bare ``remainder`` to StableHLO's
    ``remainder`` (its ``fmod`` lowering, a - trunc(a / b) * b, is off for floats:
    fmod(1, 0.1) came out -1.5e-8, not 0.1)."""
    _truncating.active = True
    try:
        return aten.remainder.Tensor(a, b)
    finally:
        _truncating.active = False


def _floored_remainder(self, other):
    # Python's modulo: fmod, moved into the divisor's sign when it is not there already
    truncated = _truncated_remainder(self, other)
    wrong_sign = (truncated != 0) & torch.logical_xor(truncated < 0, other < 0)
    return torch.where(wrong_sign, truncated + other, truncated)


class IntegerDivisionByZeroError(TorchNeuronError, ZeroDivisionError):
    """An integer division, remainder or fmod by a constant zero (PyTorch raises too)."""


def _check_divisor(self, other) -> None:
    """Refuse an integer division by a divisor known to be zero while tracing.

    StableHLO gives -1 (quotient) or the dividend (remainder) where PyTorch raises;
    a divisor only known at run time cannot be checked in the program (docs/numerics.md).
    """
    if isinstance(other, torch.Tensor) or other != 0:
        return
    if not torch.result_type(self, other).is_floating_point:
        raise IntegerDivisionByZeroError("ZeroDivisionError: integer division by zero")


def _promoted(self, other):
    """Both operands in ``torch.result_type``'s dtype (a Python scalar as a 0-d tensor)."""
    dtype = torch.result_type(self, other)
    device = (self if isinstance(self, torch.Tensor) else other).device
    self, other = (
        v.to(dtype)
        if isinstance(v, torch.Tensor)
        else torch.scalar_tensor(v, dtype=dtype, device=device)
        for v in (self, other)
    )
    return self, other


@lowering_rule(aten.remainder.Scalar, aten.remainder.Tensor)
def remainder(self, other):
    # remainder(x, y) -> r = fmod(x, y); r + y where r != 0 and sign(r) != sign(y)
    if getattr(_truncating, "active", False):
        return NotImplemented  # the exact fmod issued by _truncated_remainder
    if torch.result_type(self, other) == torch.bool:
        return NotImplemented  # PyTorch has no bool remainder: its own error
    _check_divisor(self, other)
    return _floored_remainder(*_promoted(self, other))


def _floored_quotient(a, b):
    # a and b share one dtype
    if a.is_floating_point():
        # PyTorch's div_floor: (a - fmod(a, b)) / b, moved down a step where the
        # remainder's sign differs from b's, then rounded to the nearest integer
        mod = _truncated_remainder(a, b)
        div = (a - mod) / b
        div = torch.where((mod != 0) & torch.logical_xor(a < 0, b < 0), div - 1, div)
        floor = torch.floor(div)
        floor = torch.where(div - floor > 0.5, floor + 1, floor)
        quotient = a / b
        floor = torch.where(div != 0, floor, torch.copysign(torch.zeros_like(quotient), quotient))
        return torch.where(b != 0, floor, quotient)
    # integers: the truncating quotient, one lower where the signs differ and b does not divide a
    truncated = aten.div.Tensor_mode(a, b, rounding_mode="trunc")
    if a.dtype in _UNSIGNED:
        return truncated
    inexact = _truncated_remainder(a, b) != 0
    return truncated - (inexact & torch.logical_xor(a < 0, b < 0)).to(a.dtype)


@lowering_rule(aten.floor_divide.default, aten.floor_divide.Scalar)
def floor_divide(self, other):
    # floor_divide(x, y) -> floor(x / y), exactly in the promoted dtype
    if torch.result_type(self, other) == torch.bool:
        return NotImplemented  # PyTorch rejects bool floor division: its own error
    _check_divisor(self, other)
    return _floored_quotient(*_promoted(self, other))


@lowering_rule(aten.div.Tensor_mode, aten.div.Scalar_mode)
def divide_rounded(self, other, *, rounding_mode=None):
    # div(x, y, rounding_mode="floor") -> floor_divide(x, y); None -> x / y; "trunc" lowers as it is
    if rounding_mode is None:
        return (
            aten.div.Tensor(*_promoted(self, other))
            if isinstance(self, torch.Tensor)
            else NotImplemented
        )
    _check_divisor(self, other)
    if rounding_mode != "floor":
        return NotImplemented
    return floor_divide(self, other)


@lowering_rule(aten.fmod.Scalar, aten.fmod.Tensor)
def fmod(self, other):
    # fmod(x, y) -> StableHLO remainder(x, y) in the promoted dtype
    if torch.result_type(self, other) == torch.bool:
        return NotImplemented  # PyTorch has no bool fmod: its own error
    _check_divisor(self, other)
    return _truncated_remainder(*_promoted(self, other))


def _through_uint8(value, dtype):
    """A bool tensor converted to ``dtype`` by way of uint8 (anything else: as it is).

    XLA's CPU compiler rewrites ``convert(pred) * y`` as ``select(pred, y, 0)``, which
    drops IEEE's 0 * inf = NaN (``tensor([False]) * inf`` gave 0, ``/ 0`` too); it does
    not look through a convert from uint8.
    """
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        return value.to(torch.uint8).to(dtype)
    return value


def _bool_widening(op, true_division=False):
    def rule(self, other):
        # b * y (or b / y) with b bool and a floating result -> float(uint8(b)) * y
        dtype = torch.result_type(self, other)
        if true_division and not dtype.is_floating_point:
            dtype = torch.get_default_dtype()  # int / int is floating
        has_bool = any(isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in (self, other))
        if not has_bool or not dtype.is_floating_point or not isinstance(self, torch.Tensor):
            return NotImplemented
        return op(_through_uint8(self, dtype), _through_uint8(other, dtype))

    rule.__name__ = f"bool_widening_{op.__name__.replace('.', '_')}"
    return rule


lowering_rule(aten.mul.Tensor)(_bool_widening(aten.mul.Tensor))
lowering_rule(aten.div.Tensor)(_bool_widening(aten.div.Tensor, true_division=True))


@lowering_rule(aten._to_copy.default)
def bool_to_float(self, **kwargs):
    # float(b) -> float(uint8(b)), so that a later product keeps 0 * inf = NaN
    dtype = kwargs.get("dtype")
    if self.dtype != torch.bool or dtype is None or not dtype.is_floating_point:
        return NotImplemented
    return aten._to_copy.default(self.to(torch.uint8), **kwargs)


class NegativeIntegerPowerError(TorchNeuronError):
    """An integer tensor raised to a constant negative integer power (PyTorch refuses it)."""


class IntegerExponentOverflowError(TorchNeuronError):
    """An integer tensor raised to a constant exponent its dtype cannot hold (PyTorch refuses it)."""


@lowering_rule(aten.pow.Tensor_Scalar)
def integer_power(self, exponent):
    # int ** (negative constant) -> PyTorch's refusal (StableHLO would give 0, 1 or -1)
    # int ** (constant n >= 0) -> products of repeated squares, wrapping like PyTorch
    integral = not (self.is_floating_point() or self.is_complex())
    if not integral or not isinstance(exponent, int) or isinstance(exponent, bool):
        return NotImplemented
    if exponent < 0:
        raise NegativeIntegerPowerError("Integers to negative integer powers are not allowed.")
    if self.dtype == torch.bool:
        return NotImplemented  # promoted to int64 by PyTorch: the tensor form's rule
    if exponent > torch.iinfo(self.dtype).max:
        raise IntegerExponentOverflowError(
            f"value cannot be converted to type {self.dtype} without overflow"
        )
    result = None
    square = self
    while exponent:
        if exponent & 1:
            result = square if result is None else result * square
        exponent >>= 1
        if exponent:
            square = square * square
    return torch.ones_like(self) if result is None else result


@lowering_rule(aten.pow.Scalar, aten.pow.Tensor_Tensor)
def exact_integer_power(self, exponent):
    # a ** b (integers) -> PyTorch's powi: the product of a**(2**k) over b's set bits, each
    # product wrapping in the promoted dtype; b < 0 gives 1 (a == 1), +-1 (a == -1) or 0.
    # (XLA's integer power went through floating point: 3 ** 100 was off in int16..int64.)
    dtype = torch.result_type(self, exponent)
    if dtype == torch.bool or dtype.is_floating_point or dtype.is_complex:
        return NotImplemented
    device = next(v.device for v in (self, exponent) if isinstance(v, torch.Tensor))
    base, exponent = torch.broadcast_tensors(
        *(in_dtype(v, dtype, device) for v in (self, exponent))
    )
    signed = torch.iinfo(dtype).min < 0
    one = torch.ones_like(base)
    value_bits = torch.iinfo(dtype).bits - signed  # a negative b is handled apart

    def multiply_in(bit, result, square, exponent):
        # one bit a trip of a loop; the mask wraps after the last bit, unread
        result = torch.where(torch.bitwise_and(exponent, bit) != 0, result * square, result)
        return bit * 2, result, square * square

    first = torch.ones((), dtype=dtype, device=device)
    contiguous = torch.contiguous_format
    values = (first, one.clone(memory_format=contiguous), base.clone(memory_format=contiguous))
    _, result, _ = counted_loop(value_bits, multiply_in, values, (exponent,))
    if not signed:
        return result
    odd = torch.bitwise_and(exponent, 1) != 0
    zero = torch.zeros_like(base)
    negative_power = torch.where(
        base == 1, one, torch.where(base == -1, torch.where(odd, -one, one), zero)
    )
    return torch.where(exponent < 0, negative_power, result)


def _bitwise_with_scalar(tensor_op):
    def rule(self, other):
        # x | s -> x | tensor(s) in the promoted dtype (torch-mlir has only the tensor forms)
        if isinstance(other, torch.Tensor) or isinstance(other, float):
            return NotImplemented
        return tensor_op(*_promoted(self, other))

    rule.__name__ = f"bitwise_{tensor_op.__name__.replace('.', '_')}_with_scalar"
    return rule


for _scalar_form, _tensor_form in (
    (aten.bitwise_and.Scalar, aten.bitwise_and.Tensor),
    (aten.bitwise_or.Scalar, aten.bitwise_or.Tensor),
    (aten.bitwise_xor.Scalar, aten.bitwise_xor.Tensor),
):
    lowering_rule(_scalar_form)(_bitwise_with_scalar(_tensor_form))


class BoolSubtractionError(TorchNeuronError):
    """A subtraction with a bool operand (PyTorch refuses it: ``~`` or ``logical_not``)."""


@lowering_rule(aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Tensor, aten.rsub.Scalar)
def subtraction(self, other, alpha=1):
    # x - y with a bool x or y -> PyTorch's refusal; anything else lowers as it is
    if any(_is_bool(v) for v in (self, other)):
        raise BoolSubtractionError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return NotImplemented


def _is_bool(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.dtype == torch.bool
    return isinstance(value, bool)


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
