"""Dense layouts: the axis order a permuted view of a dense buffer lies in memory.

A transposed weight (``w.t()``) is not contiguous, but its bytes are those of a
contiguous tensor of the permuted shape. Handing a program that tensor (a view, no
copy) and permuting it back inside the program is how the eager launches
(``compiled.dense_orders``) and compiled graphs (``graph_function.permute_dense_inputs``)
avoid copying such inputs; the padded route keys shape classes by the same order.
Pure torch: importing this needs no native layer.
"""

from __future__ import annotations

import torch


def dense_order_of(shape: tuple, stride: tuple) -> tuple | None:
    """The axes from outermost to innermost of a dense permuted layout, else None."""
    order = tuple(sorted(range(len(shape)), key=lambda axis: (-stride[axis], -axis)))
    expected = 1
    for axis in reversed(order):
        if shape[axis] != 1 and stride[axis] != expected:
            return None
        expected *= shape[axis]
    return order


def dense_order(value) -> tuple[int, ...] | None:
    """The dimension order that makes ``value`` contiguous when it is a permuted view of
    a dense buffer (``t()`` of a weight, a transposed activation); None when it is
    contiguous already, or has gaps, overlaps or symbolic sizes."""
    if not isinstance(value, torch.Tensor):
        return None
    shape = tuple(value.shape)
    if any(not isinstance(d, int) for d in shape) or value.is_contiguous():
        return None
    stride = tuple(value.stride())
    if any(not isinstance(s, int) for s in stride):
        return None
    return dense_order_of(shape, stride)


def inverse_order(order: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``permute(order)``."""
    return tuple(order.index(axis) for axis in range(len(order)))
