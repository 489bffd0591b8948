"""Bucketing of dynamic dimensions: pad a symbolic size up to the next bucket, exactly.

``torch.compile(..., backend="neuron", dynamic=True, options={"buckets": [32, 64, 128]})``
(or ``TORCHNEURON_BUCKETS=32,64,128``) runs a graph whose sizes are symbolic at the
next bucket at or above each symbol's value, so a dynamic program is specialized
(numerically compiled) once per bucket instead of once per size. A size beyond the
last bucket is specialized exactly (no padding).

Padding is only allowed where it cannot change a result. ``plan_buckets`` walks the
ATen inference graph once and gives every dimension of every tensor a *tag*: ``None``
when its size does not depend on a bucketed symbol, else the product of *atoms*
(the symbols, and the static factors merged with them by a view, in row-major order)
that it is laid out as. A padded position holds arbitrary values (possibly inf or
NaN), so:

- ops that keep positions independent along a tagged dimension pass (elementwise
  ops, views that keep the atoms in order, matmuls that do not contract it, norms over
  other dimensions, slices that keep it whole, prefix scans);
- a reduction or contraction over a bare padded dimension gets its operand(s)
  selected (``where``, never multiplied) against a mask with the reduction's
  identity: 0 for sum and contraction, -inf for max/softmax/logsumexp, +inf for min,
  and a mean becomes masked sum / masked count. The mask (``arange(padded) < true``)
  is one more runtime input per symbol;
- anything else that touches a tagged dimension (sort, flip, conv, var, indexing into
  it, a size used as a value, an unknown op) refuses with ``BucketRefused`` naming
  the op: the backend then runs the graph exactly, unpadded, with one warning.

Outputs are sliced back to the true sizes. Only inference graphs are bucketed (a
training forward saves padded activations for its backward); the backend does not
ask for others.

Why this file is long: the analysis is one table of rules over ATen ops, each a few
lines, and the rules share the tag algebra and the masking; split, each part would
reach into the others.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from torchneuron import settings
from torchneuron.errors import TorchNeuronError

# Counters of this process: bucketed_graphs (graphs planned with padding),
# refusals (graphs whose bucketing was refused: run exactly), padded_calls (calls run
# at a bucket larger than the true size), exact_calls (calls of a bucketed graph whose
# sizes were a bucket already, or beyond the last bucket).
STATS: dict[str, int] = {}
_STAT_NAMES = ("bucketed_graphs", "refusals", "padded_calls", "exact_calls")
MAX_BUCKETS = 64


def reset_stats() -> None:
    for name in _STAT_NAMES:
        STATS[name] = 0


def stats() -> dict[str, int]:
    """A copy of ``STATS``."""
    return dict(STATS)


reset_stats()


class BucketRefused(TorchNeuronError):
    """Padding this graph could change a result; the reason names the op."""


class NothingToBucket(BucketRefused):
    """The graph has no size that is one symbol of an input: nothing to pad."""


# -- the option ------------------------------------------------------------------


def parse_buckets(value: Any, where: str = "option 'buckets'") -> tuple[int, ...] | None:
    """The bucket sizes of ``value`` (a list of sizes, or None for no bucketing);
    ``ValueError`` naming ``where`` unless they are increasing positive ints."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence):
        raise ValueError(
            f"{where} must be a list of increasing positive sizes, e.g. [32, 64, 128], "
            f"not {type(value).__name__}"
        )
    if not value or len(value) > MAX_BUCKETS:
        raise ValueError(f"{where} must hold 1 to {MAX_BUCKETS} sizes, not {len(value)}")
    for size in value:
        if type(size) is not int or not 1 <= size <= 2**31:
            raise ValueError(f"{where}: {size!r} is not a positive int size")
    if any(b <= a for a, b in zip(value, value[1:])):
        raise ValueError(f"{where} must be strictly increasing, not {list(value)}")
    return tuple(value)


def buckets_from_env() -> tuple[int, ...] | None:
    """``TORCHNEURON_BUCKETS`` (comma-separated sizes); ``SettingsError`` when malformed."""
    text = settings.env_text(settings.BUCKETS)
    if text is None:
        return None
    where = f"{settings.BUCKETS}={text!r}"
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise settings.SettingsError(
            f"{where} is not a comma-separated list of sizes, e.g. 32,64,128"
        ) from None
    try:
        return parse_buckets(sizes, where)
    except ValueError as error:
        raise settings.SettingsError(str(error)) from None


