"""Padded forms of the ops whose output size their data decides (``bounded.py``).

Each producer has three parts, all plain ATen ops on static shapes:

- ``padded(*args)``: the op's result at its bound (``x.numel()`` selected positions at
  most): the selected elements first, in the order PyTorch gives them, then filler
  (0: an index in range, a value a mask will hide);
- ``count(*args)``: the true size, a 0-d int64 tensor;
- ``bound(node)``: the static bound, from the input's traced size.

Compaction is a prefix sum: the ``k``-th selected element (``cumsum(selected) - 1 ==
k``) is scattered to slot ``k``, every unselected one to a spare slot past the end
that is then cut off. ``unique`` sorts first (a stable sort, as PyTorch's CPU kernel)
and keeps the first element of each run of equal values; NaNs never equal each other,
so each is its own run, as on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.fx

from .buckets_tags import BucketRefused, describe

aten = torch.ops.aten


@dataclass(frozen=True)
class Producer:
    padded: Callable
    count: Callable
    bound: Callable[[torch.fx.Node], int]
    arguments: Callable[[torch.fx.Node], tuple]


def _numel(value: torch.Tensor) -> int:
    n = 1
    for d in value.shape:
        n *= int(d)
    return n


def _slots(selected: torch.Tensor) -> torch.Tensor:
    """Each flat position's slot: its rank among the selected ones, or the spare slot."""
    n = selected.numel()
    rank = torch.cumsum(selected.to(torch.int64), 0) - 1
    return torch.where(selected, rank, torch.full_like(rank, n))


