"""The gamma family: ln Gamma (Lanczos, Numerical Recipes 2nd ed. §6.1), digamma (its
asymptotic series), the Hurwitz zeta function (Euler–Maclaurin, Bernoulli numbers
computed here), polygamma, and the regularised incomplete gamma functions."""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from ...loops import counted_loop
from ..registry import lowering_rule
from .common import aten, elementwise, horner, nan_like, sin_pi, tan_pi

# Numerical Recipes 2nd ed. §6.1 (gammln): Lanczos with gamma = 5, N = 6.
_LANCZOS = (
    76.18009172947146,
    -86.50532032941677,
    24.01409824083091,
    -1.231739572450155,
    0.1208650973866179e-2,
    -0.5395239384953e-5,
)


def _lgamma_right(x: torch.Tensor) -> torch.Tensor:
    """ln Gamma(x) for x >= 0.5."""
    series = torch.full_like(x, 1.000000000190015)
    for j, c in enumerate(_LANCZOS):
        series = series + c / (x + (j + 1))
    tmp = x + 5.5
    return (x + 0.5) * torch.log(tmp) - tmp + torch.log(2.5066282746310005 * series / x)


def _lgamma(x: torch.Tensor) -> torch.Tensor:
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) for x < 0.5
    left = x < 0.5
    mirrored = torch.where(left, 1 - x, x)
    right_value = _lgamma_right(mirrored)
    reflected = math.log(math.pi) - torch.log(torch.abs(sin_pi(x))) - right_value
    result = torch.where(left, reflected, right_value)
    pole = (x <= 0) & (x == torch.floor(x))
    return torch.where(
        pole, torch.full_like(x, math.inf), torch.where(torch.isinf(x), torch.abs(x), result)
    )


@lowering_rule(aten.lgamma.default)
@elementwise
def lgamma(x):
    return _lgamma(x)


def _digamma(x: torch.Tensor) -> torch.Tensor:
    # psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0.5; psi(y) = psi(y + 6) - sum 1/(y + k);
    # psi(w), w >= 6: log w - 1/(2w) - sum B_2k / (2k w^2k)
    left = x < 0.5
    y = torch.where(left, 1 - x, x)
    shift = torch.zeros_like(y)
    for k in range(6):
        shift = shift + 1 / (y + k)
    w = y + 6
    inverse_square = 1 / (w * w)
    tail = horner(inverse_square, [0.0, 1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132])
    psi_y = torch.log(w) - 0.5 / w - tail - shift
    result = torch.where(left, psi_y - math.pi / tan_pi(x), psi_y)
    negative_integer = (x < 0) & (x == torch.floor(x))
    result = torch.where(negative_integer, nan_like(x), result)
    # digamma(+0) = -inf, digamma(-0) = +inf (1/x tells the zeros apart)
    zero_limit = torch.where(1 / x < 0, torch.full_like(x, math.inf), torch.full_like(x, -math.inf))
    result = torch.where(x == 0, zero_limit, result)
    return torch.where(x == math.inf, x, result)


@lowering_rule(aten.digamma.default)
@elementwise
def digamma(x):
    return _digamma(x)


