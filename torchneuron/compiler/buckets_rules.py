"""The rule of each ATen op in the bucket analysis: how it moves tags, where it masks.

One method per kind of op, and ``RULES``, the table from op to rule (pointwise ops and
the reductions of ``buckets_tags.REDUCTIONS`` are found by kind, not listed). A rule
reads its operands' tags, sets its node's tags, masks an operand before a reduction or
contraction over a padded dimension (``where`` against the mask, with the reduction's
identity), or refuses with ``BucketRefused`` naming the op. ``TagRules`` is mixed into
the analysis (``buckets_analysis.Analysis``), whose tags, masks and helpers the rules
use.
"""

from __future__ import annotations

import torch
import torch.fx

import torchneuron.lowering.checks  # noqa: F401  (defines torch.ops.torchneuron.check)

from .buckets_shift import ShiftRules
from .buckets_tags import (
    CREATION,
    LIKE,
    REDUCTIONS,
    SCANS,
    SOFTMAX,
    UNMASKED_REDUCTIONS,
    VIEWS,
    BucketRefused,
    aten,
    describe,
    expr_of,
    exprs,
    legacy_empty,
    prims,
    product,
    reduced_dims,
    same,
    take,
)


class TagRules(ShiftRules):
    """The rules, as methods of the analysis they are mixed into."""

    def _elementwise(self, node) -> None:
        value = node.meta["val"]
        rank = value.dim()
        result: list = [None] * rank
        for argument in self._tensor_args(node):
            tags = self.tags[argument]
            offset = rank - len(tags)
            for axis, tag in enumerate(tags):
                if tag is None:
                    continue
                current = result[offset + axis]
                if current is not None and current != tag:
                    raise BucketRefused(
                        f"{describe(node)} combines dimensions laid out differently "
                        f"({product(current)} and {product(tag)})"
                    )
                result[offset + axis] = tag
        self.tags[node] = tuple(result)

    def _reduction(self, node) -> None:
        target = node.target
        operand = node.args[0]
        tags = self.tags[operand]
        rank = len(tags)
        dims, keepdim = reduced_dims(node, rank)
        fill = REDUCTIONS[target]
        padded = [d for d in dims if tags[d] is not None]
        if (
            padded
            and target in (aten.argmax.default, aten.argmin.default)
            and node.args[1:2]
            in (
                (),
                (None,),
            )
        ):
            raise self._refuse_along(node, "returns a flat index")
        if padded and fill == "mean":
            self._mean(node, operand, dims, keepdim, padded)
        elif padded:
            node.update_arg(0, self._masked(node, operand, padded, fill))
        kept = tuple(
            None if d in dims else t for d, t in enumerate(tags) if keepdim or d not in dims
        )
        value = node.meta["val"]
        self.tags[node] = [kept, kept] if isinstance(value, (tuple, list)) else kept

    def _mean(self, node, operand, dims, keepdim, padded) -> None:
        """mean -> masked sum / masked count, both over ``dims``."""
        value = operand.meta["val"]
        position = 1 if node.target is aten.mean.default else 3
        dtype = node.kwargs.get("dtype") or (
            node.args[position] if len(node.args) > position else None
        )
        with self.graph.inserting_before(node):
            ones = self._insert(aten.full_like.default, (operand, 1), {"dtype": dtype})
            self.tags[ones] = self.tags[operand]
        total = self._reduce_sum(node, self._masked(node, operand, padded, "zero"), dims, keepdim)
        count = self._reduce_sum(node, self._masked(node, ones, padded, "zero"), dims, keepdim)
        with self.graph.inserting_before(node):
            mean = self._insert(aten.div.Tensor, (total, count))
        del value
        node.replace_all_uses_with(mean)
        self.graph.erase_node(node)
        # the replacement is the node the tags now follow
        kept = tuple(
            None if d in dims else t
            for d, t in enumerate(self.tags[operand])
            if keepdim or d not in dims
        )
        self.tags[mean] = kept
        self.tags[node] = kept
        node.meta["val"] = mean.meta["val"]

    def _reduce_sum(self, node, operand, dims, keepdim):
        with self.graph.inserting_before(node):
            return self._insert(aten.sum.dim_IntList, (operand, list(dims), keepdim))

    def _unmasked_reduction(self, node) -> None:
        tags = self.tags[node.args[0]]
        dims, keepdim = reduced_dims(node, len(tags))
        if any(tags[d] is not None for d in dims):
            raise self._refuse_along(node, "reduces (without an exact mask here)")
        kept = tuple(
            None if d in dims else t for d, t in enumerate(tags) if keepdim or d not in dims
        )
        value = node.meta["val"]
        self.tags[node] = [kept] * len(value) if isinstance(value, (tuple, list)) else kept

    def _softmax(self, node) -> None:
        operand = node.args[0]
        tags = self.tags[operand]
        axis = node.args[1] % max(len(tags), 1)
        if tags and tags[axis] is not None:
            node.update_arg(0, self._masked(node, operand, [axis], "low"))
        self.tags[node] = tags

    def _scan(self, node) -> None:
        tags = self.tags[node.args[0]]
        axis = node.args[1] % max(len(tags), 1)
        if tags and tags[axis] is not None and len(tags[axis]) != 1:
            raise self._refuse_along(node, "scans a merged dimension")
        self.tags[node] = tags

    def _contraction(self, node) -> None:
        target = node.target
        offset = 1 if target in (aten.addmm.default, aten.baddbmm.default) else 0
        a, b = node.args[offset], node.args[offset + 1]
        ta, tb = self.tags[a], self.tags[b]
        k_a, k_b = len(ta) - 1, len(tb) - 2
        if ta[k_a] is not None or tb[k_b] is not None:
            node.update_arg(offset, self._masked(node, a, [k_a], "zero"))
            node.update_arg(offset + 1, self._masked(node, b, [k_b], "zero"))
        batch = ()
        if len(ta) == 3:
            if ta[0] != tb[0]:
                raise BucketRefused(f"{describe(node)}: batch dimensions laid out differently")
            batch = (ta[0],)
        result = (*batch, ta[-2], tb[-1])
        if offset:
            bias = self.tags[node.args[0]]
            for axis, tag in enumerate(bias):
                position = len(result) - len(bias) + axis
                if tag is not None and tag != result[position]:
                    raise BucketRefused(f"{describe(node)}: bias laid out differently")
        self.tags[node] = result

    def _view(self, node) -> None:
        source = node.args[0]
        tags = self.tags[source]
        in_exprs = exprs(source.meta["val"])
        out_exprs = exprs(node.meta["val"])
        atoms: list = []
        for expr, tag in zip(in_exprs, tags):
            atoms.extend(tag if tag is not None else [expr])
        result = []
        for expr in out_exprs:
            taken, atoms = take(atoms, expr, self._free)
            if taken is None:
                raise BucketRefused(
                    f"{describe(node)} reshapes {list(in_exprs)} to {list(out_exprs)} "
                    "across a padded dimension"
                )
            result.append(tuple(taken) if any(self._is_symbol(a) for a in taken) else None)
        if any(self._free(a) or a != 1 for a in atoms):
            raise BucketRefused(f"{describe(node)}: reshape not followed")
        self.tags[node] = tuple(result)

    def _is_symbol(self, atom) -> bool:
        return not isinstance(atom, int) and self._free(atom)

    def _permute(self, node) -> None:
        tags = self.tags[node.args[0]]
        self.tags[node] = tuple(tags[d % len(tags)] for d in node.args[1])

    def _transpose(self, node) -> None:
        tags = list(self.tags[node.args[0]])
        if node.target is aten.t.default:
            self.tags[node] = tuple(reversed(tags))
            return
        a, b = (d % len(tags) for d in node.args[1:3])
        tags[a], tags[b] = tags[b], tags[a]
        self.tags[node] = tuple(tags)

    def _unsqueeze(self, node) -> None:
        tags = list(self.tags[node.args[0]])
        axis = node.args[1] % (len(tags) + 1)
        tags.insert(axis, None)
        self.tags[node] = tuple(tags)

    def _squeeze(self, node) -> None:
        tags = self.tags[node.args[0]]
        value = node.args[0].meta["val"]
        if len(node.args) > 1:
            dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
            dims = {d % max(len(tags), 1) for d in dims}
        else:
            dims = set(range(len(tags)))
        kept = tuple(
            t
            for d, (t, size) in enumerate(zip(tags, value.shape))
            if not (d in dims and isinstance(size, int) and size == 1)
        )
        self.tags[node] = kept

    def _expand(self, node) -> None:
        tags = self.tags[node.args[0]]
        out = exprs(node.meta["val"])
        offset = len(out) - len(tags)
        result = []
        for axis, expr in enumerate(out):
            source = tags[axis - offset] if axis >= offset else None
            if source is not None:
                result.append(source)
            else:
                result.append(self._creation_tag(node, expr))
        self.tags[node] = tuple(result)

    def _creation_tag(self, node, expr):
        import sympy

        if not self._free(expr):
            return None
        if isinstance(expr, sympy.Symbol):
            return (expr,)
        raise BucketRefused(f"{describe(node)} creates a dimension of size {expr}")

    def _creation(self, node) -> None:
        self.tags[node] = tuple(self._creation_tag(node, e) for e in exprs(node.meta["val"]))

    def _like(self, node) -> None:
        self.tags[node] = self.tags[node.args[0]]

    def _arange(self, node) -> None:
        value = node.meta["val"]
        (expr,) = exprs(value)
        if self._free(expr):
            start = 0 if node.target is aten.arange.default else node.args[0]
            step = 1  # arange.start_step's step is optional (AOTAutograd leaves it out)
            if node.target is aten.arange.start_step:
                step = node.args[2] if len(node.args) > 2 else node.kwargs.get("step", 1)
            if start != 0 or step != 1:
                raise self._refuse_along(node, "counts from an offset")
        self._creation(node)

    def _slice(self, node) -> None:
        source = node.args[0]
        if source in self.shifts:
            return self._shift(node)
        tags = list(self.tags[source])
        axis = (node.args[1] if len(node.args) > 1 else 0) % len(tags)
        start = node.args[2] if len(node.args) > 2 else None
        step = node.args[4] if len(node.args) > 4 else 1
        in_expr = exprs(source.meta["val"])[axis]
        out_expr = exprs(node.meta["val"])[axis]
        start_value = start.meta.get("val") if isinstance(start, torch.fx.Node) else start
        if isinstance(start_value, torch.SymInt):  # compared as an expression: no guard
            expr = expr_of(start_value)
            start_value = int(expr) if expr.is_number else "a symbolic start"
        if tags[axis] is not None:
            if not (start_value in (0, None) and step == 1 and same(in_expr, out_expr)):
                raise self._refuse_along(node, "slices")
        elif self._free(out_expr):
            if start_value not in (0, None) or step != 1:
                raise self._refuse_along(node, "slices from an offset")
            tags[axis] = self._creation_tag(node, out_expr)
        self.tags[node] = tuple(tags)

    def _slice_scatter(self, node) -> None:
        # src written over the whole of a padded dimension (the backward of
        # ``hidden[:, -keep:]`` with keep 0: start 0, end past the size) is a copy of src;
        # a part of it would move with the padding, and a bound that reads a padded
        # size would read the wrong one
        import sympy

        names = ("input", "src", "dim", "start", "end", "step")
        bound = dict(zip(names, node.args, strict=False)) | dict(node.kwargs)
        base, src = bound["input"], bound["src"]
        tags, src_tags = list(self.tags[base]), list(self.tags[src])
        axis = bound.get("dim", 0) % len(tags)

        def expr(value):
            value = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
            if value is None:
                return None
            return expr_of(value) if isinstance(value, torch.SymInt) else sympy.Integer(value)

        start, end = expr(bound.get("start")), expr(bound.get("end"))
        size = exprs(base.meta["val"])[axis]
        whole = (
            (start is None or start == 0)
            and (end is None or (end.is_number and end >= 2**62) or same(end, size))
            and bound.get("step", 1) == 1
        )
        moves = (
            tags[axis] is not None
            or src_tags[axis] is not None
            or any(self._free(e) for e in (start, end) if e is not None)
        )
        if moves and not whole:
            raise self._refuse_along(node, "writes over a part only")
        if tags != src_tags:
            raise BucketRefused(f"{describe(node)}: inputs laid out differently")
        self.tags[node] = tuple(tags)

    def _select(self, node) -> None:
        tags = list(self.tags[node.args[0]])
        axis = node.args[1] % len(tags)
        index = node.args[2]
        if tags[axis] is not None and not (isinstance(index, int) and index >= 0):
            raise self._refuse_along(node, f"selects index {index}")
        del tags[axis]
        self.tags[node] = tuple(tags)

    def _cat(self, node) -> None:
        parts = [p for p in node.args[0] if not legacy_empty(p.meta["val"])]
        axis = node.args[1] if len(node.args) > 1 else 0
        tag_lists = [self.tags[p] for p in parts]
        if len(parts) == 1:  # the rest empty (a key/value cache's first update): a copy
            self.tags[node] = tuple(tag_lists[0])
            return
        rank = len(tag_lists[0])
        axis %= rank
        result = list(tag_lists[0])
        for tags in tag_lists:
            if tags[axis] is not None:
                raise self._refuse_along(node, "concatenates")
            if list(tags) != result and any(
                t != r for d, (t, r) in enumerate(zip(tags, result)) if d != axis
            ):
                raise BucketRefused(f"{describe(node)}: inputs laid out differently")
        result[axis] = None
        self.tags[node] = tuple(result)

    def _split(self, node) -> None:
        tags = self.tags[node.args[0]]
        axis = (node.args[2] if len(node.args) > 2 else 0) % len(tags)
        if tags[axis] is not None:
            raise self._refuse_along(node, "splits")
        self.tags[node] = [tags] * len(node.meta["val"])

    def _unbind(self, node) -> None:
        tags = list(self.tags[node.args[0]])
        axis = (node.args[1] if len(node.args) > 1 else 0) % len(tags)
        if tags[axis] is not None:
            raise self._refuse_along(node, "unbinds")
        del tags[axis]
        self.tags[node] = [tuple(tags)] * len(node.meta["val"])

    def _embedding(self, node) -> None:
        weight, indices = node.args[0], node.args[1]
        if any(t is not None for t in self.tags[weight]):
            raise self._refuse_along(node, "looks up a padded table")
        self.tags[node] = (*self.tags[indices], None)

    def _index_select(self, node) -> None:
        source, axis, index = node.args[0], node.args[1], node.args[2]
        tags = list(self.tags[source])
        axis %= len(tags)
        if tags[axis] is not None:
            raise self._refuse_along(node, "indexes by data")
        tags[axis] = self.tags[index][0] if self.tags[index] else None
        self.tags[node] = tuple(tags)

    def _gather(self, node) -> None:
        source, axis, index = node.args[0], node.args[1], node.args[2]
        tags, index_tags = self.tags[source], self.tags[index]
        axis %= len(tags)
        if tags[axis] is not None:
            raise self._refuse_along(node, "indexes by data")
        for d, (t, u) in enumerate(zip(tags, index_tags)):
            if d != axis and t is not None and t != u:
                raise BucketRefused(f"{describe(node)}: index laid out differently")
        self.tags[node] = index_tags

    def _scatter(self, node) -> None:
        # Each index position writes into the same position of the result along every
        # dimension but ``axis``: positions stay independent unless ``axis`` is padded,
        # or the index (or the values it reads) is padded where the result is not.
        source, axis, index = node.args[0], node.args[1], node.args[2]
        tags, index_tags = self.tags[source], self.tags[index]
        axis %= len(tags)
        if tags[axis] is not None or index_tags[axis] is not None:
            raise self._refuse_along(node, "scatters by data")
        values = node.args[3] if len(node.args) > 3 else None
        value_tags = self.tags[values] if isinstance(values, torch.fx.Node) else None
        for d, (t, u) in enumerate(zip(tags, index_tags)):
            if d == axis:
                continue
            if u is not None and u != t:
                raise BucketRefused(f"{describe(node)}: index laid out differently")
            if value_tags is not None and value_tags[d] != u:
                raise BucketRefused(f"{describe(node)}: values laid out differently")
        self.tags[node] = tuple(tags)

    def _mask_assignment(self, node, destination, indices, values, accumulate) -> bool:
        """``x[mask] = values`` with one value per selected element, ``values`` padded
        along its first dimension (the backward of a selection ``x[mask]``): each
        selected position reads the value of its rank among the selected ones, so the
        padding is never read. Rewritten in place; False when the write is not of that
        form."""
        value_tags = self.tags[values] if isinstance(values, torch.fx.Node) else ()
        if (
            len(indices) != 1
            or not isinstance(indices[0], torch.fx.Node)
            or indices[0].meta["val"].dtype != torch.bool
            or not value_tags
            or value_tags[0] is None
            or len(value_tags[0]) != 1
            or any(t is not None for t in value_tags[1:])
            or any(t is not None for t in self.tags[destination])
            or any(t is not None for t in self.tags[indices[0]])
        ):
            return False
        mask = indices[0]
        shape = list(mask.meta["val"].shape)
        rest = list(destination.meta["val"].shape[len(shape) :])
        count = 1
        for size in shape:
            count *= int(size)
        with self.graph.inserting_before(node):
            flat = self._insert(aten.view.default, (mask, [count]))
            ones = self._insert(prims.convert_element_type.default, (flat, torch.int64))
            rank = self._insert(
                aten.clamp_min.default,
                (
                    self._insert(
                        aten.sub.Tensor, (self._insert(aten.cumsum.default, (ones, 0)), 1)
                    ),
                    0,
                ),
            )
            dtype = destination.meta["val"].dtype
            cast = self._insert(prims.convert_element_type.default, (values, dtype))
            gathered = self._insert(
                aten.view.default,
                (self._insert(aten.index_select.default, (cast, 0, rank)), shape + rest),
            )
            selected = self._insert(aten.view.default, (mask, shape + [1] * len(rest)))
            if accumulate:
                zero = self._insert(
                    aten.scalar_tensor.default,
                    (0,),
                    {"dtype": dtype, "device": destination.meta["val"].device},
                )
                added = self._insert(aten.where.self, (selected, gathered, zero))
                result = self._insert(aten.add.Tensor, (destination, added))
            else:
                result = self._insert(aten.where.self, (selected, gathered, destination))
        for inserted in (flat, ones, rank, cast, gathered, selected, result):
            self.tags[inserted] = (None,) * inserted.meta["val"].dim()
        self.tags[cast] = self.tags[values]
        node.replace_all_uses_with(result)
        self.tags[result] = tuple(self.tags[destination])
        self.graph.erase_node(node)
        return True

    def _index_put(self, node) -> None:
        # Each position of the broadcast index writes a slice of the values into the
        # destination at a row the data names. An accumulating write whose padded
        # positions add zero (values masked) at row 0 (indices masked) leaves every row
        # exact; a plain write would overwrite row 0, and a padded destination row is
        # data-addressed: both refused.
        destination, indices, values = node.args[0], node.args[1], node.args[2]
        accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
        tags = self.tags[destination]
        if self._mask_assignment(node, destination, indices, values, accumulate):
            self.tags[node] = tuple(tags)
            return
        if any(index is None for index in indices):
            raise self._refuse_along(node, "indexes with gaps")
        if any(t is not None for t in tags[: len(indices)]):
            raise self._refuse_along(node, "scatters by data")
        rank = max(len(self.tags[index]) for index in indices)
        index_tags: list = [None] * rank
        for index in indices:
            own = self.tags[index]
            for axis, tag in enumerate(own, start=rank - len(own)):
                if tag is not None and index_tags[axis] not in (None, tag):
                    raise BucketRefused(f"{describe(node)}: indices laid out differently")
                index_tags[axis] = index_tags[axis] or tag
        trailing = tuple(tags[len(indices) :])
        expected = (*index_tags, *trailing)
        value_tags = self.tags[values] if isinstance(values, torch.fx.Node) else ()
        for axis, tag in enumerate(value_tags, start=len(expected) - len(value_tags)):
            if tag is not None and tag != expected[axis]:
                raise BucketRefused(f"{describe(node)}: values laid out differently")
        padded = [axis for axis, tag in enumerate(index_tags) if tag is not None]
        if padded and not accumulate:
            raise self._refuse_along(node, "writes by data")
        offset = len(expected) - len(value_tags)
        if any(axis < offset or value_tags[axis - offset] is None for axis in padded):
            # values broadcast along a padded index axis: each padded position would add
            # them again (masking the index alone is not enough)
            raise self._refuse_along(node, "accumulates values broadcast over the indices")
        if padded:
            masked = []
            for index in indices:
                own = len(self.tags[index])
                axes = [axis - (rank - own) for axis in padded if axis >= rank - own]
                masked.append(self._masked(node, index, axes, "zero"))
            node.update_arg(1, masked)
            axes = [axis - offset for axis in padded if axis >= offset]
            node.update_arg(2, self._masked(node, values, axes, "zero"))
        self.tags[node] = tuple(tags)

    def _layer_norm(self, node) -> None:
        tags = self.tags[node.args[0]]
        count = len(node.args[1])
        if any(t is not None for t in tags[len(tags) - count :]):
            raise self._refuse_along(node, "normalizes")
        stats = tuple(tags[: len(tags) - count]) + (None,) * count
        self.tags[node] = [tags, stats, stats]

    def _check(self, node) -> None:
        self.tags[node] = ()


