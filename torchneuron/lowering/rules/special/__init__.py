"""Special functions written as elementwise arithmetic (no loops, no tables in memory).

torch-mlir has no StableHLO lowering for these ATen ops (PyTorch's own
decompositions of most of them end in ``prims`` ops that nothing lowers). Each
is a published approximation accurate to a few 1e-7 relative in float32, the
precision the NeuronCore computes in (there is no float64 on the chip):
bfloat16 and float16 inputs are computed in float32 and rounded once.

Sources of the approximations (formulas and coefficients):

- Abramowitz & Stegun, *Handbook of Mathematical Functions*: 9.4.1–9.4.6 (J0, J1,
  Y0, Y1), 9.8.1–9.8.8 (I0, I1, K0, K1);
- Press et al., *Numerical Recipes* 2nd ed. §6.1 (ln Gamma, Lanczos g=5) and §6.2
  (erfc, Chebyshev fit with fractional error < 1.2e-7);
- M. Giles, "Approximating the erfinv function", GPU Computing Gems (2011),
  single-precision coefficients;
- the Euler–Maclaurin formula for the Hurwitz zeta function (Bernoulli numbers
  computed below), and the asymptotic series of digamma.

One module per family: ``airy`` (Ai by Taylor pieces from the ODE and DLMF 9.7's
asymptotic forms), ``gamma`` (ln Gamma, digamma, zeta, polygamma, incomplete
gamma), ``error_functions`` (erfc, erfcx, log_ndtr, erfinv, ndtri), ``bessel``,
``polynomials`` (orthogonal polynomials) and ``elementary`` (angle, hypot, frexp);
``common`` holds the float32 compute wrapper they share. Importing this package
registers every rule of every family; the rule functions are re-exported here.
"""

from __future__ import annotations

from . import airy, bessel, elementary, error_functions, gamma, polynomials
from .bessel import (
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    i0e,
    i1e,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from .elementary import angle, frexp, hypot
from .error_functions import erfc, erfcx, erfinv, log_ndtr, ndtri
from .gamma import digamma, igamma, igammac, lgamma, polygamma, zeta
from .polynomials import POLYNOMIALS, RECURRENCE_DEGREES

__all__ = [
    "POLYNOMIALS",
    "RECURRENCE_DEGREES",
    "angle",
    "airy",
    "bessel",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "digamma",
    "elementary",
    "erfc",
    "erfcx",
    "erfinv",
    "error_functions",
    "frexp",
    "gamma",
    "hypot",
    "i0e",
    "i1e",
    "igamma",
    "igammac",
    "lgamma",
    "log_ndtr",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "ndtri",
    "polygamma",
    "polynomials",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    "zeta",
]
