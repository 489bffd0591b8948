"""Bessel functions: J0, J1, Y0, Y1 (Abramowitz & Stegun 9.4.1–9.4.6), the modified
I0, I1, K0, K1 and their scaled forms (9.8.1–9.8.8), and the spherical j0."""

from __future__ import annotations

import math

import torch

from ..registry import lowering_rule
from .common import aten, elementwise, horner, nan_like

_J0_SMALL = (1.0, -2.2499997, 1.2656208, -0.3163866, 0.0444479, -0.0039444, 0.0002100)
_Y0_SMALL = (0.36746691, 0.60559366, -0.74350384, 0.25300117, -0.04261214, 0.00427916, -0.00024846)
_F0 = (0.79788456, -0.00000077, -0.00552740, -0.00009512, 0.00137237, -0.00072805, 0.00014476)
_THETA0 = (-0.78539816, -0.04166397, -0.00003954, 0.00262573, -0.00054125, -0.00029333, 0.00013558)
_J1_SMALL = (0.5, -0.56249985, 0.21093573, -0.03954289, 0.00443319, -0.00031761, 0.00001109)
_Y1_SMALL = (-0.6366198, 0.2212091, 2.1682709, -1.3164827, 0.3123951, -0.0400976, 0.0027873)
_F1 = (0.79788456, 0.00000156, 0.01659667, 0.00017105, -0.00249511, 0.00113653, -0.00020033)
_THETA1 = (-2.35619449, 0.12499612, 0.00005650, -0.00637879, 0.00074348, 0.00079824, -0.00029166)


def _bessel_large(x, f_coefficients, theta_coefficients):
    """(amplitude, phase) of the x >= 3 forms: J = amplitude cos(phase), Y = amplitude sin."""
    z = 3 / x
    amplitude = horner(z, f_coefficients) / torch.sqrt(x)
    phase = x + horner(z, theta_coefficients)
    return amplitude, phase


def _j0(x):
    ax = torch.abs(x)
    small = horner((ax / 3) ** 2, _J0_SMALL)
    amplitude, phase = _bessel_large(torch.clamp(ax, min=3), _F0, _THETA0)
    return torch.where(ax <= 3, small, amplitude * torch.cos(phase))


def _j1(x):
    ax = torch.abs(x)
    small = ax * horner((ax / 3) ** 2, _J1_SMALL)
    amplitude, phase = _bessel_large(torch.clamp(ax, min=3), _F1, _THETA1)
    value = torch.where(ax <= 3, small, amplitude * torch.cos(phase))
    return torch.where(x < 0, -value, value)


def _y_domain(x, value):
    value = torch.where(x == 0, torch.full_like(x, -math.inf), value)
    return torch.where(x < 0, nan_like(x), value)


@lowering_rule(aten.special_bessel_j0.default)
@elementwise
def bessel_j0(x):
    return _j0(x)


@lowering_rule(aten.special_bessel_j1.default)
@elementwise
def bessel_j1(x):
    return _j1(x)


@lowering_rule(aten.special_bessel_y0.default)
@elementwise
def bessel_y0(x):
    safe = torch.where(x > 0, x, torch.ones_like(x))
    small = (2 / math.pi) * torch.log(safe / 2) * _j0(safe) + horner((safe / 3) ** 2, _Y0_SMALL)
    amplitude, phase = _bessel_large(torch.clamp(safe, min=3), _F0, _THETA0)
    return _y_domain(x, torch.where(safe <= 3, small, amplitude * torch.sin(phase)))


@lowering_rule(aten.special_bessel_y1.default)
@elementwise
def bessel_y1(x):
    safe = torch.where(x > 0, x, torch.ones_like(x))
    small = (
        (2 / math.pi) * safe * torch.log(safe / 2) * _j1(safe) + horner((safe / 3) ** 2, _Y1_SMALL)
    ) / safe
    amplitude, phase = _bessel_large(torch.clamp(safe, min=3), _F1, _THETA1)
    return _y_domain(x, torch.where(safe <= 3, small, amplitude * torch.sin(phase)))


