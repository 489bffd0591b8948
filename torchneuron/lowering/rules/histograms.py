"""``histogramdd``'s three ops, natively: bin edges, and counts from bin counts or
from given edges.

Edges: per dimension, ``bins[d] + 1`` evenly spaced values from the data's minimum to
its maximum (or the given ``range``), widened by 0.5 each way where the two are equal,
as PyTorch does; spaced as ``linspace`` spaces them (from the start for the first half,
from the end for the second). Counts: a point falls in bin k of dimension d when
``edges[k] <= x < edges[k + 1]``, the last bin closed (x equal to the last edge counts
there), points outside any dimension's edges are not counted; ``weight`` weighs each
point, ``density`` divides by the total and by each bin's volume. Bins are found by
comparing with the edges themselves (not by arithmetic on the coordinates), so a point
on an edge goes where the CPU puts it. Tested against the CPU in
``tests/lowering/test_histograms.py``.
"""

from __future__ import annotations

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_FLOATING = (torch.float32, torch.float64)


def _points(self: torch.Tensor) -> torch.Tensor:
    return self.reshape(-1, self.shape[-1])


def _spaced(low: torch.Tensor, high: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` values from ``low`` to ``high`` as ``torch.linspace`` spaces them."""
    if count == 1:
        return low.reshape(1)
    step = (high - low) / (count - 1)
    index = torch.arange(count, dtype=low.dtype, device=low.device)
    halfway = count // 2
    from_start = low + index * step
    from_end = high - (count - 1 - index) * step
    return torch.where(index < halfway, from_start, from_end)


def _edges(self, bins, range_) -> list[torch.Tensor] | None:
    if self.dim() < 1 or self.dtype not in _FLOATING or len(bins) != self.shape[-1]:
        return None
    points = _points(self)
    dimensions = points.shape[-1]
    if range_ is not None:
        if len(range_) != 2 * dimensions:
            return None
        bounds = [(float(range_[2 * d]), float(range_[2 * d + 1])) for d in range(dimensions)]
        low = torch.stack([points.new_full((), b[0]) for b in bounds])
        high = torch.stack([points.new_full((), b[1]) for b in bounds])
    else:
        if points.shape[0] == 0:
            return None
        low, high = points.amin(0), points.amax(0)
    equal = low == high
    low = torch.where(equal, low - 0.5, low)
    high = torch.where(equal, high + 0.5, high)
    return [_spaced(low[d], high[d], int(bins[d]) + 1) for d in range(dimensions)]


@lowering_rule(aten._histogramdd_bin_edges.default)
def histogramdd_bin_edges(self, bins, *, range=None, weight=None, density=False):
    edges = _edges(self, bins, range)
    return NotImplemented if edges is None else edges


def _counts(self, edges: list[torch.Tensor], weight, density: bool) -> torch.Tensor:
    points = _points(self)
    sizes = [int(e.shape[0]) - 1 for e in edges]
    flat = torch.zeros(points.shape[0], dtype=torch.int64, device=points.device)
    inside = torch.ones(points.shape[0], dtype=torch.bool, device=points.device)
    stride = 1
    for d in reversed(range(len(edges))):
        x, e = points[:, d], edges[d].to(points.dtype)
        # edges at or below x, past the first: bin k for e[k] <= x < e[k + 1]
        k = (x.unsqueeze(-1) >= e[1:].unsqueeze(0)).sum(-1)
        k = torch.clamp(k, max=sizes[d] - 1)  # x equal to the last edge: the last bin
        inside = inside & (x >= e[0]) & (x <= e[-1])
        flat = flat + k * stride
        stride *= sizes[d]
    values = torch.ones_like(points[:, 0]) if weight is None else weight.reshape(-1).to(self.dtype)
    values = torch.where(inside, values, torch.zeros_like(values))
    flat = torch.where(inside, flat, torch.zeros_like(flat))
    total = 1
    for size in sizes:
        total *= size
    hist = torch.zeros(total, dtype=self.dtype, device=self.device).scatter_add(0, flat, values)
    hist = hist.reshape(sizes)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            widths = (e[1:] - e[:-1]).to(self.dtype)
            shape = [1] * len(edges)
            shape[d] = sizes[d]
            hist = hist / widths.reshape(shape)
    return hist


@lowering_rule(aten._histogramdd_from_bin_cts.default)
def histogramdd_from_bin_cts(self, bins, *, range=None, weight=None, density=False):
    edges = _edges(self, bins, range)
    if edges is None or any(int(b) < 1 for b in bins):
        return NotImplemented
    return _counts(self, edges, weight, density)


@lowering_rule(aten._histogramdd_from_bin_tensors.default)
def histogramdd_from_bin_tensors(self, bins, *, weight=None, density=False):
    if (
        self.dim() < 1
        or self.dtype not in _FLOATING
        or len(bins) != self.shape[-1]
        or any(e.dim() != 1 or e.shape[0] < 2 for e in bins)
    ):
        return NotImplemented
    return _counts(self, list(bins), weight, density)