# -- the plan ----------------------------------------------------------------------


@dataclass
class BucketPlan:
    """What ``BucketedFunction`` needs: the masked graph and where the symbols sit."""

    graph_module: torch.fx.GraphModule  # the original inputs, then one mask per symbol
    buckets: tuple[int, ...]
    # placeholder position -> [(axis, symbol)] of a tensor input's padded dimensions
    tensor_inputs: dict[int, list[tuple[int, str]]]
    # placeholder position -> symbol of a size input (Dynamo's s0 itself)
    size_inputs: dict[int, str]
    mask_symbols: list[str]  # one mask input each, after the graph's own inputs
    # output position -> [(axis, symbol)] to slice back to the true size
    outputs: dict[int, list[tuple[int, str]]]
    limits: dict[str, int | None] = field(default_factory=dict)  # each symbol's max


def plan_buckets(gm: torch.fx.GraphModule, buckets: Sequence[int]) -> BucketPlan:
    """A copy of ``gm`` whose reductions over padded dimensions are masked, and how to
    pad its inputs and slice its outputs; ``BucketRefused`` saying why not."""
    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    analysis = _Analysis(graph)
    try:
        analysis.run()
    except BucketRefused:
        raise
    except Exception as error:  # a graph the rules do not expect: refused, never guessed
        raise BucketRefused(
            f"the bucket analysis could not follow the graph ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:300]})"
        ) from None
    result = torch.fx.GraphModule(gm, graph)
    return BucketPlan(
        graph_module=result,
        buckets=tuple(buckets),
        tensor_inputs=analysis.tensor_inputs,
        size_inputs=analysis.size_inputs,
        mask_symbols=list(analysis.masks),
        outputs=analysis.outputs,
        limits=analysis.limits,
    )


def _describe(node: torch.fx.Node) -> str:
    return f"{node.target} ({node.name})"


def _exprs(value: torch.Tensor) -> list:
    import sympy

    return [d.node.expr if isinstance(d, torch.SymInt) else sympy.Integer(d) for d in value.shape]


def _product(atoms) -> Any:
    import sympy

    return sympy.Mul(*[sympy.Integer(a) if isinstance(a, int) else a for a in atoms])


def _same(a, b) -> bool:
    import sympy

    return sympy.expand(a - b) == 0


aten = torch.ops.aten
prims = torch.ops.prims

# Ops whose every output position depends only on the same position of each input
# (beyond torch.Tag.pointwise).
_ELEMENTWISE = {
    aten.where.self,
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.clone.default,
    aten._to_copy.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.copy.default,
    aten.fill.Scalar,
    aten.tril.default,  # keeps absolute positions: the same mask for a prefix
    aten.triu.default,
    prims.convert_element_type.default,
}
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
_CREATION = {
    aten.full.default: 0,
    aten.zeros.default: 0,
    aten.ones.default: 0,
    aten.empty.memory_format: 0,
    aten.new_zeros.default: 1,
    aten.new_ones.default: 1,
    aten.new_empty.default: 1,
    aten.new_full.default: 1,
}
_LIKE = {
    aten.full_like.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.empty_like.default,
}
# op -> the argument positions that are sizes (a symbolic size elsewhere is a value)
_SHAPE_ARGS = {
    **{op: {1} for op in _VIEWS},
    aten.expand.default: {1},
    aten.slice.Tensor: {2, 3},
    aten.arange.default: {0},
    aten.arange.start: {0, 1},
    aten.arange.start_step: {0, 1},
    **{op: {position} for op, position in _CREATION.items()},
}
# reduction -> (identity: "zero", "low", "high", "one", "false", "true", or "mean")
_REDUCTIONS = {
    aten.sum.dim_IntList: "zero",
    aten.sum.default: "zero",
    aten.amax.default: "low",
    aten.amin.default: "high",
    aten.max.dim: "low",
    aten.min.dim: "high",
    aten.max.default: "low",
    aten.min.default: "high",
    aten.argmax.default: "low",
    aten.argmin.default: "high",
    aten.logsumexp.default: "low",
    aten.prod.dim_int: "one",
    aten.prod.default: "one",
    aten.any.dim: "false",
    aten.any.dims: "false",
    aten.any.default: "false",
    aten.all.dim: "true",
    aten.all.dims: "true",
    aten.all.default: "true",
    aten.mean.dim: "mean",
    aten.mean.default: "mean",
}
# reductions that refuse a padded reduced dimension (no exact mask here)
_UNMASKED_REDUCTIONS = {
    aten.var.correction,
    aten.var.dim,
    aten.var_mean.correction,
    aten.std.correction,
    aten.std.dim,
    aten.linalg_vector_norm.default,
    aten.norm.ScalarOpt_dim,
}
_SOFTMAX = {aten._softmax.default, aten._log_softmax.default}
_SCANS = {aten.cumsum.default, aten.cumprod.default}  # prefix scans keep a prefix exact


