"""Index bounds: every gather and scatter checks its indices while the program runs.

StableHLO's gather and scatter clamp an out-of-range index (or drop the update), so
``arange(5)[tensor([7])]`` read ``4`` where PyTorch raises. Each rule here adds a
run-time check (``lowering.checks.require_in_range``) that every index lies in the
range PyTorch accepts, with the error kind PyTorch raises, then re-issues the op
(negative indices wrapped where PyTorch counts them from the end), which takes its
ordinary path. The ranges and kinds follow PyTorch's CPU kernels:

=========================================  ==============  ============
op                                         valid indices   error
=========================================  ==============  ============
index (``x[i]``), index_put, index_fill    [-size, size)   IndexError
take, put                                  [-numel, numel) IndexError
index_select, index_add, index_copy        [0, size)       IndexError
gather, scatter, scatter_add               [0, size)       RuntimeError
=========================================  ==============  ============

(``embedding``/``embedding_bag`` are checked in ``embedding.py``, ``scatter_reduce``
and ``index_reduce`` in ``indexing.py``.) The messages cannot name the offending value
(the program reports only that one was out of range).
"""

from __future__ import annotations

import torch
from torch.fx.experimental.symbolic_shapes import guard_or_true

from ..checks import INDEX_ERROR, RUNTIME_ERROR, is_reissued, reissuing, require_in_range, unchecked
from .registry import lowering_rule

aten = torch.ops.aten


def _size(self: torch.Tensor, dim: int) -> int:
    # a 0-d tensor indexes like a 1-element vector
    return self.shape[dim] if self.dim() else 1


def _out_of_bounds(self: torch.Tensor, dim: int, size: int) -> str:
    return f"index out of bounds for dimension {dim % max(self.dim(), 1)} with size {size}"


def _reissue(op, *args):
    """``op(*args)`` on its ordinary path: its rule declines, and the indexing ops beneath
    it (their indices derived from checked ones) add no checks of their own."""
    with reissuing(op), unchecked():
        return op(*args)


def _checked_indices(self, indices) -> list | None:
    """Advanced indices checked against ``[-size, size)`` and wrapped (i < 0 -> i + size),
    as PyTorch's indexing does; StableHLO would clamp them. None when there is no integer
    index or a bool mask makes the dims an index applies to data-dependent."""
    checked, changed = [], False
    for dim, index in enumerate(indices):
        if index is None:
            checked.append(None)
            continue
        if index.dtype in (torch.bool, torch.uint8):
            return None
        if index.is_floating_point() or index.is_complex() or dim >= self.dim():
            return None
        size = self.shape[dim]
        require_in_range(index, -size, size, INDEX_ERROR, _out_of_bounds(self, dim, size))
        checked.append(torch.where(index < 0, index + size, index))
        changed = True
    return checked if changed else None


@lowering_rule(aten.index.Tensor)
def index(self, indices):
    # x[i] -> check -size <= i < size, then x[where(i < 0, i + size, i)]
    if is_reissued(aten.index.Tensor):
        return NotImplemented
    checked = _checked_indices(self, indices)
    if checked is None:
        return NotImplemented
    return _reissue(aten.index.Tensor, self, checked)


@lowering_rule(aten.index_put.default)
def index_put(self, indices, values, accumulate=False):
    # x[i] = v -> check -size <= i < size, then x[where(i < 0, i + size, i)] = v
    if is_reissued(aten.index_put.default):
        return NotImplemented
    checked = _checked_indices(self, indices)
    if checked is not None:
        return _reissue(aten.index_put.default, self, checked, values, accumulate)
    # x[mask] = v with v not depending on how many are selected -> where(mask, v, x)
    if len(indices) != 1 or indices[0] is None or indices[0].dtype != torch.bool:
        return NotImplemented
    mask = indices[0]
    rest = list(self.shape[mask.dim() :])
    if values.dim() > len(rest) + 1 or (
        values.dim() == len(rest) + 1 and guard_or_true(values.shape[0] != 1)
    ):
        return NotImplemented  # one value per selected element: a data-dependent count
    spread = (
        values.to(self.dtype).reshape(values.shape[-len(rest) :] if rest else ())
        if values.dim() == len(rest) + 1
        else values.to(self.dtype)
    )
    selected = mask.reshape(list(mask.shape) + [1] * len(rest))
    if accumulate:
        return self + torch.where(selected, spread, torch.zeros_like(self))
    return torch.where(selected, spread, self)


@lowering_rule(aten._index_put_impl.default)
def index_put_impl(self, indices, values, accumulate=False, unsafe=False):
    # the functional form of index_put_ (eager in-place indexing assignment)
    return index_put(self, indices, values, accumulate)


