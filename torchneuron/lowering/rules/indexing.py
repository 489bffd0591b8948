"""Gathers, scatters with reductions, and searches, written as dense compares.

torch-mlir lowers ``scatter``/``scatter_add``/``gather`` but not scatter with a
``prod``/``mean``/``amax``/``amin`` reduction, ``index_reduce``, ``put``,
``searchsorted`` or ``histc``. Here each becomes a one-hot comparison of the
indices against every target position followed by an ordinary reduction. That
costs memory proportional to (targets x sources), so the rules decline
(``NotImplemented``) above ``DENSE_LIMIT`` elements and the op is reported as
unsupported rather than compiled into a program too large to run.
"""

from __future__ import annotations

import math

import torch

from ..checks import INDEX_ERROR, RUNTIME_ERROR, require_in_range, unchecked
from . import bounds  # noqa: F401  (registers the bound-checked gathers and scatters)
from .registry import lowering_rule

aten = torch.ops.aten

DENSE_LIMIT = 1 << 24  # elements of the largest one-hot intermediate a rule may build


@lowering_rule(aten.unfold.default)
def unfold(self, dimension, size, step):
    # unfold(x, d, size, step)[..., w, ..., i] = x[..., w*step + i, ...]: one gather
    if self.dim() == 0:
        return self.reshape([1])
    dim = dimension % self.dim()
    windows = (self.shape[dim] - size) // step + 1
    starts = torch.arange(windows, device=self.device) * step
    positions = (starts[:, None] + torch.arange(size, device=self.device)[None, :]).reshape(-1)
    with unchecked():  # in range by construction
        picked = torch.index_select(self, dim, positions)
    shape = list(self.shape)
    shape[dim : dim + 1] = [windows, size]
    return picked.reshape(shape).movedim(dim + 1, -1)


@lowering_rule(aten.roll.default)
def roll(self, shifts, dims=()):
    # roll(x, s, d) -> cat(x[n-s:], x[:n-s]) along d, per (shift, dim); s mod n == 0 is a copy
    shifts, dims = list(shifts), list(dims)
    if not dims:
        return roll(self.reshape(-1), shifts, [0]).reshape(self.shape)
    result = self
    for shift, dim in zip(shifts, dims):
        size = result.shape[dim]
        if size == 0:
            continue
        shift %= size
        if shift:
            result = torch.cat(
                [result.narrow(dim, size - shift, shift), result.narrow(dim, 0, size - shift)],
                dim=dim,
            )
    return result.clone() if result is self else result


