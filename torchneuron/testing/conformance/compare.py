"""Comparing a result computed on the NeuronCore with PyTorch eager on the CPU.

Tolerances per dtype, and why they are what they are:

- float32: ``rtol=1e-4, atol=1e-5``. PyTorch's default for float32 is
  ``rtol=1.3e-6, atol=1e-5`` (about 10 ulp). The emulator computes with XLA's
  CPU backend, whose transcendental functions (exp, log, tanh, erf, pow...) are
  its own polynomial approximations, accurate to a few ulp but not the same
  few ulp as PyTorch's SLEEF/libm kernels, and whose reductions and matmuls sum
  in a different order; composite ops (norms, losses, softmax) then amplify the
  difference. 1e-4 relative still catches every real error (a wrong formula, a
  wrong axis or a dropped term is off by far more).
- bfloat16: ``rtol=1.6e-2, atol=1e-2``: PyTorch's bfloat16 ``rtol`` (two steps of
  bfloat16's 8-bit mantissa). The absolute term is raised from 1e-5 because a
  bfloat16 result near zero that came from a cancellation is one rounding step
  of the *inputs'* magnitude away, not of its own; XLA keeps bfloat16
  intermediates in float32 inside fused ops where PyTorch rounds each step.
- float16: PyTorch's ``rtol=1e-3`` and the same ``atol`` reasoning as bfloat16.

For half-precision dtypes the runner accepts a result that matches either PyTorch's
CPU kernel or the float32 computation of the same inputs rounded once (the CPU
kernels differ in where they round intermediates; the NeuronCore's engines compute
in fp32 and round on write).
- integers and bool: exact.
- complex dtypes: the real and imaginary parts at the component dtype's tolerance
  (complex64: float32's, complex32: float16's, complex128: float64's), the relative
  term taken of the reference's magnitude ``|z|``, as ``torch.isclose`` does for
  complex values (``torch.testing.assert_close``'s check).
- sparse results: the layout must be the reference's, then the dense values are
  compared (a coalesced result equals an uncoalesced reference with the same value).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils import _pytree as pytree

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
    torch.complex64: (1e-4, 1e-5),
}


class Mismatch(Exception):
    """The result differs from the CPU reference; the message says where and by how much."""


def check_close(actual: Any, expected: Any, *, values: bool = True) -> None:
    """Raise ``Mismatch`` unless ``actual`` matches ``expected`` (nested outputs allowed).

    Tensors must agree in shape and dtype, and (when ``values``) in value within
    the dtype's tolerance, NaN matching NaN. ``values=False`` compares metadata
    only, for ops whose values are unspecified (``torch.empty``).
    """
    actual_leaves, _ = pytree.tree_flatten(actual)
    expected_leaves, expected_spec = pytree.tree_flatten(expected)
    if len(actual_leaves) != len(expected_leaves):
        raise Mismatch(
            f"output structure differs: {len(actual_leaves)} values, expected "
            f"{len(expected_leaves)} ({expected_spec})"
        )
    for index, (got, want) in enumerate(zip(actual_leaves, expected_leaves)):
        where = f"output {index}" if len(expected_leaves) > 1 else "output"
        _check_leaf(got, want, where, values)


def _check_leaf(got: Any, want: Any, where: str, values: bool) -> None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Mismatch(f"{where}: a {type(got).__name__}, expected a tensor")
        if got.shape != want.shape:
            raise Mismatch(f"{where}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if got.dtype != want.dtype:
            raise Mismatch(f"{where}: dtype {got.dtype}, expected {want.dtype}")
        if got.layout != want.layout:
            raise Mismatch(f"{where}: layout {got.layout}, expected {want.layout}")
        if values:
            got, want = got.detach().cpu(), want.detach().cpu()
            if want.layout != torch.strided:
                # the same dense value; coalescing and entry order may differ
                got, want = got.to_dense(), want.to_dense()
            _check_values(got, want, where)
        return
    if isinstance(want, float) and isinstance(got, (float, int)):
        if not (
            math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6)
            or (math.isnan(got) and math.isnan(want))
        ):
            raise Mismatch(f"{where}: {got!r}, expected {want!r}")
        return
    if values and got != want:
        raise Mismatch(f"{where}: {got!r}, expected {want!r}")


def _check_values(
    got: torch.Tensor, want: torch.Tensor, where: str, scale: torch.Tensor | None = None
) -> None:
    if got.is_complex():
        # each part at the component dtype's tolerance, the relative term scaled by the
        # reference's magnitude (as torch.isclose does for complex values): a part that
        # cancels to ~0 carries the rounding error of the whole value
        want = want.resolve_conj()
        magnitude = want.to(torch.complex128).abs().unsqueeze(-1)
        _check_values(
            torch.view_as_real(got.resolve_conj()),
            torch.view_as_real(want),
            where,
            magnitude.expand(*want.shape, 2),
        )
        return
    if not got.is_floating_point():
        if not torch.equal(got, want):
            differing = int((got != want).sum())
            raise Mismatch(
                f"{where}: {differing} of {want.numel()} elements differ "
                f"(exact comparison for {want.dtype})"
            )
        return
    rtol, atol = TOLERANCES.get(want.dtype, (1e-4, 1e-5))
    got64, want64 = got.double(), want.double()
    same_nan = torch.isnan(got64) == torch.isnan(want64)
    if not bool(same_nan.all()):
        count = int((~same_nan).sum())
        raise Mismatch(f"{where}: NaN in {count} places where the reference differs")
    finite = torch.isfinite(want64) & torch.isfinite(got64)
    same_inf = torch.where(torch.isinf(want64) | torch.isinf(got64), got64 == want64, True)
    if not bool(same_inf.all()):
        count = int((~same_inf).sum())
        raise Mismatch(f"{where}: infinities differ in {count} places")
    error = torch.where(finite, (got64 - want64).abs(), 0.0)
    reference = want64.abs() if scale is None else scale
    allowed = atol + rtol * torch.where(finite, reference, 0.0)
    bad = error > allowed
    if bool(bad.any()):
        worst = int(torch.argmax(torch.where(bad, error - allowed, -1.0)))
        flat_got, flat_want = got64.reshape(-1), want64.reshape(-1)
        raise Mismatch(
            f"{where}: {int(bad.sum())} of {want.numel()} elements differ beyond "
            f"rtol={rtol:g}, atol={atol:g}; worst: {float(flat_got[worst]):.6g} vs "
            f"{float(flat_want[worst]):.6g} (max abs error {float(error.max()):.3g})"
        )