_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)
_I0_LARGE = (
    0.39894228,
    0.01328592,
    0.00225319,
    -0.00157565,
    0.00916281,
    -0.02057706,
    0.02635537,
    -0.01647633,
    0.00392377,
)
_I1_SMALL = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411)
_I1_LARGE = (
    0.39894228,
    -0.03988024,
    -0.00362018,
    0.00163801,
    -0.01031555,
    0.02282967,
    -0.02895312,
    0.01787654,
    -0.00420059,
)
_K0_SMALL = (-0.57721566, 0.42278420, 0.23069756, 0.03488590, 0.00262698, 0.00010750, 0.00000740)
_K0_LARGE = (1.25331414, -0.07832358, 0.02189568, -0.01062446, 0.00587872, -0.00251540, 0.00053208)
_K1_SMALL = (1.0, 0.15443144, -0.67278579, -0.18156897, -0.01919402, -0.00110404, -0.00004686)
_K1_LARGE = (1.25331414, 0.23498619, -0.03655620, 0.01504268, -0.00780353, 0.00325614, -0.00068245)


def _scaled_i(x, small_coefficients, large_coefficients, odd: bool):
    """e^-|x| I_nu(x) for nu = 0 (even) or 1 (odd)."""
    ax = torch.abs(x)
    t_small = (torch.clamp(ax, max=3.75) / 3.75) ** 2
    small = horner(t_small, small_coefficients) * torch.exp(-ax)
    if odd:
        small = small * ax
    large_x = torch.clamp(ax, min=3.75)
    large = horner(3.75 / large_x, large_coefficients) / torch.sqrt(large_x)
    value = torch.where(ax <= 3.75, small, large)
    return torch.where(x < 0, -value, value) if odd else value


def _scaled_k(x, nu: int):
    """e^x K_nu(x), x > 0 (NaN below, inf at 0)."""
    safe = torch.where(x > 0, x, torch.ones_like(x))
    half_square = (torch.clamp(safe, max=2) / 2) ** 2
    if nu == 0:
        i0 = _scaled_i(safe, _I0_SMALL, _I0_LARGE, odd=False) * torch.exp(safe)
        small = -torch.log(safe / 2) * i0 + horner(half_square, _K0_SMALL)
        large_coefficients = _K0_LARGE
    else:
        i1 = _scaled_i(safe, _I1_SMALL, _I1_LARGE, odd=True) * torch.exp(safe)
        small = (safe * torch.log(safe / 2) * i1 + horner(half_square, _K1_SMALL)) / safe
        large_coefficients = _K1_LARGE
    small = small * torch.exp(safe)
    large_x = torch.clamp(safe, min=2)
    large = horner(2 / large_x, large_coefficients) / torch.sqrt(large_x)
    value = torch.where(safe <= 2, small, large)
    value = torch.where(x == 0, torch.full_like(x, math.inf), value)
    return torch.where(x < 0, nan_like(x), value)


def _unscaled(scaled, x):
    # I(x) = e^|x| (e^-|x| I(x)); the large-x form stays finite until e^|x| itself overflows
    return scaled * torch.exp(torch.abs(x))


@lowering_rule(aten.i0.default, aten.special_modified_bessel_i0.default)
@elementwise
def modified_bessel_i0(x):
    return _unscaled(_scaled_i(x, _I0_SMALL, _I0_LARGE, odd=False), x)


@lowering_rule(aten.special_i0e.default)
@elementwise
def i0e(x):
    return _scaled_i(x, _I0_SMALL, _I0_LARGE, odd=False)


@lowering_rule(aten.special_i1.default, aten.special_modified_bessel_i1.default)
@elementwise
def modified_bessel_i1(x):
    return _unscaled(_scaled_i(x, _I1_SMALL, _I1_LARGE, odd=True), x)


@lowering_rule(aten.special_i1e.default)
@elementwise
def i1e(x):
    return _scaled_i(x, _I1_SMALL, _I1_LARGE, odd=True)


@lowering_rule(aten.special_modified_bessel_k0.default)
@elementwise
def modified_bessel_k0(x):
    return _scaled_k(x, 0) * torch.exp(-x)


@lowering_rule(aten.special_modified_bessel_k1.default)
@elementwise
def modified_bessel_k1(x):
    return _scaled_k(x, 1) * torch.exp(-x)


@lowering_rule(aten.special_scaled_modified_bessel_k0.default)
@elementwise
def scaled_modified_bessel_k0(x):
    return _scaled_k(x, 0)


@lowering_rule(aten.special_scaled_modified_bessel_k1.default)
@elementwise
def scaled_modified_bessel_k1(x):
    return _scaled_k(x, 1)


@lowering_rule(aten.special_spherical_bessel_j0.default)
@elementwise
def spherical_bessel_j0(x):
    # j0(x) = sin(x) / x, 1 at 0
    safe = torch.where(x == 0, torch.ones_like(x), x)
    return torch.where(x == 0, torch.ones_like(x), torch.sin(safe) / safe)
