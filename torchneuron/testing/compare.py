"""The test tools' one comparator: a result of the backend against PyTorch's on the CPU.

``check_close(actual, expected, rules=...)`` raises ``Mismatch`` naming the first
leaf that differs and how. Both tools use it: conformance compares an OpInfo
sample's result, the fuzzer the whole state after a call (result and inputs).

Rules (``RULES``):

- ``approx`` (the default): floating values within the dtype's tolerance below,
  NaN and infinities in the same places.
- ``ieee``: one correctly rounded IEEE operation (add, sub, mul, div): the relative
  tolerance only (no absolute term, so a flushed denormal is a difference), and the
  sign of an exact zero must match.
- ``exact``: bit for bit, -0.0 and NaN positions included (neg, abs, where, copies,
  indexing, sorting, shape ops).
- ``metadata``: structure, shape, dtype and layout only, for ops whose values are
  unspecified (``torch.empty``).

Integer and bool tensors are always compared exactly. Python scalars: under
``approx`` a float matches within ``math.isclose(rel_tol=1e-5, abs_tol=1e-6)`` (an
int where a float is expected is a number like any other); under ``ieee`` and
``exact`` the type must be the same and the value equal (NaN matching NaN).

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
- complex dtypes: the real and imaginary parts at the component dtype's tolerance
  (complex64: float32's, complex32: float16's, complex128: float64's), the relative
  term taken of the reference's magnitude ``|z|``, as ``torch.isclose`` does for
  complex values (``torch.testing.assert_close``'s check): a part that cancels to
  about zero carries the rounding error of the whole value.
- sparse results: the layout must be the reference's, then the dense values are
  compared (a coalesced result equals an uncoalesced reference with the same value).

Conformance also accepts a half-precision result that matches the float32
computation of the same inputs rounded once (``conformance/opinfo.py``): PyTorch's
CPU kernels differ in where they round intermediates.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils import _pytree as pytree

RULES = ("approx", "ieee", "exact", "metadata")

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
}
_OTHER_FLOAT = (1e-4, 1e-5)  # float8 and other floating dtypes without an entry


class Mismatch(Exception):
    """The result differs from the CPU reference; the message says where and by how much."""


def check_close(actual: Any, expected: Any, *, rules: str = "approx", leaf: str = "output") -> None:
    """Raise ``Mismatch`` unless ``actual`` matches ``expected`` (nested structures allowed).

    ``leaf`` names the flattened leaves in messages ("output 2", "state leaf 3"); a
    lone leaf is named without its number.
    """
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}, not {rules!r}")
    actual_leaves, _ = pytree.tree_flatten(actual)
    expected_leaves, expected_spec = pytree.tree_flatten(expected)
    if len(actual_leaves) != len(expected_leaves):
        raise Mismatch(
            f"{leaf} structure differs: {len(actual_leaves)} values, expected "
            f"{len(expected_leaves)} ({expected_spec})"
        )
    for index, (got, want) in enumerate(zip(actual_leaves, expected_leaves)):
        where = f"{leaf} {index}" if len(expected_leaves) > 1 else leaf
        _check_leaf(got, want, where, rules)


def _check_leaf(got: Any, want: Any, where: str, rules: str) -> None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Mismatch(f"{where}: a {type(got).__name__}, expected a tensor")
        if got.shape != want.shape:
            raise Mismatch(f"{where}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if got.dtype != want.dtype:
            raise Mismatch(f"{where}: dtype {got.dtype}, expected {want.dtype}")
        if got.layout != want.layout:
            raise Mismatch(f"{where}: layout {got.layout}, expected {want.layout}")
        if rules != "metadata":
            got, want = got.detach().cpu(), want.detach().cpu()
            if want.layout != torch.strided:
                got, want = got.to_dense(), want.to_dense()
            _check_values(got, want, where, rules)
        return
    if rules == "metadata":
        return
    if rules == "approx" and isinstance(want, float) and isinstance(got, (float, int)):
        if not (
            math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6)
            or (math.isnan(got) and math.isnan(want))
        ):
            raise Mismatch(f"{where}: {got!r}, expected {want!r}")
        return
    both_nan = isinstance(want, float) and isinstance(got, float) and got != got and want != want
    strict = rules != "approx"
    if not both_nan and ((strict and type(got) is not type(want)) or got != want):
        raise Mismatch(f"{where}: {got!r}, expected {want!r}")


def _check_values(got: torch.Tensor, want: torch.Tensor, where: str, rules: str) -> None:
    scale = None
    if want.is_complex():
        got, want = got.resolve_conj(), want.resolve_conj()
        # each part at the component dtype's tolerance, relative to |z|
        scale = want.to(torch.complex128).abs().unsqueeze(-1).expand(*want.shape, 2)
        got, want = torch.view_as_real(got), torch.view_as_real(want)
    if not want.is_floating_point():
        if not torch.equal(got, want):
            _raise_first(got != want, got, want, where, f"exact comparison for {want.dtype}")
        return
    got64, want64 = got.double(), want.double()
    nan_got, nan_want = torch.isnan(got64), torch.isnan(want64)
    if not torch.equal(nan_got, nan_want):
        _raise_first(nan_got != nan_want, got, want, where, "NaN where the reference differs")
    numbers = ~nan_want
    if rules == "exact":
        same = (got64 == want64) & (torch.signbit(got64) == torch.signbit(want64))
        if not bool((same | ~numbers).all()):
            _raise_first(~same & numbers, got, want, where, "exact comparison, -0.0 included")
        return
    infinite = torch.isinf(got64) | torch.isinf(want64)
    if not bool(torch.where(infinite, got64 == want64, True).all()):
        _raise_first(infinite & (got64 != want64), got, want, where, "infinities differ")
    rtol, atol = TOLERANCES.get(want.dtype, _OTHER_FLOAT)
    if rules == "ieee":
        atol = 0.0
        zeros = (want64 == 0) & (got64 == 0)
        wrong_sign = zeros & (torch.signbit(got64) != torch.signbit(want64))
        if bool(wrong_sign.any()):
            _raise_first(wrong_sign, got, want, where, "sign of zero differs")
    finite = numbers & ~infinite
    error = torch.where(finite, (got64 - want64).abs(), 0.0)
    reference = want64.abs() if scale is None else scale
    allowed = atol + rtol * torch.where(finite, reference, 0.0)
    bad = error > allowed
    if bool(bad.any()):
        excess = torch.where(bad, error - allowed, -1.0)
        raise Mismatch(
            f"{where}: {int(bad.sum())} of {want.numel()} elements differ beyond "
            f"rtol={rtol:g}, atol={atol:g}; worst {_at(excess.argmax(), want)}: "
            f"{_item(got64, excess.argmax()):.6g} vs {_item(want64, excess.argmax()):.6g} "
            f"(max abs error {float(error.max()):.3g})"
        )


def _raise_first(bad: torch.Tensor, got, want, where: str, why: str) -> None:
    first = torch.nonzero(bad.reshape(-1))[0, 0]
    raise Mismatch(
        f"{where}: {int(bad.sum())} of {want.numel()} elements differ ({why}); "
        f"first {_at(first, want)}: got {_item(got, first)!r}, expected {_item(want, first)!r}"
    )


def _at(flat_index: torch.Tensor, like: torch.Tensor) -> str:
    if like.dim() == 0:
        return "at ()"
    position = torch.unravel_index(flat_index, like.shape)
    return f"at {[int(i) for i in position]}"


def _item(tensor: torch.Tensor, flat_index: torch.Tensor):
    return tensor.reshape(-1)[flat_index].item()