def _bernoulli_numbers(count: int) -> list[Fraction]:
    """B_0 .. B_{count-1} (B_1 = -1/2), from the defining recurrence."""
    numbers = [Fraction(1)]
    for m in range(1, count):
        numbers.append(-sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return numbers


# Euler–Maclaurin tail terms B_2j / (2j)! for j = 1..12.
_BERNOULLI = _bernoulli_numbers(26)
_ZETA_TAIL = [float(_BERNOULLI[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]
_ZETA_DIRECT_TERMS = 9  # terms summed directly before the tail (for q >= 0)
_ZETA_EXTRA_TERMS = 24  # more direct terms while q + k < 9, for q down to -24


def _hurwitz_zeta(s: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """zeta(s, q) = sum_k (q + k)^-s, by Euler–Maclaurin after the first terms."""
    # direct terms while q + k is small: at least 9, more for negative q
    terms = torch.clamp(torch.ceil(_ZETA_DIRECT_TERMS - q), min=_ZETA_DIRECT_TERMS)
    total = torch.zeros_like(q)
    for k in range(_ZETA_DIRECT_TERMS + _ZETA_EXTRA_TERMS):
        term = torch.pow(q + k, -s)
        total = total + torch.where(k < terms, term, torch.zeros_like(term))
    w = q + torch.clamp(terms, max=_ZETA_DIRECT_TERMS + _ZETA_EXTRA_TERMS)
    total = total + torch.pow(w, 1 - s) / (s - 1) + 0.5 * torch.pow(w, -s)
    rising = torch.ones_like(s)  # s (s+1) ... (s + 2j - 2)
    power = torch.pow(w, -s - 1)  # w^(-s - 2j + 1)
    for j, coefficient in enumerate(_ZETA_TAIL, start=1):
        if j == 1:
            rising = rising * s
        else:
            rising = rising * (s + (2 * j - 3)) * (s + (2 * j - 2))
        total = total + coefficient * rising * power
        power = power / (w * w)
    nan, inf = nan_like(q), torch.full_like(q, math.inf)
    q_integer = q == torch.floor(q)
    result = torch.where(s == 1, inf, total)
    result = torch.where(s < 1, nan, result)
    result = torch.where((q <= 0) & q_integer & (s > 1), inf, result)
    result = torch.where((q <= 0) & ~q_integer & (s != torch.floor(s)) & (s > 1), nan, result)
    return torch.where(q < -(_ZETA_EXTRA_TERMS - 1), torch.where(q_integer, result, nan), result)


@lowering_rule(aten.special_zeta.default)
@elementwise
def zeta(s, q):
    return _hurwitz_zeta(s, q)


@lowering_rule(aten.polygamma.default)
def polygamma(n, self):
    # polygamma(0, x) = digamma(x); polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)
    if n == 0:
        return digamma(self)

    def compute(x):
        factor = (-1.0 if n % 2 == 0 else 1.0) * math.factorial(n)
        return factor * _hurwitz_zeta(torch.full_like(x, n + 1.0), x)

    return elementwise(compute)(self)


# Regularized incomplete gamma: the power series of P(a, x) where x <= a or x <= 1, the
# continued fraction of Q(a, x) (evaluated by the modified Lentz method) elsewhere; both
# to a fixed number of terms, ample for arguments up to a few hundred, each a loop of the
# program (``loops.counted_loop``).
_GAMMA_SERIES_TERMS = 96
_GAMMA_FRACTION_TERMS = 64
_TINY = 1e-30


def _lower_gamma_series(a, x):
    def add_term(n, term, total, a, x):
        term = term * x / (a + n)
        return n + 1, term, total + term

    one = torch.ones((), dtype=x.dtype, device=x.device)
    start = (one, torch.ones_like(x), torch.ones_like(x))
    _, _, total = counted_loop(_GAMMA_SERIES_TERMS - 1, add_term, start, (a, x))
    log_prefactor = a * torch.log(x) - x - _lgamma(a + 1)
    return torch.exp(log_prefactor) * total


def _upper_gamma_fraction(a, x):
    def guarded(v):
        return torch.where(torch.abs(v) < _TINY, torch.full_like(v, _TINY), v)

    def next_convergent(i, b, c, d, h, a):
        an = -i * (i - a)
        b = b + 2
        d = 1 / guarded(an * d + b)
        c = guarded(b + an / c)
        return i + 1, b, c, d, h * d * c

    b = x + 1 - a
    d = 1 / guarded(b)
    one = torch.ones((), dtype=x.dtype, device=x.device)
    start = (one, b, torch.full_like(x, 1 / _TINY), d, d.clone())
    *_, h = counted_loop(_GAMMA_FRACTION_TERMS - 1, next_convergent, start, (a,))
    log_prefactor = a * torch.log(x) - x - _lgamma(a)
    return torch.exp(log_prefactor) * h


def _incomplete_gamma(a, x, upper: bool):
    safe_x = torch.where(x > 0, x, torch.ones_like(x))
    safe_a = torch.where(a > 0, a, torch.ones_like(a))
    by_fraction = (safe_x > 1) & (safe_x > safe_a)
    q = _upper_gamma_fraction(safe_a, torch.where(by_fraction, safe_x, safe_a + 2))
    p = _lower_gamma_series(safe_a, torch.where(by_fraction, torch.ones_like(x), safe_x))
    lower = torch.where(by_fraction, 1 - q, p)
    value = 1 - lower if upper else lower
    if upper:
        value = torch.where(by_fraction, q, value)
    zero, one = torch.zeros_like(x), torch.ones_like(x)
    value = torch.where(x == 0, one if upper else zero, value)
    value = torch.where((a == 0) & (x > 0), zero if upper else one, value)
    value = torch.where(torch.isinf(x) & (x > 0), zero if upper else one, value)
    return torch.where((a < 0) | (x < 0) | torch.isnan(a) | torch.isnan(x), nan_like(x), value)


@lowering_rule(aten.igamma.default)
@elementwise
def igamma(a, x):
    a, x = torch.broadcast_tensors(a, x)
    return _incomplete_gamma(a, x, upper=False)


@lowering_rule(aten.igammac.default)
@elementwise
def igammac(a, x):
    a, x = torch.broadcast_tensors(a, x)
    return _incomplete_gamma(a, x, upper=True)
