"""StableHLO element semantics in numpy, where they need more than one numpy call.

Two places compute StableHLO ops with numpy and must agree with XLA bit for bit: the
constant folder (``fold_constants.py``) and the runtime's interpreter
(``runtime/interpreter_ops.py``). The rules that are easy to get wrong live here once:
comparisons with an explicit signedness, ties away from zero, float-to-integer range,
integer division as XLA defines it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

COMPARISONS = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def comparison(direction: str, compare_type: str = "NOTYPE") -> Callable | None:
    """``compare`` with ``direction`` and ``compare_type`` as a function of its two
    operands (an UNSIGNED compare of signed integers reads their bits as unsigned, and
    the reverse for SIGNED), or None for TOTALORDER, which numpy does not order."""
    if compare_type == "TOTALORDER":
        return None
    compare = COMPARISONS[direction]
    if compare_type not in ("UNSIGNED", "SIGNED"):
        return compare
    kind = "i" if compare_type == "UNSIGNED" else "u"
    as_kind = "u" if compare_type == "UNSIGNED" else "i"

    def signed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind == kind:
            a = a.view(f"{as_kind}{a.dtype.itemsize}")
            b = b.view(f"{as_kind}{b.dtype.itemsize}")
        return compare(a, b)

    return signed


def round_half_away(x: np.ndarray) -> np.ndarray:
    """round_nearest_afz: halves away from zero (``x - trunc(x)`` is exact; rounding
    ``|x| + 0.5`` first is not)."""
    truncated = np.trunc(x)
    away = np.abs(x - truncated) >= 0.5
    return np.where(away, truncated + np.sign(x), truncated).astype(x.dtype)


def float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """convert of floats to the integer ``dtype``: toward zero, or None for NaN, inf and
    values out of range (implementation-defined). The range is bounded by powers of two,
    exact in every float type: ``iinfo.max`` is not (2**63 - 1 rounds up to 2**63)."""
    info = np.iinfo(dtype)
    whole = np.trunc(x.astype(np.float64))
    if not np.all((whole >= float(info.min)) & (whole < float(info.max) + 1.0)):
        return None
    return whole.astype(dtype)


def _xla_safe_divisor(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``b`` with 1 where XLA special-cases integer division, and where ``b`` was 0."""
    by_zero = b == 0
    special = by_zero
    if a.dtype.kind == "i":
        special = special | ((a == np.iinfo(a.dtype).min) & (b == -1))
    return np.where(special, np.ones_like(b), b), by_zero


def integer_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer divide: truncation toward zero, with XLA's ``a / 0 = -1`` (all ones) and
    ``INT_MIN / -1 = INT_MIN``."""
    divisor, by_zero = _xla_safe_divisor(a, b)
    quotient = np.floor_divide(a, divisor)
    inexact_negative = (np.remainder(a, divisor) != 0) & ((a < 0) != (divisor < 0))
    quotient = (quotient + inexact_negative.astype(a.dtype)).astype(a.dtype)
    return np.where(by_zero, np.array(-1).astype(a.dtype), quotient)


def integer_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder: the dividend's sign (C fmod), with XLA's ``a % 0 = a`` and
    ``INT_MIN % -1 = 0``."""
    divisor, by_zero = _xla_safe_divisor(a, b)
    return np.where(by_zero, a, np.fmod(a, divisor))