def _compact(values: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """The selected entries of the 1-d ``values`` first, in order, then zeros."""
    n = values.numel()
    spare = torch.zeros(n + 1, dtype=values.dtype, device=values.device)
    return spare.scatter(0, _slots(selected), values)[:n]


def count_mask(count: torch.Tensor, bound: int) -> torch.Tensor:
    """``arange(bound) < count``: the true positions of a padded dimension."""
    return torch.arange(bound, dtype=torch.int64, device=count.device) < count


def mask_count(mask: torch.Tensor) -> torch.Tensor:
    return mask.to(torch.int64).sum()


# -- nonzero, torch.where(cond), argwhere


def nonzero_padded(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    linear = _compact(torch.arange(n, dtype=torch.int64, device=x.device), (x != 0).reshape(n))
    if x.dim() == 0:
        return torch.zeros((n, 0), dtype=torch.int64, device=x.device)
    coordinates = []
    for size in reversed(x.shape):
        coordinates.append(torch.remainder(linear, max(int(size), 1)))
        linear = torch.div(linear, max(int(size), 1), rounding_mode="floor")
    return torch.stack(coordinates[::-1], 1)


def nonzero_count(x: torch.Tensor) -> torch.Tensor:
    return mask_count(x != 0)


# -- masked_select


def masked_select_padded(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    x, mask = torch.broadcast_tensors(x, mask)
    n = x.numel()
    return _compact(x.reshape(n), mask.reshape(n))


def masked_select_count(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return mask_count(torch.broadcast_tensors(x, mask)[1])


# -- x[mask] (aten.index.Tensor with one boolean index)


def _boolean_index(node: torch.fx.Node) -> tuple:
    source, indices = node.args[0], list(node.args[1])
    present = [k for k, i in enumerate(indices) if i is not None]
    if len(present) != 1:
        raise BucketRefused(f"{describe(node)} mixes a boolean mask with other indices")
    return (source, indices)


def _index_is_boolean(node: torch.fx.Node) -> bool:
    return any(
        isinstance(i, torch.fx.Node) and i.meta["val"].dtype in (torch.bool, torch.uint8)
        for i in node.args[1]
    )


def mask_index_padded(x: torch.Tensor, indices: list) -> torch.Tensor:
    (k,) = [k for k, i in enumerate(indices) if i is not None]
    mask = indices[k].to(torch.bool)
    positions = nonzero_padded(mask)
    columns = [positions[:, j] for j in range(mask.dim())]
    return aten.index.Tensor(x, [None] * k + columns)


def mask_index_count(x: torch.Tensor, indices: list) -> torch.Tensor:
    (mask,) = [i for i in indices if i is not None]
    return mask_count(mask.to(torch.bool))


def _mask_bound(node: torch.fx.Node) -> int:
    (mask,) = [i for i in node.args[1] if i is not None]
    return _numel(mask.meta["val"])


# -- x[mask] = values (index_put with values padded by a producer)


def mask_assign(
    source: torch.Tensor, mask: torch.Tensor, values: torch.Tensor, accumulate: bool
) -> torch.Tensor:
    rest = list(source.shape[mask.dim() :])
    bound = values.shape[0]
    if bound == 0:  # nothing to read: a non-empty mask fails the host's count check
        return source
    flat = mask.reshape(-1)
    rank = (torch.cumsum(flat.to(torch.int64), 0) - 1).clamp(0, bound - 1)
    gathered = values.to(source.dtype).index_select(0, rank).reshape(list(mask.shape) + rest)
    selected = mask.reshape(list(mask.shape) + [1] * len(rest))
    if accumulate:
        return source + torch.where(selected, gathered, torch.zeros_like(gathered))
    return torch.where(selected, gathered, source)


# -- unique, unique_consecutive


def _runs(ordered: torch.Tensor) -> torch.Tensor:
    """Whether each element of the 1-d ``ordered`` starts a run of equal values."""
    starts = torch.ones(ordered.numel(), dtype=torch.bool, device=ordered.device)
    if ordered.numel() > 1:
        starts = torch.cat([starts[:1], ordered[1:] != ordered[:-1]])
    return starts


def _unique_parts(ordered, order, shape, return_inverse: bool, return_counts: bool):
    n = ordered.numel()
    starts = _runs(ordered)
    group = torch.cumsum(starts.to(torch.int64), 0) - 1
    values = _compact(ordered, starts)
    on = {"dtype": torch.int64, "device": ordered.device}
    if return_inverse:
        inverse = torch.zeros(n, **on)
        inverse = (inverse.scatter(0, order, group) if order is not None else group).reshape(shape)
    else:
        inverse = torch.zeros(0, **on)
    if return_counts:
        counts = torch.zeros(n, **on).scatter_add(0, group, torch.ones(n, **on))
    else:
        counts = torch.zeros(0, **on)
    return values, inverse, counts


def unique_padded(x, sorted=True, return_inverse=False, return_counts=False):
    flat = x.reshape(-1)
    ordered, order = torch.sort(flat, stable=True)
    return _unique_parts(ordered, order, x.shape, return_inverse, return_counts)


def unique_count(x, sorted=True, return_inverse=False, return_counts=False):
    ordered, _ = torch.sort(x.reshape(-1), stable=True)
    return mask_count(_runs(ordered))


def unique_consecutive_padded(x, return_inverse=False, return_counts=False, dim=None):
    return _unique_parts(x.reshape(-1), None, x.shape, return_inverse, return_counts)


def unique_consecutive_count(x, return_inverse=False, return_counts=False, dim=None):
    return mask_count(_runs(x.reshape(-1)))


def _unique_arguments(names: tuple[str, ...]):
    def arguments(node: torch.fx.Node) -> tuple:
        args = list(node.args)
        for name in names[len(args) :]:
            if name in node.kwargs:
                args.append(node.kwargs[name])
            else:
                break
        if "dim" in names and len(args) == len(names) and args[-1] is not None:
            raise BucketRefused(f"{describe(node)} along a dimension is not compiled at a bound")
        return tuple(args)

    return arguments


def _first_numel(node: torch.fx.Node) -> int:
    return _numel(node.args[0].meta["val"])


def _broadcast_numel(node: torch.fx.Node) -> int:
    shape = torch.broadcast_shapes(*(a.meta["val"].shape for a in node.args[:2]))
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _positional(node: torch.fx.Node) -> tuple:
    if node.kwargs:
        raise BucketRefused(f"{describe(node)} with keyword arguments is not compiled at a bound")
    return tuple(node.args)


PRODUCERS: dict = {
    aten.nonzero.default: Producer(nonzero_padded, nonzero_count, _first_numel, _positional),
    aten.masked_select.default: Producer(
        masked_select_padded, masked_select_count, _broadcast_numel, _positional
    ),
    aten._unique2.default: Producer(
        unique_padded,
        unique_count,
        _first_numel,
        _unique_arguments(("self", "sorted", "return_inverse", "return_counts")),
    ),
    aten.unique_consecutive.default: Producer(
        unique_consecutive_padded,
        unique_consecutive_count,
        _first_numel,
        _unique_arguments(("self", "return_inverse", "return_counts", "dim")),
    ),
}
# x[mask]: a producer only when an index is a boolean mask (a long index a producer
# padded is followed by the analysis instead)
MASK_INDEX = Producer(mask_index_padded, mask_index_count, _mask_bound, _boolean_index)


def producer_of(node: torch.fx.Node) -> Producer | None:
    if node.target is aten.index.Tensor:
        return MASK_INDEX if _index_is_boolean(node) else None
    return PRODUCERS.get(node.target)
