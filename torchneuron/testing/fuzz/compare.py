"""Comparing what a mode returned with PyTorch's CPU result, strictly.

The state compared is the function's result together with every input after the call
(so in-place ops and ``out=`` are checked where they write, views' bases included),
and whether the result aliases the input it must alias. Shapes and dtypes must be
equal; values as ``cases.COMPARISONS`` describes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchneuron.testing.conformance.compare import TOLERANCES


class Difference(Exception):
    """The mode's state differs from PyTorch's; the message says where and how."""


def check_state(got: Any, want: Any, comparison: str) -> None:
    """Raise ``Difference`` unless ``got`` matches ``want`` (nested structures)."""
    got_leaves, _ = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(want)
    if len(got_leaves) != len(want_leaves):
        raise Difference(
            f"{len(got_leaves)} results, PyTorch gives {len(want_leaves)} ({want_spec})"
        )
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        _check_leaf(g, w, f"leaf {index}", comparison)


def _check_leaf(got: Any, want: Any, where: str, comparison: str) -> None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Difference(f"{where}: a {type(got).__name__}, PyTorch returns a tensor")
        if got.dtype != want.dtype:
            raise Difference(f"{where}: dtype {got.dtype}, PyTorch gives {want.dtype}")
        if got.shape != want.shape:
            raise Difference(f"{where}: shape {tuple(got.shape)}, PyTorch {tuple(want.shape)}")
        _check_values(got.detach().cpu(), want.detach().cpu(), where, comparison)
        return
    if isinstance(want, float) and isinstance(got, float):
        if not (got == want or (got != got and want != want)):
            raise Difference(f"{where}: {got!r}, PyTorch gives {want!r}")
        return
    if type(got) is not type(want) or got != want:
        raise Difference(f"{where}: {got!r}, PyTorch gives {want!r}")


def _check_values(got: torch.Tensor, want: torch.Tensor, where: str, comparison: str) -> None:
    if want.is_complex():
        got, want = torch.view_as_real(got.resolve_conj()), torch.view_as_real(want.resolve_conj())
    if not want.is_floating_point():
        if not torch.equal(got, want):
            _raise_first(got != want, got, want, where, "exact comparison")
        return
    got64, want64 = got.double(), want.double()
    nan_got, nan_want = torch.isnan(got64), torch.isnan(want64)
    if not torch.equal(nan_got, nan_want):
        _raise_first(nan_got != nan_want, got, want, where, "NaN positions differ")
    both = ~nan_want
    if comparison == "exact":
        same = (got64 == want64) & (torch.signbit(got64) == torch.signbit(want64))
        if not bool((same | ~both).all()):
            _raise_first(~same & both, got, want, where, "exact comparison, -0.0 included")
        return
    infinite = torch.isinf(got64) | torch.isinf(want64)
    if not bool(torch.where(infinite, got64 == want64, True).all()):
        _raise_first(infinite & (got64 != want64), got, want, where, "infinities differ")
    rtol, atol = TOLERANCES.get(want.dtype, (1e-4, 1e-5))
    if comparison == "ieee":
        atol = 0.0
        zeros = (want64 == 0) & (got64 == 0)
        if not bool((torch.signbit(got64) == torch.signbit(want64))[zeros].all()):
            _raise_first(
                zeros & (torch.signbit(got64) != torch.signbit(want64)),
                got,
                want,
                where,
                "sign of zero differs",
            )
    finite = both & ~infinite
    error = torch.where(finite, (got64 - want64).abs(), 0.0)
    allowed = atol + rtol * torch.where(finite, want64.abs(), 0.0)
    bad = error > allowed
    if bool(bad.any()):
        _raise_first(bad, got, want, where, f"beyond rtol={rtol:g} atol={atol:g}")


def _raise_first(bad: torch.Tensor, got, want, where: str, why: str) -> None:
    count = int(bad.sum())
    position = tuple(int(i) for i in torch.nonzero(bad)[0]) if bad.dim() else ()
    g = got[position].item() if got.dim() else got.item()
    w = want[position].item() if want.dim() else want.item()
    raise Difference(
        f"{where}: {count} of {want.numel()} elements differ ({why}); "
        f"at {list(position)}: got {g!r}, PyTorch {w!r}"
    )