class _Analysis:
    """Tags every value of ``graph`` (see the module docstring), masking as it goes."""

    def __init__(self, graph: torch.fx.Graph):
        self.graph = graph
        self.tags: dict[torch.fx.Node, Any] = {}
        self.symbols: dict[str, Any] = {}  # name -> sympy symbol
        self.carriers: dict[str, torch.SymInt] = {}  # name -> a SymInt that is the symbol
        self.tensor_inputs: dict[int, list[tuple[int, str]]] = {}
        self.size_inputs: dict[int, str] = {}
        self.masks: dict[str, torch.fx.Node] = {}
        self.outputs: dict[int, list[tuple[int, str]]] = {}
        self.limits: dict[str, int | None] = {}
        self.fake_mode = None

    # -- driver

    def run(self) -> None:
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        self._find_symbols(placeholders)
        if not self.symbols:
            raise NothingToBucket("the graph has no symbolic size to bucket")
        for position, node in enumerate(placeholders):
            self._placeholder(position, node)
        for node in list(self.graph.nodes):
            if node.op == "call_function":
                self._check_value_uses(node)
                self._call(node)
                self._check_tags(node)
            elif node.op == "get_attr":
                value = node.meta.get("val")
                rank = value.dim() if isinstance(value, torch.Tensor) else 0
                self.tags[node] = (None,) * rank
            elif node.op == "output":
                self._output(node)
            elif node.op != "placeholder":
                raise BucketRefused(f"graph node {node.name} ({node.op}) is not an op call")

    def _find_symbols(self, placeholders) -> None:
        import sympy

        for node in placeholders:
            value = node.meta.get("val")
            dims = value.shape if isinstance(value, torch.Tensor) else [value]
            for dim in dims:
                if isinstance(dim, torch.SymInt) and isinstance(dim.node.expr, sympy.Symbol):
                    name = dim.node.expr.name
                    self.symbols[name] = dim.node.expr
                    self.carriers.setdefault(name, dim)
                    if self.fake_mode is None and isinstance(value, torch.Tensor):
                        self.fake_mode = getattr(value, "fake_mode", None)
                    bounds = dim.node.shape_env.var_to_range.get(dim.node.expr)
                    upper = bounds.upper if bounds is not None else None
                    self.limits[name] = (
                        int(upper) if isinstance(upper, (int, sympy.Integer)) else None
                    )

    def _placeholder(self, position: int, node: torch.fx.Node) -> None:
        import sympy

        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = value.node.expr
            if self._free(expr):
                if not isinstance(expr, sympy.Symbol):
                    raise BucketRefused(f"size input {node.name} = {expr} is not one symbol")
                self.size_inputs[position] = expr.name
            return
        if not isinstance(value, torch.Tensor):
            if isinstance(value, (torch.SymFloat, torch.SymBool)):
                raise BucketRefused(f"graph input {node.name} is a symbolic {type(value)}")
            return
        tags, padded = [], []
        for axis, expr in enumerate(_exprs(value)):
            if not self._free(expr):
                tags.append(None)
            elif isinstance(expr, sympy.Symbol):
                tags.append((expr,))
                padded.append((axis, expr.name))
            else:
                raise BucketRefused(
                    f"input {node.name} dimension {axis} has size {expr}, not one symbol: "
                    "it cannot be padded to a bucket"
                )
        self.tags[node] = tuple(tags)
        if padded:
            self.tensor_inputs[position] = padded

    def _free(self, expr) -> bool:
        """Whether ``expr`` depends on a bucketed symbol."""
        return any(s.name in self.symbols for s in getattr(expr, "free_symbols", ()))

    def _check_value_uses(self, node: torch.fx.Node) -> None:
        """A bucketed size in a value position would read the padded size."""
        if not isinstance(node.target, torch._ops.OpOverload):
            return  # SymInt arithmetic: checked where its result is used
        if node.target is torch.ops.aten.sym_size.int:
            return
        allowed = _SHAPE_ARGS.get(node.target, set())
        arguments = list(enumerate(node.args)) + [(k, v) for k, v in node.kwargs.items()]
        for position, argument in arguments:
            if position in allowed:
                continue
            for leaf in torch.utils._pytree.tree_leaves(argument):
                value = leaf.meta.get("val") if isinstance(leaf, torch.fx.Node) else leaf
                if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                    if self._free(value.node.expr):
                        raise BucketRefused(
                            f"{_describe(node)} uses the size {value.node.expr} as a value "
                            f"(argument {position}): it would read the padded size"
                        )

    def _check_tags(self, node: torch.fx.Node) -> None:
        """Every output dimension that depends on a symbol has a tag of that size."""
        value = node.meta.get("val")
        values = value if isinstance(value, (tuple, list)) else [value]
        tags = self.tags.get(node)
        tag_list = tags if isinstance(value, (tuple, list)) else [tags]
        for item, item_tags in zip(values, tag_list):
            if not isinstance(item, torch.Tensor):
                continue
            if item_tags is None or len(item_tags) != item.dim():
                raise BucketRefused(f"{_describe(node)}: its output could not be followed")
            for axis, (expr, tag) in enumerate(zip(_exprs(item), item_tags)):
                known = tag is not None and _same(_product(tag), expr)
                if self._free(expr) != (tag is not None) or (tag is not None and not known):
                    raise BucketRefused(
                        f"{_describe(node)} gives dimension {axis} of size {expr} in a way "
                        "the bucket analysis cannot follow"
                    )

    def _output(self, node: torch.fx.Node) -> None:
        results = node.args[0]
        results = results if isinstance(results, (tuple, list)) else (results,)
        for position, result in enumerate(results):
            value = result.meta.get("val") if isinstance(result, torch.fx.Node) else result
            if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                if self._free(value.node.expr):
                    raise BucketRefused(f"the graph returns the size {value.node.expr}")
                continue
            if not isinstance(value, torch.Tensor):
                continue
            sliced = []
            for axis, tag in enumerate(self.tags[result]):
                if tag is None:
                    continue
                if len(tag) != 1:
                    raise BucketRefused(
                        f"output {position} dimension {axis} merges a padded dimension "
                        f"with others ({_product(tag)}): it cannot be sliced back"
                    )
                sliced.append((axis, tag[0].name))
            if sliced:
                self.outputs[position] = sliced

    # -- helpers

    def _tag(self, argument) -> tuple | None:
        if isinstance(argument, torch.fx.Node):
            return self.tags.get(argument)
        return None

    def _tensor_args(self, node) -> list[torch.fx.Node]:
        return [
            a
            for a in torch.utils._pytree.tree_leaves((node.args, node.kwargs))
            if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)
        ]

    def _touches_tags(self, node) -> bool:
        if any(any(t is not None for t in self.tags[a]) for a in self._tensor_args(node)):
            return True
        value = node.meta.get("val")
        for item in value if isinstance(value, (tuple, list)) else [value]:
            if isinstance(item, torch.Tensor) and any(self._free(e) for e in _exprs(item)):
                return True
        return False

    def _refuse_along(self, node, what: str = "") -> BucketRefused:
        return BucketRefused(
            f"{_describe(node)} {what or 'is not known to keep positions independent'} "
            "along a padded dimension"
        )

    def _fake(self, target, args, kwargs=None):
        def value(a):
            return a.meta["val"] if isinstance(a, torch.fx.Node) else a

        args = torch.fx.node.map_aggregate(args, value)
        kwargs = torch.fx.node.map_aggregate(kwargs or {}, value)
        with self.fake_mode:
            return target(*args, **kwargs)

    def _insert(self, target, args, kwargs=None) -> torch.fx.Node:
        node = self.graph.call_function(target, tuple(args), dict(kwargs or {}))
        node.meta["val"] = self._fake(target, args, kwargs)
        return node

    def _mask(self, symbol: str) -> torch.fx.Node:
        mask = self.masks.get(symbol)
        if mask is None:
            placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
            with self.graph.inserting_after(placeholders[-1]):
                mask = self.graph.placeholder(f"bucket_mask_{symbol}")
            with self.fake_mode:
                mask.meta["val"] = torch.empty((self.carriers[symbol],), dtype=torch.bool)
            self.tags[mask] = ((self.symbols[symbol],),)
            self.masks[symbol] = mask
        return mask

    def _masked(self, node, operand: torch.fx.Node, axes: Sequence[int], fill: str):
        """``operand`` with its padded positions along ``axes`` set to ``fill``'s value,
        inserted before ``node``."""
        tags = self.tags[operand]
        value = operand.meta["val"]
        rank = value.dim()
        with self.graph.inserting_before(node):
            current = operand
            for axis in sorted(set(axes)):
                tag = tags[axis]
                if tag is None:
                    continue
                view = (
                    self._mask(tag[0].name) if len(tag) == 1 else self._merged_mask(current, axis)
                )
                for _ in range(axis):
                    view = self._insert(aten.unsqueeze.default, (view, 0))
                for _ in range(rank - axis - 1):
                    view = self._insert(aten.unsqueeze.default, (view, -1))
                constant = self._insert(
                    aten.scalar_tensor.default,
                    (_fill_value(fill, value.dtype),),
                    {"dtype": value.dtype, "device": value.device},
                )
                current = self._insert(aten.where.self, (view, current, constant))
                self.tags[current] = tags
        return current

    def _merged_mask(self, operand: torch.fx.Node, axis: int) -> torch.fx.Node:
        """The mask of a dimension merged from ``atoms`` by a view: the atoms' masks
        broadcast over the atoms' shape, then viewed as the one merged dimension."""
        atoms = self.tags[operand][axis]
        combined = None
        sizes: list = []
        for position, atom in enumerate(atoms):
            if isinstance(atom, int) or not self._free(atom):
                sizes.append(int(atom))
                continue
            mask = self._mask(atom.name)
            sizes.append(self._insert(torch.ops.aten.sym_size.int, (mask, 0)))
            view = mask
            for _ in range(position):
                view = self._insert(aten.unsqueeze.default, (view, 0))
            for _ in range(len(atoms) - position - 1):
                view = self._insert(aten.unsqueeze.default, (view, -1))
            combined = (
                view
                if combined is None
                else self._insert(aten.bitwise_and.Tensor, (combined, view))
            )
        full = self._insert(aten.expand.default, (combined, sizes))
        merged = self._insert(torch.ops.aten.sym_size.int, (operand, axis))
        return self._insert(
            aten.clone.default,
            (
                self._insert(
                    aten.view.default, (self._insert(aten.clone.default, (full,)), [merged])
                ),
            ),
        )

    # -- the rules

    def _call(self, node: torch.fx.Node) -> None:
        target = node.target
        value = node.meta.get("val")
        if not isinstance(target, torch._ops.OpOverload) or not isinstance(
            value, (torch.Tensor, tuple, list)
        ):
            if target is operator.getitem:
                source = self.tags.get(node.args[0])
                if isinstance(source, list):
                    self.tags[node] = source[node.args[1]]
                    return
            if isinstance(value, torch.Tensor) or (
                isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value)
            ):
                if self._touches_tags(node):
                    raise self._refuse_along(node)
                self.tags[node] = _clean(value)
            return  # sizes and their arithmetic: checked where used
        if torch.Tag.nondeterministic_seeded in target.tags:
            raise BucketRefused(
                f"{_describe(node)} draws random numbers: padding changes which numbers the "
                "true positions draw"
            )
        if target._schema.is_mutable and self._touches_tags(node):
            raise self._refuse_along(node, "writes in place")
        rule = _RULES.get(target)
        if rule is None and (target in _ELEMENTWISE or torch.Tag.pointwise in target.tags):
            rule = _Analysis._elementwise
        if rule is None and target in _REDUCTIONS:
            rule = _Analysis._reduction
        if rule is None:
            if self._touches_tags(node):
                raise self._refuse_along(node)
            self.tags[node] = _clean(value)
            return
        rule(self, node)

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
                        f"{_describe(node)} combines dimensions laid out differently "
                        f"({_product(current)} and {_product(tag)})"
                    )
                result[offset + axis] = tag
        self.tags[node] = tuple(result)

    def _reduction(self, node) -> None:
        target = node.target
        operand = node.args[0]
        tags = self.tags[operand]
        rank = len(tags)
        dims, keepdim = _reduced_dims(node, rank)
        fill = _REDUCTIONS[target]
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
        dims, keepdim = _reduced_dims(node, len(tags))
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
                raise BucketRefused(f"{_describe(node)}: batch dimensions laid out differently")
            batch = (ta[0],)
        result = (*batch, ta[-2], tb[-1])
        if offset:
            bias = self.tags[node.args[0]]
            for axis, tag in enumerate(bias):
                position = len(result) - len(bias) + axis
                if tag is not None and tag != result[position]:
                    raise BucketRefused(f"{_describe(node)}: bias laid out differently")
        self.tags[node] = result

    def _view(self, node) -> None:
        source = node.args[0]
        tags = self.tags[source]
        in_exprs = _exprs(source.meta["val"])
        out_exprs = _exprs(node.meta["val"])
        atoms: list = []
        for expr, tag in zip(in_exprs, tags):
            atoms.extend(tag if tag is not None else [expr])
        result = []
        for expr in out_exprs:
            taken, atoms = _take(atoms, expr, self._free)
            if taken is None:
                raise BucketRefused(
                    f"{_describe(node)} reshapes {list(in_exprs)} to {list(out_exprs)} "
                    "across a padded dimension"
                )
            result.append(tuple(taken) if any(self._is_symbol(a) for a in taken) else None)
        if any(self._free(a) or a != 1 for a in atoms):
            raise BucketRefused(f"{_describe(node)}: reshape not followed")
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
        out = _exprs(node.meta["val"])
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
        raise BucketRefused(f"{_describe(node)} creates a dimension of size {expr}")

    def _creation(self, node) -> None:
        self.tags[node] = tuple(self._creation_tag(node, e) for e in _exprs(node.meta["val"]))

    def _like(self, node) -> None:
        self.tags[node] = self.tags[node.args[0]]

    def _arange(self, node) -> None:
        value = node.meta["val"]
        (expr,) = _exprs(value)
        if self._free(expr):
            start = 0 if node.target is aten.arange.default else node.args[0]
            step = node.args[2] if node.target is aten.arange.start_step else 1
            if start != 0 or step != 1:
                raise self._refuse_along(node, "counts from an offset")
        self._creation(node)

    def _slice(self, node) -> None:
        source = node.args[0]
        tags = list(self.tags[source])
        axis = (node.args[1] if len(node.args) > 1 else 0) % len(tags)
        start = node.args[2] if len(node.args) > 2 else None
        step = node.args[4] if len(node.args) > 4 else 1
        in_expr = _exprs(source.meta["val"])[axis]
        out_expr = _exprs(node.meta["val"])[axis]
        start_value = start.meta.get("val") if isinstance(start, torch.fx.Node) else start
        if isinstance(start_value, torch.SymInt):  # compared as an expression: no guard
            expr = start_value.node.expr
            start_value = int(expr) if expr.is_number else "a symbolic start"
        if tags[axis] is not None:
            if not (start_value in (0, None) and step == 1 and _same(in_expr, out_expr)):
                raise self._refuse_along(node, "slices")
        elif self._free(out_expr):
            if start_value not in (0, None) or step != 1:
                raise self._refuse_along(node, "slices from an offset")
            tags[axis] = self._creation_tag(node, out_expr)
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
        parts = [p for p in node.args[0] if not _legacy_empty(p.meta["val"])]
        axis = node.args[1] if len(node.args) > 1 else 0
        tag_lists = [self.tags[p] for p in parts]
        rank = len(tag_lists[0])
        axis %= rank
        result = list(tag_lists[0])
        for tags in tag_lists:
            if tags[axis] is not None:
                raise self._refuse_along(node, "concatenates")
            if list(tags) != result and any(
                t != r for d, (t, r) in enumerate(zip(tags, result)) if d != axis
            ):
                raise BucketRefused(f"{_describe(node)}: inputs laid out differently")
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
                raise BucketRefused(f"{_describe(node)}: index laid out differently")
        self.tags[node] = index_tags

    def _layer_norm(self, node) -> None:
        tags = self.tags[node.args[0]]
        count = len(node.args[1])
        if any(t is not None for t in tags[len(tags) - count :]):
            raise self._refuse_along(node, "normalizes")
        stats = tuple(tags[: len(tags) - count]) + (None,) * count
        self.tags[node] = [tags, stats, stats]

    def _check(self, node) -> None:
        self.tags[node] = ()