@lowering_rule(aten.index_select.default)
def index_select(self, dim, index):
    # check 0 <= i < size (PyTorch refuses negative indices here)
    if is_reissued(aten.index_select.default):
        return NotImplemented
    require_in_range(index, 0, _size(self, dim), INDEX_ERROR, "index out of range in self")
    if self.dim() and self.shape[dim] == 0:
        # every index fails the check (see gather): no gather from a zero-size dim
        shape = list(self.shape)
        shape[dim] = index.numel()
        return self.new_zeros(shape)
    # a 0-d source or index -> the 1-d form (torch-mlir's lowering assumes both have dims)
    if self.dim() == 0:
        if index.numel() != 1:
            return NotImplemented  # PyTorch raises: a scalar has one element to select
        selected = _reissue(aten.index_select.default, self.reshape(1), 0, index.reshape(1))
        return selected.reshape(())
    if index.dim() == 0:
        index = index.reshape(1)
    return _reissue(aten.index_select.default, self, dim, index)


@lowering_rule(aten.take.default)
def take(self, index):
    # take(x, i) -> check -numel <= i < numel, then flatten(x)[i mod numel]
    count = self.numel()
    message = f"out of range: tried to access an index out of range on a tensor of {count} elements"
    require_in_range(index, -count, count, INDEX_ERROR, message)
    if count == 0:
        return self.new_zeros(index.shape)  # every index fails the check (see gather)
    flat = self.reshape(-1)
    positions = index.reshape(-1)
    positions = torch.where(positions < 0, positions + count, positions)
    with unchecked():
        return torch.index_select(flat, 0, positions).reshape(index.shape)


@lowering_rule(aten.put.default)
def put(self, index, source, accumulate=False):
    # put(x, i, s) -> check -numel <= i < numel, then flatten(x).index_put(i mod numel, s)
    count = self.numel()
    message = f"out of range: tried to access an index out of range on a tensor of {count} elements"
    require_in_range(index, -count, count, INDEX_ERROR, message)
    if count == 0:
        return self.new_zeros(index.shape)  # every index fails the check (see gather)
    flat = self.reshape(-1)
    positions = index.reshape(-1)
    positions = torch.where(positions < 0, positions + count, positions)
    values = source.reshape(-1).to(self.dtype)
    with unchecked():
        result = torch.index_put(flat, (positions,), values, accumulate=accumulate)
    return result.reshape(self.shape)


@lowering_rule(aten.index_fill.int_Tensor, aten.index_fill.int_Scalar)
def index_fill(self, dim, index, value):
    # check -size <= i < size, wrap negatives; a value of another dtype cast first (XLA's
    # scatter requires one element type)
    op = (
        aten.index_fill.int_Tensor
        if isinstance(value, torch.Tensor)
        else aten.index_fill.int_Scalar
    )
    if is_reissued(op):
        return NotImplemented
    size = _size(self, dim)
    require_in_range(index, -size, size, INDEX_ERROR, _out_of_bounds(self, dim, size))
    if isinstance(value, torch.Tensor) and value.dtype != self.dtype:
        value = value.to(self.dtype)
    return _reissue(op, self, dim, torch.where(index < 0, index + size, index), value)


@lowering_rule(aten.gather.default)
def gather(self, dim, index, *, sparse_grad=False):
    # check 0 <= i < size along dim
    if is_reissued(aten.gather.default):
        return NotImplemented
    size = _size(self, dim)
    require_in_range(index, 0, size, RUNTIME_ERROR, _out_of_bounds(self, dim, size))
    if size == 0:
        # no index is valid, so the check fails whenever there is one; torch-mlir aborts
        # the process on a gather from a zero-size dim, so none is built
        return self.new_zeros(index.shape)
    with reissuing(aten.gather.default), unchecked():
        return aten.gather.default(self, dim, index, sparse_grad=sparse_grad)


def _checked_scatter(op, self, dim, index, *rest):
    # check 0 <= i < size along dim, then scatter as before
    if is_reissued(op):
        return NotImplemented
    size = _size(self, dim)
    require_in_range(index, 0, size, RUNTIME_ERROR, _out_of_bounds(self, dim, size))
    return _reissue(op, self, dim, index, *rest)


@lowering_rule(aten.scatter.src)
def scatter(self, dim, index, src):
    return _checked_scatter(aten.scatter.src, self, dim, index, src)


@lowering_rule(aten.scatter.value)
def scatter_value(self, dim, index, value):
    return _checked_scatter(aten.scatter.value, self, dim, index, value)


@lowering_rule(aten.scatter_add.default)
def scatter_add(self, dim, index, src):
    return _checked_scatter(aten.scatter_add.default, self, dim, index, src)


@lowering_rule(aten.index_add.default)
def index_add(self, dim, index, source, *, alpha=1):
    # check 0 <= i < size (PyTorch refuses negative indices here)
    if is_reissued(aten.index_add.default):
        return NotImplemented
    require_in_range(index, 0, _size(self, dim), INDEX_ERROR, "index out of range in self")
    with reissuing(aten.index_add.default), unchecked():
        return aten.index_add.default(self, dim, index, source, alpha=alpha)


@lowering_rule(aten.index_copy.default)
def index_copy(self, dim, index, source):
    # check 0 <= i < size (PyTorch refuses negative indices here)
    if is_reissued(aten.index_copy.default):
        return NotImplemented
    size = _size(self, dim)
    message = f"index_copy_(): {_out_of_bounds(self, dim, size)}"
    require_in_range(index, 0, size, INDEX_ERROR, message)
    return _reissue(aten.index_copy.default, self, dim, index, source)
