"""The error-function family: erfc and erfcx (Numerical Recipes 2nd ed. §6.2, Chebyshev
fit with fractional error < 1.2e-7), log_ndtr, erfinv (M. Giles, "Approximating the
erfinv function", single-precision coefficients) and ndtri."""

from __future__ import annotations

import math

import torch

from ..registry import lowering_rule
from .common import aten, elementwise, horner

# Numerical Recipes §6.2 (erfcc): erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0.
_ERFC_POLY = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def _erfcx_nonnegative(z):
    """exp(z^2) erfc(z) for z >= 0."""
    t = 1 / (1 + 0.5 * z)
    return t * torch.exp(horner(t, _ERFC_POLY))


def _erfc(x):
    z = torch.abs(x)
    t = 1 / (1 + 0.5 * z)
    positive = t * torch.exp(-z * z + horner(t, _ERFC_POLY))
    return torch.where(x < 0, 2 - positive, positive)


@lowering_rule(aten.erfc.default)
@elementwise
def erfc(x):
    return _erfc(x)


@lowering_rule(aten.special_erfcx.default)
@elementwise
def erfcx(x):
    # erfcx(x) = exp(x^2) erfc(x); for x < 0: 2 exp(x^2) - erfcx(-x)
    z = torch.abs(x)
    positive = _erfcx_nonnegative(z)
    return torch.where(x < 0, 2 * torch.exp(x * x) - positive, positive)


@lowering_rule(aten.special_log_ndtr.default)
@elementwise
def log_ndtr(x):
    # log Phi(x): far left log(erfcx(-x/sqrt 2) / 2) - x^2/2, else log1p(-erfc(x/sqrt 2) / 2)
    z = x / math.sqrt(2)
    left = torch.log(_erfcx_nonnegative(torch.clamp(-z, min=0)) / 2) - z * z
    right = torch.log1p(-_erfc(z) / 2)
    return torch.where(x < -1, left, right)


# Giles (2011), single precision: erfinv(x) = x * P(w), w = -log((1 - x)(1 + x)).
_ERFINV_CENTRAL = (
    1.50140941,
    0.246640727,
    -0.00417768164,
    -0.00125372503,
    0.00021858087,
    -4.39150654e-06,
    -3.5233877e-06,
    3.43273939e-07,
    2.81022636e-08,
)
_ERFINV_TAIL = (
    2.83297682,
    1.00167406,
    0.00943887047,
    -0.0076224613,
    0.00573950773,
    -0.00367342844,
    0.00134934322,
    0.000100950558,
    -0.000200214257,
)


def _erfinv_from(x, w):
    central = horner(w - 2.5, _ERFINV_CENTRAL)
    tail = horner(torch.sqrt(w) - 3, _ERFINV_TAIL)
    return torch.where(w < 5, central, tail) * x


@lowering_rule(aten.erfinv.default)
@elementwise
def erfinv(x):
    value = _erfinv_from(x, -torch.log((1 - x) * (1 + x)))
    return torch.where(torch.abs(x) == 1, x * math.inf, value)


# Abramowitz & Stegun 26.2.23: the normal quantile's tail, |error| < 4.5e-4, as the start
# of Newton steps on log Phi (Giles' erfinv is fitted for float32 arguments of erfinv;
# quantiles of probabilities below ~1e-7 lie beyond it).
_TAIL_NUMERATOR = (2.515517, 0.802853, 0.010328)
_TAIL_DENOMINATOR = (1.0, 1.432788, 0.189269, 0.001308)
_DEEP_TAIL = 1e-6


def _lower_tail_quantile(p):
    t = torch.sqrt(-2 * torch.log(p))
    z = -(t - horner(t, _TAIL_NUMERATOR) / horner(t, _TAIL_DENOMINATOR))
    log_p = torch.log(p)
    for _ in range(3):
        # Newton on f(z) = log Phi(z) - log p:  f'(z) = phi(z) / Phi(z)
        log_cdf = log_ndtr(z)
        derivative = torch.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_cdf)
        z = z - (log_cdf - log_p) / derivative
    return z


@lowering_rule(aten.special_ndtri.default)
@elementwise
def ndtri(p):
    # ndtri(p) = sqrt(2) erfinv(2p - 1); (1 - x)(1 + x) = 4 p (1 - p) without cancellation
    central = math.sqrt(2) * _erfinv_from(2 * p - 1, -torch.log(4 * p * (1 - p)))
    deep = _lower_tail_quantile(torch.clamp(p, max=_DEEP_TAIL))
    value = torch.where(p < _DEEP_TAIL, deep, central)
    value = torch.where(p == 0, torch.full_like(p, -math.inf), value)
    return torch.where(p == 1, torch.full_like(p, math.inf), value)
