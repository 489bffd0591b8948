"""Extremes and truth reductions: argmax/argmin, max/min (with indices), amax/amin, all/any.

What torch-mlir gets wrong here, each rewritten into ops it lowers exactly:

- NaN: PyTorch's ``argmax``/``argmin`` and ``max``/``min`` along a dim treat NaN as
  the extreme and report the *first* NaN; the lowered comparisons skip it. Here the
  value is ``amax``/``amin`` (NaN-propagating) and the index is the first position
  holding it, or holding a NaN.
- ``uint8`` and ``bool``: torch-mlir types the reductions' initial values and
  comparisons as signed (``amin`` over ``uint8`` started from 127; XLA's verifier
  rejects the signed comparisons of ``argmax``), so they are computed on ``int32``,
  which holds every value, and narrowed back.
- ``all``/``any``: torch-mlir reduced a ``uint8`` input bitwise (``all([1, 2])`` gave 0)
  and has no lowering of ``all`` over several dims; here they count the elements that
  are (or are not) zero. For a ``uint8`` input PyTorch returns ``uint8`` (0 or 1), for
  every other input ``bool``.
- 0-d inputs: torch-mlir's reduction lowerings assume rank >= 1; a 0-d input is
  reduced as a 1-element vector.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_NARROW_UNSIGNED = (torch.bool, torch.uint8)


def _dims(self: torch.Tensor, dim) -> list[int]:
    """The reduced dims, non-negative; None or an empty list reduces all of them."""
    if dim is None:
        return list(range(self.dim()))
    if isinstance(dim, int):
        return [dim % max(self.dim(), 1)]
    return [d % max(self.dim(), 1) for d in dim] or list(range(self.dim()))


def _widened(self: torch.Tensor) -> torch.Tensor:
    # bool/uint8 -> int32: the same order, with no sign to lose
    return self.to(torch.int32) if self.dtype in _NARROW_UNSIGNED else self


def _first_extreme(self: torch.Tensor, dim: int, keepdim: bool, extreme):
    """(value, first index) of the extreme along ``dim``, NaN counting as the extreme."""
    wide = _widened(self)
    value = extreme(wide, dim, keepdim=True)
    hit = wide == value
    if wide.is_floating_point():
        hit = hit | torch.isnan(wide)
    length = self.shape[dim]
    shape = [1] * self.dim()
    shape[dim] = length
    positions = torch.arange(length, device=self.device).view(shape)
    index = torch.where(hit, positions, torch.full_like(positions, length)).amin(dim, keepdim=True)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value.to(self.dtype), index


def _arg_extreme(extreme):
    def rule(self, dim=None, keepdim=False):
        # argmax(x, d) -> min{i : x_i == amax(x, d) or x_i is NaN}
        if self.dim() == 0:
            return torch.zeros((), dtype=torch.int64, device=self.device)
        if dim is None:
            flat = self.reshape(-1)
            if flat.shape[0] == 0:
                return NotImplemented
            index = _first_extreme(flat, 0, False, extreme)[1]
            return index.reshape([1] * self.dim()) if keepdim else index
        dim = dim % self.dim()
        if self.shape[dim] == 0:
            return NotImplemented
        return _first_extreme(self, dim, keepdim, extreme)[1]

    rule.__name__ = f"first_{extreme.__name__}_index"
    return rule


lowering_rule(aten.argmax.default)(_arg_extreme(torch.amax))
lowering_rule(aten.argmin.default)(_arg_extreme(torch.amin))


def _extreme_with_index(extreme):
    def rule(self, dim, keepdim=False):
        # max(x, d) -> (amax(x, d), the first index holding it or a NaN)
        if self.dim() == 0:
            return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
        dim = dim % self.dim()
        if self.shape[dim] == 0:
            return NotImplemented
        return _first_extreme(self, dim, keepdim, extreme)

    rule.__name__ = f"{extreme.__name__}_with_first_index"
    return rule


lowering_rule(aten.max.dim)(_extreme_with_index(torch.amax))
lowering_rule(aten.min.dim)(_extreme_with_index(torch.amin))


def _value_extreme(extreme):
    def rule(self, dim=(), keepdim=False):
        # amax(x) on bool/uint8 -> amax(int32(x)); on 0-d x -> x
        if self.dim() == 0:
            return self.clone()
        if self.dtype not in _NARROW_UNSIGNED:
            return NotImplemented
        return extreme(self.to(torch.int32), _dims(self, dim), keepdim).to(self.dtype)

    rule.__name__ = f"widened_{extreme.__name__}"
    return rule


lowering_rule(aten.amax.default)(_value_extreme(torch.amax))
lowering_rule(aten.amin.default)(_value_extreme(torch.amin))


def _whole_extreme(extreme):
    def rule(self):
        # max(x) on bool/uint8 -> amax(int32(x)) over every dim
        if self.dtype not in _NARROW_UNSIGNED or self.numel() == 0:
            return NotImplemented
        return extreme(self.to(torch.int32).reshape(-1), [0], False).to(self.dtype)

    rule.__name__ = f"whole_{extreme.__name__}"
    return rule


lowering_rule(aten.max.default)(_whole_extreme(torch.amax))
lowering_rule(aten.min.default)(_whole_extreme(torch.amin))


def _truth(every: bool):
    def rule(self, dim=None, keepdim=False):
        # all(x, d) -> sum(x == 0, d) == 0; any(x, d) -> sum(x != 0, d) != 0 (empty: the
        # identity); a uint8 input gives uint8 (0 or 1), every other input bool
        if self.dim() == 0 or (isinstance(dim, (list, tuple)) and not dim):
            result = self != 0  # (an empty dim list reduces nothing here, unlike amax's)
        else:
            failing = self == 0 if every else self != 0
            count = failing.to(torch.int64).sum(_dims(self, dim), keepdim=keepdim)
            result = count == 0 if every else count != 0
        return result.to(torch.uint8) if self.dtype == torch.uint8 else result

    rule.__name__ = "all" if every else "any"
    return rule


def _truth_whole(every: bool):
    reduce = _truth(every)

    def rule(self):
        # all(x) -> all(x, every dim)
        return reduce(self, None, False)

    rule.__name__ = f"{reduce.__name__}_whole"
    return rule


lowering_rule(aten.all.dim, aten.all.dims)(_truth(True))
lowering_rule(aten.any.dim, aten.any.dims)(_truth(False))
lowering_rule(aten.all.default)(_truth_whole(True))
lowering_rule(aten.any.default)(_truth_whole(False))
