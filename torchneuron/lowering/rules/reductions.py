"""Reductions and scans: 0-d inputs, cumulative ops, order statistics.

Scans (``cumprod``, ``cummax``/``cummin``, ``logcumsumexp``) are written as a
Hillis–Steele scan: ceil(log2 n) steps, each combining every element with the
one ``2**k`` before it (padded with the identity), so any length lowers to a
fixed number of elementwise ops. Order statistics (``median``, ``kthvalue``)
sort, which lowers to ``stablehlo.sort``, and pick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .registry import lowering_rule

aten = torch.ops.aten


# -- 0-d inputs: torch-mlir's reduction lowerings assume rank >= 1 -------------------


@lowering_rule(aten.logsumexp.default)
def logsumexp(self, dim, keepdim=False):
    # logsumexp(0-d x, 0) -> x  (log(exp(x)) for every x, infinities and NaN included)
    if self.dim() != 0:
        return NotImplemented
    result = self.clone()
    return (
        result
        if result.is_floating_point() or result.is_complex()
        else result.to(torch.get_default_dtype())
    )


def _reduce_as_vector(op):
    """A reduction over dims of a 0-d tensor, computed on it as a 1-element vector."""

    def rule(self, dim=None, keepdim=False, **kwargs):
        # op(0-d x, d) -> op(x.reshape(1), 0): the same single value, ranks torch-mlir handles
        if self.dim() != 0:
            return NotImplemented
        result = op(
            self.reshape(1),
            [0] if isinstance(dim, (list, tuple)) or dim is None else 0,
            False,
            **kwargs,
        )
        if isinstance(result, tuple):
            return tuple(r.reshape(()) for r in result)
        return result.reshape(())

    rule.__name__ = f"zero_dim_{op.__name__.replace('.', '_')}"
    return rule


for _op in (aten.sum.dim_IntList, aten.prod.dim_int):
    lowering_rule(_op)(_reduce_as_vector(_op))


# -- scans ---------------------------------------------------------------------------


def _shift(value: torch.Tensor, dim: int, by: int, fill) -> torch.Tensor:
    """``value`` moved ``by`` places forward along ``dim``; the front filled with ``fill``."""
    length = value.shape[dim]
    front = torch.full_like(value.narrow(dim, 0, min(by, length)), fill)
    if by >= length:
        return front
    return torch.cat([front, value.narrow(dim, 0, length - by)], dim=dim)


def scan(
    values: Sequence[torch.Tensor],
    dim: int,
    fills: Sequence,
    combine: Callable[[Sequence[torch.Tensor], Sequence[torch.Tensor]], Sequence[torch.Tensor]],
):
    """Inclusive scan of tensors along ``dim``; ``combine(earlier, later)`` must be associative."""
    values = list(values)
    length = values[0].shape[dim] if values[0].dim() else 1
    step = 1
    while step < length:
        earlier = [_shift(v, dim, step, fill) for v, fill in zip(values, fills)]
        values = list(combine(earlier, values))
        step *= 2
    return values


def _scan_dim(self: torch.Tensor, dim: int) -> int:
    return dim % self.dim() if self.dim() else 0


@lowering_rule(aten.cumprod.default)
def cumprod(self, dim, *, dtype=None):
    # cumprod(x)[i] = x[i] * cumprod(x)[i-1], as a log-depth scan of products
    value = self.to(dtype) if dtype is not None else self
    if not value.is_floating_point() and not value.is_complex() and dtype is None:
        value = value.to(torch.int64)
    if value.dim() == 0:
        return value.clone()
    if value.dtype in (torch.float16, torch.bfloat16):
        # products in float32, each output rounded once (PyTorch's kernel accumulates so)
        return cumprod(value.to(torch.float32), dim).to(value.dtype)
    (result,) = scan([value], _scan_dim(value, dim), [1], lambda a, b: [a[0] * b[0]])
    return result


@lowering_rule(aten.logcumsumexp.default, aten._logcumsumexp.default)
def logcumsumexp(self, dim):
    # logcumsumexp(x)[i] = logaddexp(logcumsumexp(x)[i-1], x[i]), log-depth, overflow-free
    if self.dim() == 0:
        return self.clone()

    def log_add_exp(earlier, later):
        a, b = earlier[0], later[0]
        high = torch.maximum(a, b)
        low = torch.minimum(a, b)
        summed = high + torch.log1p(torch.exp(low - high))
        # equal infinities (both -inf: the identity; both +inf) would give NaN above
        return [torch.where(torch.isinf(high) & (a == b), high, summed)]

    (result,) = scan([self], _scan_dim(self, dim), [-math.inf], log_add_exp)
    return result


def _running_extreme(self, dim, better: Callable):
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    if self.dtype in (torch.bool, torch.uint8):
        # bool/uint8 -> int32 (no uint8 literal lowers, nor an unsigned comparison)
        values, indices = _running_extreme(self.to(torch.int32), dim, better)
        return values.to(self.dtype), indices
    dim = _scan_dim(self, dim)
    shape = [1] * self.dim()
    shape[dim] = self.shape[dim]
    positions = torch.arange(self.shape[dim], device=self.device).view(shape).expand(self.shape)

    def keep_later(earlier, later):
        # The later element wins when it is NaN, or as good as a non-NaN earlier one
        # (PyTorch's cummax/cummin report the last index of a tie).
        take = torch.isnan(later[0]) | (~torch.isnan(earlier[0]) & better(later[0], earlier[0]))
        if not self.is_floating_point():
            take = better(later[0], earlier[0])
        return [torch.where(take, later[0], earlier[0]), torch.where(take, later[1], earlier[1])]

    low_fill = -math.inf if self.is_floating_point() else torch.iinfo(self.dtype).min
    high_fill = math.inf if self.is_floating_point() else torch.iinfo(self.dtype).max
    fill = low_fill if better is torch.ge else high_fill
    values, indices = scan([self, positions], dim, [fill, 0], keep_later)
    return values, indices


@lowering_rule(aten.cummax.default)
def cummax(self, dim):
    # cummax: running max and the last index reaching it
    return _running_extreme(self, dim, torch.ge)


@lowering_rule(aten.cummin.default)
def cummin(self, dim):
    # cummin: running min and the last index reaching it
    return _running_extreme(self, dim, torch.le)


# -- order statistics ----------------------------------------------------------------


def _pick(values, indices, position, dim, keepdim):
    index_shape = list(values.shape)
    index_shape[dim] = 1
    if isinstance(position, torch.Tensor):
        where = position.reshape(index_shape) if position.dim() else position.expand(index_shape)
    else:
        where = torch.full(index_shape, position, dtype=torch.int64, device=values.device)
    value = torch.gather(values, dim, where)
    index = torch.gather(indices, dim, where)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


@lowering_rule(aten.kthvalue.default)
def kthvalue(self, k, dim=-1, keepdim=False):
    # kthvalue(x, k) -> sort(x)[k-1]
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    values, indices = torch.sort(self, dim=dim)
    return _pick(values, indices, k - 1, dim, keepdim)


def _median_along(self, dim, keepdim, ignore_nan: bool):
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    values, indices = torch.sort(self, dim=dim)  # NaN last (rules.sorting)
    length = self.shape[dim]
    if not self.is_floating_point():
        return _pick(values, indices, (length - 1) // 2, dim, keepdim)
    nan_count = torch.isnan(self).sum(dim=dim, keepdim=True)
    if ignore_nan:
        # median of the non-NaN values; all NaN -> NaN (the first NaN, index 0 there)
        position = torch.clamp((length - nan_count - 1) // 2, min=0)
    else:
        # any NaN -> the first NaN (sorted last)
        position = torch.where(nan_count > 0, length - nan_count, (length - 1) // 2)
    return _pick(values, indices, position, dim, keepdim)


@lowering_rule(aten.median.dim)
def median_dim(self, dim, keepdim=False):
    # median(x, d) -> sort(x, d)[(n-1)//2], NaN propagating
    return _median_along(self, dim, keepdim, ignore_nan=False)


@lowering_rule(aten.nanmedian.dim)
def nanmedian_dim(self, dim, keepdim=False):
    # nanmedian(x, d) -> sort(x, d)[(n-#nan-1)//2]
    return _median_along(self, dim, keepdim, ignore_nan=True)


@lowering_rule(aten.median.default)
def median(self):
    # median(x) -> median(flatten(x), 0)
    if self.numel() == 0:
        return NotImplemented
    return _median_along(self.reshape(-1), 0, False, ignore_nan=False)[0]


@lowering_rule(aten.nanmedian.default)
def nanmedian(self):
    # nanmedian(x) -> nanmedian(flatten(x), 0)
    if self.numel() == 0:
        return NotImplemented
    return _median_along(self.reshape(-1), 0, False, ignore_nan=True)[0]


@lowering_rule(aten.dist.default)
def dist(self, other, p=2):
    # dist(a, b, p) -> vector_norm(a - b, p)
    return torch.linalg.vector_norm(self - other, ord=p)


@lowering_rule(aten.norm.Scalar)
def norm(self, p=2):
    # norm(x, p) -> vector_norm(x, p)
    return torch.linalg.vector_norm(self, ord=2 if p is None else p)


@lowering_rule(aten.norm.ScalarOpt_dim)
def norm_dim(self, p, dim, keepdim=False):
    # norm(x, p, dims) -> vector_norm(x, p, dims); no dims (dist's call) reduces them all,
    # spelled None: torch-mlir mis-lowers an empty dim list.
    return torch.linalg.vector_norm(
        self, ord=2 if p is None else p, dim=list(dim) if dim else None, keepdim=keepdim
    )


# -- mode: dense comparisons (n^2 elements per row) -------------------------------------

DENSE_ROW_LIMIT = 1 << 22  # elements of the largest (rows x n x n) comparison built


@lowering_rule(aten.mode.default)
def mode(self, dim=-1, keepdim=False):
    # mode: the smallest of the most frequent values, and the last index holding it
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    dim = dim % self.dim()
    n = self.shape[dim]
    if n == 0 or self.numel() * n > DENSE_ROW_LIMIT:
        return NotImplemented
    moved = self.movedim(dim, -1)
    same = moved.unsqueeze(-1) == moved.unsqueeze(-2)
    counts = same.sum(-1)
    most = counts.amax(-1, keepdim=True)
    if moved.is_floating_point():
        high = torch.full_like(moved, math.inf)
    else:
        high = torch.full_like(
            moved, torch.iinfo(moved.dtype).max if moved.dtype != torch.bool else True
        )
    value = torch.where(counts == most, moved, high).amin(-1, keepdim=True)
    positions = torch.arange(n, device=self.device).expand(moved.shape)
    index = torch.where(moved == value, positions, torch.full_like(positions, -1)).amax(
        -1, keepdim=True
    )
    value, index = value.movedim(-1, dim), index.movedim(-1, dim)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


@lowering_rule(aten.native_batch_norm.default)
def native_batch_norm_inference(
    input, weight, bias, running_mean, running_var, training, momentum, eps
):
    # inference: (x - running_mean) / sqrt(running_var + eps) * w + b; the saved statistics
    # are empty (torch-mlir's lowering mistypes those empty results)
    if training or running_mean is None or running_var is None:
        return NotImplemented
    shape = [1, -1] + [1] * (input.dim() - 2)
    output = (input - running_mean.reshape(shape)) * torch.rsqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        output = output * weight.reshape(shape)
    if bias is not None:
        output = output + bias.reshape(shape)
    empty = torch.zeros(0, dtype=input.dtype, device=input.device)
    return output.to(input.dtype), empty, empty.clone()


@lowering_rule(aten._batch_norm_with_update_functional.default)
def batch_norm_with_update_functional(
    input, weight, bias, running_mean, running_var, momentum, eps
):
    # the training batch norm export emits -> _native_batch_norm_legit_functional, plus the
    # (empty, CPU-style) reserve buffer cuDNN would fill
    out, save_mean, save_rstd, new_mean, new_var = aten._native_batch_norm_legit_functional.default(
        input, weight, bias, running_mean, running_var, True, momentum, eps
    )
    # (an empty slice of the input, not a literal: torch-mlir cannot lower empty ui8 literals)
    reserve = input.reshape(-1)[:0].to(torch.uint8)
    return out, save_mean, save_rstd, reserve, new_mean, new_var