def _legacy_empty(value: torch.Tensor) -> bool:
    """A 1-D tensor of size 0, which ``cat`` skips whatever the other inputs' shapes."""
    return value.dim() == 1 and isinstance(value.shape[0], int) and value.shape[0] == 0


def _clean(value):
    if isinstance(value, (tuple, list)):
        return [(None,) * v.dim() if isinstance(v, torch.Tensor) else None for v in value]
    return (None,) * value.dim() if isinstance(value, torch.Tensor) else None


def _reduced_dims(node, rank: int) -> tuple[list[int], bool]:
    """The dimensions a reduction node reduces, and whether it keeps them."""
    target = node.target
    args = list(node.args) + [None] * 3
    if target in (aten.sum.default, aten.max.default, aten.min.default, aten.prod.default) or (
        target in (aten.any.default, aten.all.default, aten.mean.default)
    ):
        return list(range(rank)), False
    dims = node.kwargs.get("dim", args[1])
    keepdim = node.kwargs.get("keepdim", args[2]) or False
    if target is aten.var_mean.correction or target in (
        aten.var.correction,
        aten.std.correction,
    ):
        keepdim = node.kwargs.get("keepdim", False)
    if target in (aten.var.dim, aten.std.dim):
        keepdim = node.kwargs.get("keepdim", args[3] if len(node.args) > 3 else False) or False
    if target in (aten.linalg_vector_norm.default, aten.norm.ScalarOpt_dim):
        dims = node.kwargs.get("dim", args[2])
        keepdim = node.kwargs.get("keepdim", args[3] if len(node.args) > 3 else False) or False
    if dims is None or dims == []:
        return list(range(rank)), bool(keepdim)
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % max(rank, 1) for d in dims}), bool(keepdim)


