"""Orthogonal polynomials: Chebyshev (T, U, V, W and the shifted forms), Hermite (H, He),
Laguerre and Legendre, of a tensor degree."""

from __future__ import annotations

import torch

from ..registry import lowering_rule
from .common import aten, elementwise, nan_like

# The degree n is a tensor (truncated to an integer, like PyTorch). The three-term
# recurrence is unrolled to RECURRENCE_DEGREES and the term of degree n selected.
# Chebyshev polynomials of higher degree use their trigonometric / hyperbolic closed
# forms; the other families give NaN above that degree.

RECURRENCE_DEGREES = 32


def _by_recurrence(x, degree, first, second, step):
    """p_degree from p_0 = first, p_1 = second, p_{k+1} = step(k, x, p_k, p_{k-1})."""
    previous, current = first, second
    result = torch.where(degree == 0, first, torch.where(degree == 1, second, nan_like(x)))
    for k in range(1, RECURRENCE_DEGREES):
        previous, current = current, step(k, x, current, previous)
        result = torch.where(degree == k + 1, current, result)
    return torch.where(degree < 0, torch.zeros_like(x), result)


def _polynomial(step, first, second, closed_form=None):
    def compute(x, n):
        x, n = torch.broadcast_tensors(x, n)
        degree = n.to(torch.int64)
        value = _by_recurrence(x, degree, first(x), second(x), step)
        if closed_form is not None:
            value = torch.where(
                degree >= RECURRENCE_DEGREES, closed_form(x, degree.to(x.dtype)), value
            )
        return value

    return elementwise(compute)


def _chebyshev_closed(kind):
    def closed(x, n):
        # x = cos t (|x| <= 1) or +-cosh t (|x| > 1)
        inside = torch.abs(x) <= 1
        t = torch.acos(torch.clamp(x, -1, 1))
        u = torch.acosh(torch.clamp(torch.abs(x), min=1))
        odd = torch.remainder(n, 2) == 1
        flip = torch.where((x < -1) & odd, -1.0, 1.0).to(x.dtype)
        if kind == "t":
            return torch.where(inside, torch.cos(n * t), flip * torch.cosh(n * u))
        if kind == "u":
            # U_n(-x) = (-1)^n U_n(x)
            return torch.where(
                inside,
                torch.sin((n + 1) * t) / torch.sin(t),
                flip * torch.sinh((n + 1) * u) / torch.sinh(u),
            )
        return nan_like(x)

    return closed


_CHEBYSHEV_STEP = lambda k, x, current, previous: 2 * x * current - previous

# ATen op -> the polynomial p(x, n) it computes (tests compare these with torch).
POLYNOMIALS = {
    aten.special_chebyshev_polynomial_t.default: _polynomial(
        _CHEBYSHEV_STEP, torch.ones_like, lambda x: x, _chebyshev_closed("t")
    ),
    aten.special_chebyshev_polynomial_u.default: _polynomial(
        _CHEBYSHEV_STEP, torch.ones_like, lambda x: 2 * x, _chebyshev_closed("u")
    ),
    aten.special_chebyshev_polynomial_v.default: _polynomial(
        _CHEBYSHEV_STEP, torch.ones_like, lambda x: 2 * x - 1
    ),
    aten.special_chebyshev_polynomial_w.default: _polynomial(
        _CHEBYSHEV_STEP, torch.ones_like, lambda x: 2 * x + 1
    ),
    aten.special_hermite_polynomial_h.default: _polynomial(
        lambda k, x, current, previous: 2 * x * current - 2 * k * previous,
        torch.ones_like,
        lambda x: 2 * x,
    ),
    aten.special_hermite_polynomial_he.default: _polynomial(
        lambda k, x, current, previous: x * current - k * previous, torch.ones_like, lambda x: x
    ),
    aten.special_laguerre_polynomial_l.default: _polynomial(
        lambda k, x, current, previous: ((2 * k + 1 - x) * current - k * previous) / (k + 1),
        torch.ones_like,
        lambda x: 1 - x,
    ),
    aten.special_legendre_polynomial_p.default: _polynomial(
        lambda k, x, current, previous: ((2 * k + 1) * x * current - k * previous) / (k + 1),
        torch.ones_like,
        lambda x: x,
    ),
}


def _shifted(polynomial):
    # T*_n(x) = T_n(2x - 1), and likewise U*, V*, W*
    def compute(x, n):
        return polynomial(2 * x - 1, n)

    return compute


POLYNOMIALS.update(
    {
        aten.special_shifted_chebyshev_polynomial_t.default: _shifted(
            POLYNOMIALS[aten.special_chebyshev_polynomial_t.default]
        ),
        aten.special_shifted_chebyshev_polynomial_u.default: _shifted(
            POLYNOMIALS[aten.special_chebyshev_polynomial_u.default]
        ),
        aten.special_shifted_chebyshev_polynomial_v.default: _shifted(
            POLYNOMIALS[aten.special_chebyshev_polynomial_v.default]
        ),
        aten.special_shifted_chebyshev_polynomial_w.default: _shifted(
            POLYNOMIALS[aten.special_chebyshev_polynomial_w.default]
        ),
    }
)


def _polynomial_rule(op, polynomial):
    def rule(x, n):
        if not isinstance(x, torch.Tensor) or not isinstance(n, torch.Tensor):
            return NotImplemented
        return polynomial(x, n)

    rule.__name__ = op.__name__.replace(".", "_")
    return rule


for _op, _polynomial_function in POLYNOMIALS.items():
    lowering_rule(_op)(_polynomial_rule(_op, _polynomial_function))
