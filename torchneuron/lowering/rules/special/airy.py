"""The Airy function Ai (``special_airy_ai``), in float32 arithmetic on the device.

Ai solves y'' = x y. Three forms, each used where float32 keeps it accurate:

- |x| <= 8.5: a Taylor polynomial of degree ``_DEGREE`` about the nearest integer c
  (|x - c| <= 0.5). Its coefficients follow from (Ai(c), Ai'(c)) by the ODE's recurrence
  a_{n+2} = (c a_n + a_{n-1}) / ((n + 2)(n + 1)); those two values are computed here
  once, in Python's double precision: by the Maclaurin series (DLMF 9.4.1, with
  Ai(0) = 3^(-2/3) / Gamma(2/3), Ai'(0) = -3^(-1/3) / Gamma(1/3)) for |c| <= 5, and by
  the asymptotic expansions below beyond.
- x > 8.5: Ai(x) ~ e^(-zeta) / (2 sqrt(pi) x^(1/4)) sum_k (-1)^k u_k zeta^(-k),
  zeta = (2/3) x^(3/2) (DLMF 9.7.5), u_0 = 1, u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k)
  u_(k-1) (9.7.2); it underflows to 0 past x ~ 25, as float32 must.
- x < -8.5: Ai(-x) ~ (sin(zeta + pi/4) P - cos(zeta + pi/4) Q) / (sqrt(pi) x^(1/4)),
  P = sum_k (-1)^k u_2k zeta^(-2k), Q = sum_k (-1)^k u_(2k+1) zeta^(-2k-1) (9.7.9). Its
  phase is computed in float32, so far out (|x| in the thousands) the oscillation's
  phase carries float32's rounding of zeta, as a float32 kernel's does.

Accuracy against float64 (``tests/lowering/test_airy.py``, x in [-30, 30]): within
2e-6 absolute and 2e-5 relative where |Ai| > 1e-30.
"""

from __future__ import annotations

import math

import torch

from ..registry import lowering_rule
from .common import aten, elementwise

_DEGREE = 14
_TAYLOR_REACH = 8  # centres -8 .. 8
_ASYMPTOTIC_TERMS = 8


def _u(count: int) -> list[float]:
    u = [1.0]
    for k in range(1, count):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return u


def _ai_and_derivative(c: float) -> tuple[float, float]:
    """(Ai(c), Ai'(c)) in double precision."""
    if abs(c) <= 5.5:
        ai0 = 3 ** (-2 / 3) / math.gamma(2 / 3)
        dai0 = -(3 ** (-1 / 3)) / math.gamma(1 / 3)
        # Maclaurin: Ai = ai0 f + dai0 g, f = sum a_n c^n, from y'' = x y
        f, g = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
        for n in range(3, 120):
            f.append(f[n - 3] / (n * (n - 1)))
            g.append(g[n - 3] / (n * (n - 1)))
        value = sum((ai0 * f[n] + dai0 * g[n]) * c**n for n in range(len(f)))
        slope = sum(n * (ai0 * f[n] + dai0 * g[n]) * c ** (n - 1) for n in range(1, len(f)))
        return value, slope
    # asymptotic (DLMF 9.7.5-9.7.10: Ai and Ai' with u_k and v_k)
    u = _u(20)
    v = [-(6 * k + 1) / (6 * k - 1) * u[k] if k else 1.0 for k in range(20)]
    x = abs(c)
    zeta = 2 / 3 * x**1.5
    if c > 0:
        s_u = sum((-1) ** k * u[k] / zeta**k for k in range(20))
        s_v = sum((-1) ** k * v[k] / zeta**k for k in range(20))
        scale = math.exp(-zeta) / (2 * math.sqrt(math.pi))
        return scale * s_u / x**0.25, -scale * s_v * x**0.25
    p_u = sum((-1) ** k * u[2 * k] / zeta ** (2 * k) for k in range(10))
    q_u = sum((-1) ** k * u[2 * k + 1] / zeta ** (2 * k + 1) for k in range(10))
    p_v = sum((-1) ** k * v[2 * k] / zeta ** (2 * k) for k in range(10))
    q_v = sum((-1) ** k * v[2 * k + 1] / zeta ** (2 * k + 1) for k in range(10))
    phase = zeta + math.pi / 4
    value = (math.sin(phase) * p_u - math.cos(phase) * q_u) / (math.sqrt(math.pi) * x**0.25)
    slope = -(x**0.25) * (math.cos(phase) * p_v + math.sin(phase) * q_v) / math.sqrt(math.pi)
    return value, slope


def _taylor(c: float) -> list[float]:
    """Taylor coefficients of Ai about c, from the ODE."""
    value, slope = _ai_and_derivative(c)
    a = [value, slope, c * value / 2]
    for n in range(1, _DEGREE - 1):
        a.append((c * a[n] + a[n - 1]) / ((n + 2) * (n + 1)))
    return a[: _DEGREE + 1]


_TAYLOR = {c: _taylor(float(c)) for c in range(-_TAYLOR_REACH, _TAYLOR_REACH + 1)}
_U = _u(2 * _ASYMPTOTIC_TERMS)


def _near(x: torch.Tensor) -> torch.Tensor:
    centre = torch.clamp(torch.round(x), -_TAYLOR_REACH, _TAYLOR_REACH)
    t = x - centre
    result = torch.zeros_like(x)
    for c, coefficients in _TAYLOR.items():
        value = torch.full_like(t, coefficients[-1])
        for a in reversed(coefficients[:-1]):
            value = value * t + a
        result = torch.where(centre == c, value, result)
    return result


def _far_right(x: torch.Tensor) -> torch.Tensor:
    x = torch.clamp(x, min=_TAYLOR_REACH)
    zeta = 2 / 3 * x * torch.sqrt(x)
    series = torch.zeros_like(x)
    for k in reversed(range(_ASYMPTOTIC_TERMS)):
        series = series / zeta + (-1) ** k * _U[k]
    return torch.exp(-zeta) / (2 * math.sqrt(math.pi)) * series / torch.sqrt(torch.sqrt(x))


def _far_left(x: torch.Tensor) -> torch.Tensor:
    x = torch.clamp(-x, min=_TAYLOR_REACH)
    zeta = 2 / 3 * x * torch.sqrt(x)
    inverse_square = 1 / (zeta * zeta)
    p = torch.zeros_like(x)
    q = torch.zeros_like(x)
    for k in reversed(range(_ASYMPTOTIC_TERMS // 2)):
        p = p * -inverse_square + _U[2 * k]
        q = q * -inverse_square + _U[2 * k + 1]
    q = q / zeta
    phase = zeta + math.pi / 4
    return (torch.sin(phase) * p - torch.cos(phase) * q) / (
        math.sqrt(math.pi) * torch.sqrt(torch.sqrt(x))
    )


@lowering_rule(aten.special_airy_ai.default)
@elementwise
def airy_ai(x):
    reach = _TAYLOR_REACH + 0.5
    value = torch.where(x > reach, _far_right(x), torch.where(x < -reach, _far_left(x), _near(x)))
    # NaN stays NaN; +inf gives NaN as PyTorch's CPU kernel does (not the limit 0)
    value = torch.where(torch.isposinf(x), torch.full_like(x, math.nan), value)
    return torch.where(torch.isnan(x), x, value)