def _fill_value(kind: str, dtype: torch.dtype):
    if kind in ("zero", "false"):
        return False if dtype is torch.bool else 0
    if kind in ("one", "true"):
        return True if dtype is torch.bool else 1
    if dtype is torch.bool:
        return kind == "high"
    if dtype.is_floating_point:
        return -math.inf if kind == "low" else math.inf
    info = torch.iinfo(dtype)
    return info.min if kind == "low" else info.max


def _take(atoms: list, expr, free) -> tuple[list | None, list]:
    """The leading atoms whose product is ``expr`` (a static atom may be split), and
    the atoms left; ``(None, atoms)`` when no prefix makes ``expr``."""
    import sympy

    taken: list = []
    remaining = sympy.Integer(1) * expr
    atoms = list(atoms)
    while not _same(remaining, 1):
        if not atoms:
            return None, atoms
        atom = atoms[0]
        if free(atom):
            quotient = sympy.cancel(remaining / atom)
            if not quotient.is_polynomial() or sympy.fraction(quotient)[1] != 1:
                return None, atoms
            taken.append(atom)
            remaining = quotient
            atoms.pop(0)
            continue
        # a static atom: the static part of what remains takes it whole or a piece of it
        coefficient, _ = sympy.Mul(remaining).as_coeff_Mul()
        size, want = int(atom), int(coefficient)
        if size == 1:
            atoms.pop(0)
            continue
        if want % size == 0:
            taken.append(size)
            remaining = sympy.cancel(remaining / size)
            atoms.pop(0)
        elif size % want == 0 and want > 1:
            taken.append(want)
            remaining = sympy.cancel(remaining / want)
            atoms[0] = size // want
        else:
            return None, atoms
    if not taken:
        taken = [1]
    while atoms and not free(atoms[0]) and int(atoms[0]) == 1:
        atoms.pop(0)
    return taken, atoms


