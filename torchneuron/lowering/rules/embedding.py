"""Embedding bags (``nn.EmbeddingBag``, ``F.embedding_bag``) as gathers and dense bag sums.

torch-mlir's lowering of ``_embedding_bag`` builds an ill-shaped program and it
has none for the mean and max modes. Here every bag is a row of a dense
(bags x indices) membership mask: bag ``b`` holds the indices from
``offsets[b]`` up to the next offset, less those equal to ``padding_idx``. The
rows gathered from the weight are then summed (scaled by ``per_sample_weights``),
averaged, or maxed per feature. Max follows the CPU kernel: a bag's first row,
replaced only by a strictly greater value (so a NaN counts only when it comes
first), and ``max_indices`` names the chosen row. Empty bags give zeros.

The three auxiliary outputs (``offset2bag``, ``bag_size``, ``max_indices``, read
by the backward pass) have the values the CPU kernel gives them and the shapes
its meta function gives the graph. The two disagree only for
``_embedding_bag_forward_only`` with ``include_last_offset``, whose auxiliary
outputs nothing reads (no backward): there ``bag_size`` has the meta function's
one entry per offset, the last 0 (the kernel's own is all zeros in sum mode and
one entry shorter otherwise).
The backward adds each bag's gradient to the rows it read (``index_add``, or
``scatter_add`` at ``max_indices``); ``scale_grad_by_freq`` and sparse gradients
decline. ``embedding`` with ``scale_grad_by_freq`` is the plain gather forward
(only its backward reads the flag). Memory grows with bags x indices x features, so the rule declines above
``DENSE_LIMIT`` elements.
"""

from __future__ import annotations

import math

import torch

from ..checks import INDEX_ERROR, RUNTIME_ERROR, is_reissued, reissuing, require_in_range, unchecked
from .indexing import DENSE_LIMIT
from .registry import lowering_rule

aten = torch.ops.aten

MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2


def _embedding_bag(
    weight,
    indices,
    offsets,
    mode,
    per_sample_weights,
    include_last_offset,
    padding_idx,
):
    if (
        indices.dim() != 1
        or offsets.dim() != 1
        or weight.dim() != 2
        or indices.dtype != offsets.dtype
        or not weight.is_floating_point()
        or mode not in (MODE_SUM, MODE_MEAN, MODE_MAX)
    ):
        return NotImplemented
    count, features = indices.shape[0], weight.shape[1]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if bags < 0 or bags * max(count, 1) * max(features, 1) > DENSE_LIMIT:
        return NotImplemented
    rows_count = weight.shape[0]
    message = f"an index of input is not in the valid range [0, {rows_count})"
    require_in_range(indices, 0, rows_count, RUNTIME_ERROR, message)
    with unchecked():  # every gather below reads checked or clamped positions
        return _bags(weight, indices, offsets, mode, per_sample_weights, padding_idx, bags)


def _bags(weight, indices, offsets, mode, per_sample_weights, padding_idx, bags: int):
    count = indices.shape[0]
    if padding_idx is None:  # (a negative padding_idx means none: F.embedding_bag wraps it)
        padding_idx = -1
    device = weight.device
    position = torch.arange(count, device=device)
    # offset2bag[j] = the last bag whose offset is <= j
    offset2bag = (offsets[:bags][None, :] <= position[:, None]).sum(-1) - 1
    offset2bag = offset2bag.to(offsets.dtype)
    kept = indices != padding_idx if padding_idx >= 0 else torch.ones_like(indices, dtype=bool)
    member = (offset2bag[None, :] == torch.arange(bags, device=device)[:, None]) & kept[None, :]
    bag_size = member.sum(-1).to(offsets.dtype)
    rows = torch.index_select(weight, 0, indices)  # [count, features]
    inside = member[:, :, None]  # [bags, count, 1]

    if mode == MODE_MAX:
        is_nan = rows != rows
        first = torch.where(member, position, count).amin(-1)  # [bags]
        first_row = torch.index_select(rows, 0, torch.clamp(first, max=max(count - 1, 0)))
        largest = torch.where(inside & ~is_nan, rows, -math.inf).amax(1)  # [bags, features]
        at_largest = inside & (rows == largest[:, None, :])
        first_largest = torch.where(at_largest, position[:, None], count).amin(1)
        chosen = torch.where(first_row != first_row, first[:, None], first_largest)
        empty = (bag_size == 0)[:, None]
        chosen = torch.clamp(chosen, max=max(count - 1, 0))
        output = torch.gather(rows, 0, chosen)
        output = torch.where(empty, torch.zeros_like(output), output)
        max_indices = torch.where(empty, 0, indices[chosen]).to(offsets.dtype)
    else:
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.to(rows.dtype)[:, None]
        output = torch.where(inside, rows[None], torch.zeros_like(rows[None])).sum(1)
        if mode == MODE_MEAN:
            divisor = torch.clamp(bag_size, min=1).to(output.dtype)[:, None]
            output = output / divisor
        max_indices = bag_size if mode == MODE_MEAN else torch.zeros_like(bag_size)
    if mode == MODE_SUM:
        bag_size = torch.zeros_like(bag_size)
        fast_path = weight.dtype in (torch.float32, torch.float16) and padding_idx < 0
        if fast_path:  # the CPU kernel's index-select path keeps no offset2bag
            offset2bag = offset2bag[:0]
    return output.to(weight.dtype), offset2bag, bag_size, max_indices


