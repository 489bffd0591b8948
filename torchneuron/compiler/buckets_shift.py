"""Padding at the end of a padded dimension that a slice then shifts off: a shift.

A next-token loss shifts its labels by one: ``pad(labels, (0, 1), value=-100)[..., 1:]``
(transformers' causal-LM loss). Position ``i`` of the result is ``labels[i + 1]``, and
the last true position holds the pad's value. In a padded layout (length ``L`` padded
to a bucket ``B``) the pad's value lands after the bucket's padding, at ``B``, so the
slice would leave a padding position at ``L - 1`` where the true tensor holds the value.

The bucket analysis takes the pair as one shift:

- ``constant_pad_nd`` that pads a padded dimension at its end only, by a static ``r``,
  and whose every user is a slice of that dimension from ``r`` back to the padded size,
  passes; its dimension is tagged ``s + r`` (no mask or rule reads that tag: only those
  slices use it);
- each of those slices is tagged ``s`` again, and its positions from ``L - r`` on are set
  to the pad's value: a ``where`` against the symbol's mask shifted the same way
  (``pad(mask, (0, r), False)[r:]``, that is ``i + r < L``).

Any other padding of a padded dimension (at its start, by a size, by a negative amount,
or read otherwise than by such slices) refuses.
"""

from __future__ import annotations

import sys

from .buckets_tags import aten, exprs, same


class ShiftRules:
    """``constant_pad_nd`` and the slices that shift it, as methods of the analysis."""

    def _constant_pad_nd(self, node) -> None:
        source, pad = node.args[0], list(node.args[1])
        value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
        tags = list(self.tags[source])
        rank = len(tags)
        if len(pad) % 2 or len(pad) // 2 > rank:
            raise self._refuse_along(node, "pads")
        for pair in range(len(pad) // 2):
            axis = rank - 1 - pair
            before, after = pad[2 * pair], pad[2 * pair + 1]
            if tags[axis] is None or (before, after) == (0, 0):
                continue
            if (
                before != 0
                or type(after) is not int
                or after < 0
                or len(tags[axis]) != 1
                or not self._shifted_back(node, axis, after)
            ):
                raise self._refuse_along(node, "pads")
            self.shifts[node] = (axis, tags[axis][0], after, value)
            tags[axis] = (tags[axis][0] + after,)
        self.tags[node] = tuple(tags)

    def _shifted_back(self, node, axis: int, amount: int) -> bool:
        """Whether every user of ``node`` slices ``axis`` from ``amount`` to its end,
        keeping the size ``node``'s input had."""
        source_size = exprs(node.args[0].meta["val"])[axis]
        rank = node.meta["val"].dim()
        for user in node.users:
            args = list(user.args)
            if (
                user.target is not aten.slice.Tensor
                or user.kwargs
                or args[0] is not node
                or (args[1] if len(args) > 1 else 0) % rank != axis
                or (args[2] if len(args) > 2 else None) != amount
                or (args[4] if len(args) > 4 else 1) != 1
                or not same(exprs(user.meta["val"])[axis], source_size)
            ):
                return False
        return True

    def _shift(self, node) -> None:
        """A slice that shifts a ``constant_pad_nd`` (``_constant_pad_nd`` checked it):
        its positions from the true end less the shift on are set to the pad's value."""
        source = node.args[0]
        axis, symbol, amount, value = self.shifts[source]
        tags = list(self.tags[source])
        tags[axis] = (symbol,)
        self.tags[node] = tuple(tags)
        result_value = node.meta["val"]
        users = list(node.users)
        with self.graph.inserting_before(node.next):
            mask = self._mask(symbol.name)
            padded = self._insert(aten.constant_pad_nd.default, (mask, [0, amount], False))
            shifted = self._insert(aten.slice.Tensor, (padded, 0, amount, sys.maxsize))
            result = self._where_along(shifted, axis, result_value.dim(), node, value, result_value)
        self.tags[result] = self.tags[node]
        for user in users:
            user.replace_input_with(node, result)