_RULES = {
    **{op: _Analysis._view for op in _VIEWS},
    **{op: _Analysis._creation for op in _CREATION},
    **{op: _Analysis._like for op in _LIKE},
    **{op: _Analysis._unmasked_reduction for op in _UNMASKED_REDUCTIONS},
    **{op: _Analysis._softmax for op in _SOFTMAX},
    **{op: _Analysis._scan for op in _SCANS},
    aten.mm.default: _Analysis._contraction,
    aten.bmm.default: _Analysis._contraction,
    aten.addmm.default: _Analysis._contraction,
    aten.baddbmm.default: _Analysis._contraction,
    aten.permute.default: _Analysis._permute,
    aten.transpose.int: _Analysis._transpose,
    aten.t.default: _Analysis._transpose,
    aten.unsqueeze.default: _Analysis._unsqueeze,
    aten.squeeze.dim: _Analysis._squeeze,
    aten.squeeze.dims: _Analysis._squeeze,
    aten.squeeze.default: _Analysis._squeeze,
    prims.squeeze.default: _Analysis._squeeze,
    aten.expand.default: _Analysis._expand,
    aten.arange.default: _Analysis._arange,
    aten.arange.start: _Analysis._arange,
    aten.arange.start_step: _Analysis._arange,
    aten.scalar_tensor.default: _Analysis._creation,
    aten.slice.Tensor: _Analysis._slice,
    aten.select.int: _Analysis._select,
    aten.cat.default: _Analysis._cat,
    aten.split.Tensor: _Analysis._split,
    aten.split_with_sizes.default: _Analysis._split,
    aten.unbind.int: _Analysis._unbind,
    aten.embedding.default: _Analysis._embedding,
    aten.index_select.default: _Analysis._index_select,
    aten.gather.default: _Analysis._gather,
    aten.native_layer_norm.default: _Analysis._layer_norm,
    torch.ops.torchneuron.check.default: _Analysis._check,
}