RULES = {
    **{op: TagRules._view for op in VIEWS},
    **{op: TagRules._creation for op in CREATION},
    **{op: TagRules._like for op in LIKE},
    **{op: TagRules._unmasked_reduction for op in UNMASKED_REDUCTIONS},
    **{op: TagRules._softmax for op in SOFTMAX},
    **{op: TagRules._scan for op in SCANS},
    aten.mm.default: TagRules._contraction,
    aten.bmm.default: TagRules._contraction,
    aten.addmm.default: TagRules._contraction,
    aten.baddbmm.default: TagRules._contraction,
    aten.permute.default: TagRules._permute,
    aten.transpose.int: TagRules._transpose,
    aten.t.default: TagRules._transpose,
    aten.unsqueeze.default: TagRules._unsqueeze,
    aten.squeeze.dim: TagRules._squeeze,
    aten.squeeze.dims: TagRules._squeeze,
    aten.squeeze.default: TagRules._squeeze,
    prims.squeeze.default: TagRules._squeeze,
    aten.expand.default: TagRules._expand,
    aten.arange.default: TagRules._arange,
    aten.arange.start: TagRules._arange,
    aten.arange.start_step: TagRules._arange,
    aten.scalar_tensor.default: TagRules._creation,
    aten.slice.Tensor: TagRules._slice,
    aten.constant_pad_nd.default: TagRules._constant_pad_nd,
    aten.slice_scatter.default: TagRules._slice_scatter,
    aten.select.int: TagRules._select,
    aten.cat.default: TagRules._cat,
    aten.split.Tensor: TagRules._split,
    aten.split_with_sizes.default: TagRules._split,
    aten.unbind.int: TagRules._unbind,
    aten.embedding.default: TagRules._embedding,
    aten.index_select.default: TagRules._index_select,
    aten.gather.default: TagRules._gather,
    aten.scatter.value: TagRules._scatter,
    aten.scatter.src: TagRules._scatter,
    aten.scatter_add.default: TagRules._scatter,
    aten.index_put.default: TagRules._index_put,
    aten.native_layer_norm.default: TagRules._layer_norm,
    torch.ops.torchneuron.check.default: TagRules._check,
}