def _identity(reduce: str, dtype: torch.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return math.inf if reduce == "amin" else -math.inf
    if dtype == torch.bool:
        return reduce == "amin"
    info = torch.iinfo(dtype)
    return info.max if reduce == "amin" else info.min


def _dense_scatter_reduce(self, dim, index, src, reduce, include_self):
    if reduce not in ("sum", "prod", "mean", "amax", "amin") or self.dim() == 0:
        return NotImplemented
    dim = dim % self.dim()
    targets = self.shape[dim]
    block_shape = list(index.shape)
    if index.numel() * targets > DENSE_LIMIT:
        return NotImplemented
    # the part of src that index addresses, and the target dim moved last
    src = src[tuple(slice(0, n) for n in block_shape)].to(self.dtype)
    index_last = index.movedim(dim, -1)
    src_last = src.movedim(dim, -1)
    block_shape[dim] = targets
    self_block = self[tuple(slice(0, n) for n in block_shape)]
    self_last = self_block.movedim(dim, -1)
    # hits[..., t, j]: source j goes to target t
    positions = torch.arange(targets, device=self.device)
    hits = index_last[..., None, :] == positions[:, None]
    identity = _identity(reduce, self.dtype)
    spread = torch.where(
        hits, src_last[..., None, :], torch.full_like(src_last[..., None, :], identity)
    )
    count = hits.sum(-1)
    if reduce in ("sum", "mean"):
        reduced = spread.sum(-1, dtype=self.dtype)
    elif reduce == "prod":
        reduced = spread.prod(-1, dtype=self.dtype)
    elif reduce == "amax":
        reduced = spread.amax(-1)
    else:
        reduced = spread.amin(-1)
    if include_self:
        if reduce in ("sum", "mean"):
            combined = reduced + self_last
        elif reduce == "prod":
            combined = reduced * self_last
        elif reduce == "amax":
            combined = torch.maximum(reduced, self_last)
        else:
            combined = torch.minimum(reduced, self_last)
        if reduce == "mean":
            divisor = (count + 1).to(self.dtype)
            combined = (
                combined / divisor
                if self.is_floating_point()
                else torch.div(combined, divisor, rounding_mode="floor")
            )
    else:
        combined = reduced
        if reduce == "mean":
            divisor = torch.clamp(count, min=1).to(self.dtype)
            combined = (
                combined / divisor
                if self.is_floating_point()
                else torch.div(combined, divisor, rounding_mode="floor")
            )
    block = torch.where(count > 0, combined, self_last).movedim(-1, dim)
    return _place_block(self, block)


def _place_block(full: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
    """``full`` with its leading corner replaced by ``block`` (same rank, smaller or equal)."""
    if list(block.shape) == list(full.shape):
        return block
    padding = []
    for size, whole in reversed(list(zip(block.shape, full.shape))):
        padding += [0, whole - size]
    inside = torch.nn.functional.pad(torch.ones_like(block, dtype=torch.bool), padding, value=False)
    padded = torch.nn.functional.pad(block, padding, value=0)
    return torch.where(inside, padded, full)


def _require_scatter_bounds(self, dim, index) -> None:
    # 0 <= index < size along dim, or PyTorch's RuntimeError (the dense form drops the rest)
    size = self.shape[dim] if self.dim() else 1
    message = f"index out of bounds for dimension {dim % max(self.dim(), 1)} with size {size}"
    require_in_range(index, 0, size, RUNTIME_ERROR, message)


@lowering_rule(aten.scatter_reduce.two)
def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    # out[..., index[j], ...] = reduce(self?, src[j] for all j hitting that place), densely
    _require_scatter_bounds(self, dim, index)
    return _dense_scatter_reduce(self, dim, index, src, reduce, include_self)


@lowering_rule(aten.scatter.reduce, aten.scatter.value_reduce)
def scatter_with_reduce(self, dim, index, src, *, reduce):
    # scatter(x, d, i, s, reduce="add"|"multiply") -> scatter_reduce(..., "sum"|"prod")
    if not isinstance(src, torch.Tensor):
        src = torch.full(index.shape, src, dtype=self.dtype, device=self.device)
    kind = {"add": "sum", "multiply": "prod"}.get(reduce)
    if kind is None:
        return NotImplemented
    _require_scatter_bounds(self, dim, index)
    return _dense_scatter_reduce(self, dim, index, src, kind, True)


@lowering_rule(aten.diagonal_scatter.default)
def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    # out = x with its (offset) diagonal over (dim1, dim2) replaced by src
    moved = self.movedim((dim1, dim2), (-2, -1))
    rows, columns = moved.shape[-2], moved.shape[-1]
    length = src.shape[-1]
    if length == 0:
        return self.clone()
    i = torch.arange(rows, device=self.device)[:, None]
    j = torch.arange(columns, device=self.device)[None, :]
    on_diagonal = (j - i) == offset
    position = torch.clamp(torch.arange(rows, device=self.device) - max(-offset, 0), 0, length - 1)
    with unchecked():  # clamped into range
        per_row = torch.index_select(src.to(self.dtype), -1, position).unsqueeze(-1)
    result = torch.where(on_diagonal, per_row, moved)
    return result.movedim((-2, -1), (dim1, dim2))


@lowering_rule(aten._cdist_forward.default)
def cdist(x1, x2, p, compute_mode=None):
    # cdist(a, b, p)[i, j] = ||a_i - b_j||_p, from the broadcast differences
    if x1.shape[-2] * x2.shape[-2] * x1.shape[-1] > DENSE_LIMIT:
        return NotImplemented
    difference = torch.abs(x1.unsqueeze(-2) - x2.unsqueeze(-3))
    if p == 0:
        return (difference != 0).sum(-1).to(x1.dtype)
    if p == math.inf:
        return difference.amax(-1) if difference.shape[-1] else difference.sum(-1)
    if p == 1:
        return difference.sum(-1)
    if p == 2:
        return torch.sqrt((difference * difference).sum(-1))
    return torch.pow(torch.pow(difference, p).sum(-1), 1.0 / p)


@lowering_rule(aten.index_reduce.default)
def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    # index_reduce(x, d, i, s) -> scatter_reduce(x, d, i broadcast along d over s, s)
    if self.dim() == 0:
        result = index_reduce(
            self.reshape(1), 0, index, source.reshape(1), reduce, include_self=include_self
        )
        return result if result is NotImplemented else result.reshape(())
    dim = dim % self.dim()
    require_in_range(index, 0, self.shape[dim], INDEX_ERROR, "index out of range in self")
    shape = [1] * source.dim()
    shape[dim] = index.numel()
    full_index = index.reshape(shape).expand(source.shape)
    return _dense_scatter_reduce(self, dim, full_index, source, reduce, include_self)


@lowering_rule(aten.searchsorted.Tensor)
def searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    # searchsorted(seq, v) = #{seq < v} (left) or #{seq <= v} (right), per row
    if sorter is not None:
        sorted_sequence = torch.gather(sorted_sequence, -1, sorter)
    right = right or side == "right"
    values = self
    if sorted_sequence.numel() * max(values.numel(), 1) > DENSE_LIMIT:
        return NotImplemented
    if sorted_sequence.dim() == 1:
        boundaries = sorted_sequence.reshape([1] * max(values.dim(), 1) + [-1])
    else:
        boundaries = sorted_sequence.unsqueeze(-2)
    probe = values.unsqueeze(-1) if values.dim() else values.reshape(1, 1)
    before = boundaries <= probe if right else boundaries < probe
    counts = before.sum(-1)
    if values.dim() == 0:
        counts = counts.reshape(())
    return counts.to(torch.int32 if out_int32 else torch.int64)


@lowering_rule(aten.histc.default)
def histc(self, bins=100, min=0, max=0):
    # histc: bin = floor((x - lo) * bins / (hi - lo)), x == hi in the last bin, others dropped
    if self.numel() * bins > DENSE_LIMIT or not self.is_floating_point():
        return NotImplemented
    flat = self.reshape(-1)
    if min == max:
        if flat.numel() == 0:
            return NotImplemented
        low, high = flat.min(), flat.max()
        same = low == high
        low, high = torch.where(same, low - 1, low), torch.where(same, high + 1, high)
    else:
        low = torch.full((), float(min), dtype=self.dtype)
        high = torch.full((), float(max), dtype=self.dtype)
    inside = (flat >= low) & (flat <= high)
    position = ((flat - low) * bins / (high - low)).floor().to(torch.int64)
    position = torch.clamp(position, 0, bins - 1)
    hits = (position[:, None] == torch.arange(bins)[None, :]) & inside[:, None]
    return hits.sum(0).to(self.dtype)


def _histogram_from_edges(self, edges, weight, density):
    # bin b holds edges[b] <= x < edges[b+1]; the last bin also holds x == edges[-1]
    values = self.reshape(-1)
    bins = edges.numel() - 1
    if values.numel() * (bins + 1) > DENSE_LIMIT or bins < 1:
        return NotImplemented
    edges = edges.to(self.dtype)
    position = (edges[None, :] <= values[:, None]).sum(-1) - 1
    position = torch.where(values == edges[-1], torch.full_like(position, bins - 1), position)
    inside = (values >= edges[0]) & (values <= edges[-1])
    hits = (position[:, None] == torch.arange(bins, device=self.device)[None, :]) & inside[:, None]
    amounts = weight.reshape(-1).to(self.dtype) if weight is not None else torch.ones_like(values)
    histogram = torch.where(hits, amounts[:, None], torch.zeros_like(amounts)[:, None]).sum(0)
    if density:
        histogram = histogram / (histogram.sum() * (edges[1:] - edges[:-1]))
    return histogram, edges


def _linspace(start, end, steps: int, like: torch.Tensor) -> torch.Tensor:
    # PyTorch's linspace: the first half counted from start, the second from end
    index = torch.arange(steps, device=like.device).to(like.dtype)
    step = (end - start) / (steps - 1)
    return torch.where(index < steps // 2, start + step * index, end - step * (steps - 1 - index))


@lowering_rule(aten.histogram.bin_ct)
def histogram(self, bins=100, *, range=None, weight=None, density=False):
    # equal-width bins over range (default: the data's min..max, widened by 0.5 if equal)
    if not self.is_floating_point() or self.numel() == 0:
        return NotImplemented
    if range is not None:
        low = torch.full((), float(range[0]), dtype=self.dtype)
        high = torch.full((), float(range[1]), dtype=self.dtype)
    else:
        low, high = self.min(), self.max()
    same = low == high
    low, high = torch.where(same, low - 0.5, low), torch.where(same, high + 0.5, high)
    return _histogram_from_edges(self, _linspace(low, high, bins + 1, self), weight, density)


@lowering_rule(aten.histogram.bins_tensor)
def histogram_with_edges(self, bins, *, weight=None, density=False):
    # bins given as edges
    if not self.is_floating_point():
        return NotImplemented
    return _histogram_from_edges(self, bins, weight, density)


@lowering_rule(aten.segment_reduce.default)
def segment_reduce(
    data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    # segment s holds the elements between the running sums of lengths; one dense
    # (segments x elements) comparison, then an ordinary reduction per segment
    if indices is not None or reduce not in ("sum", "mean", "max", "min", "prod"):
        return NotImplemented
    if lengths is None:
        if offsets is None or offsets.dim() != 1:
            return NotImplemented
        lengths = offsets[1:] - offsets[:-1]
    if lengths.dim() != 1 or not data.is_floating_point():
        return NotImplemented
    moved = data.movedim(axis, 0)
    elements, segments = moved.shape[0], lengths.shape[0]
    if elements * segments * max(1, moved[0].numel()) > DENSE_LIMIT:
        return NotImplemented
    ends = torch.cumsum(lengths, 0)
    segment_of = (ends[None, :] <= torch.arange(elements, device=data.device)[:, None]).sum(-1)
    hits = segment_of[None, :] == torch.arange(segments, device=data.device)[:, None]  # [S, N]
    hits = hits.reshape([segments, elements] + [1] * (moved.dim() - 1))
    count = hits.sum(1).to(data.dtype)  # [S, 1..]
    kind = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    identity = _identity(kind, data.dtype)
    spread = torch.where(hits, moved.unsqueeze(0), torch.full_like(moved.unsqueeze(0), identity))
    if reduce in ("sum", "mean"):
        value = spread.sum(1)
    elif reduce == "prod":
        value = spread.prod(1)
    elif reduce == "max":
        value = spread.amax(1)
    else:
        value = spread.amin(1)
    if initial is not None:
        if reduce in ("sum", "mean"):
            value = value + initial
        elif reduce == "prod":
            value = value * initial
        elif reduce == "max":
            value = torch.clamp(value, min=initial)
        else:
            value = torch.clamp(value, max=initial)
    if reduce == "mean":
        empty_value = initial if initial is not None else math.nan
        value = torch.where(
            count > 0, value / torch.clamp(count, min=1), torch.full_like(value, empty_value)
        )
    return value.movedim(0, axis)


@lowering_rule(aten.as_strided_scatter.default)
def as_strided_scatter(self, src, size, stride, storage_offset=None):
    # Write src through the strided view of (a contiguous copy of) self: element i of
    # the view is storage position offset + sum_d index_d * stride_d -> one index_put.
    if not self.is_contiguous() or any(s < 0 for s in stride):
        return NotImplemented
    offset = 0 if storage_offset is None else storage_offset
    positions = torch.full((), offset, dtype=torch.int64, device=self.device)
    for dim, (extent, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[dim] = extent
        positions = positions + (torch.arange(extent, device=self.device) * step).reshape(shape)
    flat = self.reshape(-1)
    if (
        positions.numel()
        and (offset + sum((e - 1) * s for e, s in zip(size, stride) if e)) >= flat.numel()
    ):
        return NotImplemented  # reaches past self: PyTorch raises for this call
    with unchecked():  # in range: checked above
        updated = flat.index_put(
            (positions.reshape(-1),), src.expand(size).reshape(-1).to(self.dtype)
        )
    return updated.reshape(self.shape)