# -- the runtime -------------------------------------------------------------------


class BucketedFunction:
    """Calls ``inner`` (compiled from ``plan.graph_module``) with every padded input
    grown to its bucket and the masks appended; slices the outputs back.

    ``admits(values)`` says whether the program may run with the symbols at ``values``
    (its ranges and the tracer's guards, e.g. ``s0 != 128``); a symbol takes the
    smallest bucket at or above its size that keeps every guard, else its exact size.
    """

    def __init__(self, inner, plan: BucketPlan, admits=None):
        self.inner = inner
        self.plan = plan
        self.admits = admits

    def choose(self, true: dict[str, int]) -> dict[str, int]:
        """The padded value of every symbol for the true values ``true``."""
        chosen = dict(true)  # the exact sizes: admitted (Dynamo's guards passed)
        for symbol in sorted(true):
            limit = self.plan.limits.get(symbol)
            for bucket in self.plan.buckets:
                if bucket < true[symbol] or (limit is not None and bucket > limit):
                    continue
                trial = {**chosen, symbol: bucket}
                if self.admits is None or self.admits(trial):
                    chosen = trial
                    break
        return chosen

    def __call__(self, *args):
        from torchneuron.compiler.dynamic import ShapeConstraintError

        plan = self.plan
        true: dict[str, int] = {}

        def bind(symbol: str, size: int, where: str) -> None:
            if true.setdefault(symbol, int(size)) != size:
                raise ShapeConstraintError(
                    f"{where} is {size} but symbol {symbol} is {true[symbol]} (from another "
                    "input); the graph requires them equal"
                )

        for position, dims in plan.tensor_inputs.items():
            for axis, symbol in dims:
                bind(symbol, args[position].shape[axis], f"input {position} dimension {axis}")
        for position, symbol in plan.size_inputs.items():
            bind(symbol, args[position], f"size argument {position}")
        padded = self.choose(true)
        grown = any(padded[s] != v for s, v in true.items())
        STATS["padded_calls" if grown else "exact_calls"] += 1
        call = list(args)
        for position, dims in plan.tensor_inputs.items():
            call[position] = _pad(args[position], {a: padded[s] for a, s in dims})
        for position, symbol in plan.size_inputs.items():
            call[position] = padded[symbol]
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        for symbol in plan.mask_symbols:
            mask = torch.arange(padded[symbol]) < true[symbol]
            call.append(mask if device is None or device.type == "cpu" else mask.to(device))
        outputs = list(self.inner(*call))
        if grown:
            for position, dims in plan.outputs.items():
                out = outputs[position]
                if out is None:
                    continue
                for axis, symbol in dims:
                    out = out.narrow(axis, 0, true[symbol])
                outputs[position] = out.clone(memory_format=torch.contiguous_format)
        return outputs


def _pad(tensor: torch.Tensor, sizes: dict[int, int]) -> torch.Tensor:
    """``tensor`` grown with zeros to ``sizes`` (axis -> size) at the end of each axis."""
    widths = [0] * (2 * tensor.dim())
    for axis, size in sizes.items():
        widths[2 * (tensor.dim() - 1 - axis) + 1] = size - tensor.shape[axis]
    if not any(widths):
        return tensor
    return torch.nn.functional.pad(tensor, widths)