@lowering_rule(aten._embedding_bag.default)
def embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    # bag b = rows of indices[offsets[b]:offsets[b+1]] (less padding), summed/averaged/maxed
    return _embedding_bag(
        weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx
    )


@lowering_rule(aten._embedding_bag_forward_only.default)
def embedding_bag_forward_only(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    # as _embedding_bag, bag_size one per offset (its meta shape) with include_last_offset
    result = _embedding_bag(
        weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx
    )
    if result is NotImplemented or not include_last_offset:
        return result
    output, offset2bag, bag_size, max_indices = result
    return output, offset2bag, torch.nn.functional.pad(bag_size, [0, 1]), max_indices


def _bag_of_each_index(offsets, count: int, bags: int):
    """The bag of each index position (the forward's offset2bag may be empty)."""
    position = torch.arange(count, device=offsets.device)
    return (offsets[:bags][None, :] <= position[:, None]).sum(-1) - 1


@lowering_rule(aten._embedding_bag_backward.default)
def embedding_bag_backward(
    grad,
    indices,
    offsets,
    offset2bag,
    bag_size,
    maximum_indices,
    num_weights,
    scale_grad_by_freq,
    mode,
    sparse,
    per_sample_weights,
    padding_idx=-1,
):
    # each bag's gradient added to the rows it read: every member (sum: times its sample
    # weight; mean: / bag size), or per feature the row max chose (max)
    if sparse or scale_grad_by_freq or indices.dim() != 1 or grad.dim() != 2:
        return NotImplemented
    bags, features = grad.shape
    count = indices.shape[0]
    if bags * max(count, 1) > DENSE_LIMIT:
        return NotImplemented
    with unchecked():  # the forward checked the indices
        return _bag_gradient(
            grad,
            indices,
            offsets,
            bag_size,
            maximum_indices,
            num_weights,
            mode,
            per_sample_weights,
            padding_idx,
        )


def _bag_gradient(
    grad,
    indices,
    offsets,
    bag_size,
    maximum_indices,
    num_weights,
    mode,
    per_sample_weights,
    padding_idx,
):
    bags, features = grad.shape
    count = indices.shape[0]
    zeros = torch.zeros([num_weights, features], dtype=grad.dtype, device=grad.device)
    if mode == MODE_MAX:
        reached = (bag_size > 0)[:, None]
        sources = torch.where(reached, grad, torch.zeros_like(grad))
        return torch.scatter_add(zeros, 0, maximum_indices.to(torch.int64), sources)
    if mode not in (MODE_SUM, MODE_MEAN):
        return NotImplemented
    bag = _bag_of_each_index(offsets, count, bags)
    kept = (bag >= 0) & (bag < bags)
    if padding_idx is not None and padding_idx >= 0:
        kept = kept & (indices != padding_idx)
    rows = torch.index_select(grad, 0, torch.clamp(bag, 0, max(bags - 1, 0)))
    if mode == MODE_MEAN:
        sizes = torch.index_select(bag_size, 0, torch.clamp(bag, 0, max(bags - 1, 0)))
        rows = rows * (1.0 / torch.clamp(sizes, min=1).to(grad.dtype))[:, None]
    elif per_sample_weights is not None:
        rows = rows * per_sample_weights.to(grad.dtype)[:, None]
    rows = torch.where(kept[:, None], rows, torch.zeros_like(rows))
    return torch.index_add(zeros, 0, indices, rows)


@lowering_rule(aten._embedding_bag_per_sample_weights_backward.default)
def embedding_bag_per_sample_weights_backward(
    grad, weight, indices, offsets, offset2bag, mode, padding_idx=-1
):
    # d/d(sample weight j) = <gradient of j's bag, the row j read>; 0 for padding
    if mode != MODE_SUM or indices.dim() != 1 or grad.dim() != 2:
        return NotImplemented
    bags, count = grad.shape[0], indices.shape[0]
    bag = _bag_of_each_index(offsets, count, bags)
    with unchecked():  # clamped, and the forward checked the indices
        rows = torch.index_select(grad, 0, torch.clamp(bag, 0, max(bags - 1, 0)))
        products = (rows * torch.index_select(weight, 0, indices).to(grad.dtype)).sum(-1)
    kept = (bag >= 0) & (bag < bags)
    if padding_idx is not None and padding_idx >= 0:
        kept = kept & (indices != padding_idx)
    return torch.where(kept, products, torch.zeros_like(products))


@lowering_rule(aten.embedding.default)
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # check 0 <= i < rows (PyTorch refuses negative indices here); scale_grad_by_freq
    # changes only the backward: the forward is the plain row gather
    if is_reissued(aten.embedding.default):
        return NotImplemented
    rows = weight.shape[0]
    require_in_range(indices, 0, rows, INDEX_ERROR, "index out of range in self")
    with reissuing(aten.embedding.default), unchecked():
        return aten.embedding.default(weight, indices, padding_idx, False, sparse)
