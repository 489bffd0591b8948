"""The bucket analysis: one walk of an ATen graph that tags and masks it.

``plan_buckets`` copies the graph and walks it once (``Analysis``): the symbols come
from the inputs' shapes, every placeholder's padded dimensions are tagged, every op
call is checked (a bucketed size used as a value refuses) and handed to its rule
(``buckets_rules.py``), and every output dimension's tag is checked against its traced
size, so a value the rules could not follow refuses rather than guesses. The result,
a ``BucketPlan``, is what ``buckets.BucketedFunction`` pads and slices by.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from torchneuron.errors import TorchNeuronError

from .buckets_rules import RULES, TagRules
from .buckets_tags import (
    ELEMENTWISE,
    REDUCTIONS,
    SHAPE_ARGS,
    BucketRefused,
    NothingToBucket,
    aten,
    clean,
    describe,
    expr_of,
    exprs,
    fill_value,
    pinned_values,
    product,
    same,
)


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
    # output position -> expression of a size output (a training forward's saved batch
    # size): returned at its true value
    size_outputs: dict[int, str] = field(default_factory=dict)
    # placeholder position -> expression of a size input that is arithmetic of symbols
    # (a backward's s0*s1): given at its padded value
    size_input_exprs: dict[int, str] = field(default_factory=dict)
    # a dimension that merges a padded one with others, row-major (flatten(0, 1) of a
    # batch and a length): position -> [(axis, atoms)], each atom a symbol's name or an int
    merged_inputs: dict[int, list[tuple[int, tuple]]] = field(default_factory=dict)
    merged_outputs: dict[int, list[tuple[int, tuple]]] = field(default_factory=dict)
    # output node name -> {axis: atoms} of its merged dimensions, for the graph that
    # takes the output by that name (a training forward's saved activation, its backward)
    layouts: dict[str, dict[int, tuple]] = field(default_factory=dict)
    # symbols a value reads (a vocabulary's size in an index's bounds check), kept at
    # their exact sizes while the others pad: position -> [(axis, symbol)] of a tensor
    # input dimension, position -> symbol of a size input, that bind them at a call
    exact_inputs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    exact_size_inputs: dict[int, str] = field(default_factory=dict)

    @property
    def merges(self) -> bool:
        """Whether a size or dimension is arithmetic of symbols (eager ops refuse it)."""
        return bool(
            self.size_outputs or self.size_input_exprs or self.merged_inputs or self.merged_outputs
        )


def plan_buckets(
    gm: torch.fx.GraphModule,
    buckets: Sequence[int],
    layouts: dict | None = None,
    pinned: dict | None = None,
) -> BucketPlan:
    """A copy of ``gm`` whose reductions over padded dimensions are masked, and how to
    pad its inputs and slice its outputs; ``BucketRefused`` saying why not. ``layouts``:
    the merged dimensions of inputs another graph returned (``BucketPlan.layouts``).
    ``pinned`` (symbol -> int): symbols the program takes as constants."""
    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    analysis = Analysis(graph, layouts or {})
    try:
        with pinned_values(pinned or {}):
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
        size_outputs=analysis.size_outputs,
        size_input_exprs=analysis.size_input_exprs,
        merged_inputs=analysis.merged_inputs,
        merged_outputs=analysis.merged_outputs,
        layouts=analysis.layouts,
        exact_inputs=analysis.exact_inputs,
        exact_size_inputs=analysis.exact_size_inputs,
    )


class Analysis(TagRules):
    """Tags every value of ``graph`` (see the module docstring), masking as it goes."""

    def __init__(self, graph: torch.fx.Graph, layouts: dict | None = None):
        self.graph = graph
        self.given_layouts = layouts or {}
        self.tags: dict[torch.fx.Node, Any] = {}
        # constant_pad_nd node -> (axis, symbol, amount, value) of the shift it begins
        self.shifts: dict[torch.fx.Node, tuple] = {}
        self.symbols: dict[str, Any] = {}  # name -> sympy symbol
        self.carriers: dict[str, torch.SymInt] = {}  # name -> a SymInt that is the symbol
        self.tensor_inputs: dict[int, list[tuple[int, str]]] = {}
        self.size_inputs: dict[int, str] = {}
        self.masks: dict[str, torch.fx.Node] = {}
        self.outputs: dict[int, list[tuple[int, str]]] = {}
        self.size_outputs: dict[int, str] = {}
        self.size_input_exprs: dict[int, str] = {}
        self.merged_inputs: dict[int, list[tuple[int, tuple]]] = {}
        self.merged_outputs: dict[int, list[tuple[int, tuple]]] = {}
        self.layouts: dict[str, dict[int, tuple]] = {}
        self.limits: dict[str, int | None] = {}
        self.exact: dict[str, Any] = {}  # name -> symbol read as a value: not padded
        self.exact_inputs: dict[int, list[tuple[int, str]]] = {}
        self.exact_size_inputs: dict[int, str] = {}
        self.fake_mode = None
        self.device: torch.device | None = None

    # -- driver

    def run(self) -> None:
        self._inputs([n for n in self.graph.nodes if n.op == "placeholder"])
        self._walk()

    def _inputs(self, placeholders: list[torch.fx.Node]) -> None:
        """The symbols and the placeholders' tags."""
        self._find_symbols(placeholders)
        if not self.symbols:
            raise NothingToBucket("the graph has no symbolic size to bucket")
        self._keep_exact_what_values_read()
        for position, node in enumerate(placeholders):
            self._placeholder(position, node)
            self._exact_bindings(position, node)

    def _keep_exact_what_values_read(self) -> None:
        """A symbol some op reads as a value (a bounds check against a vocabulary's size)
        stays at its exact size: it is no longer the analysis's to pad, and a padded
        size would be the wrong value. Where every symbol is read so, nothing is set
        aside: the analysis refuses as before, naming the first such use."""
        read = set()
        for node in self.graph.nodes:
            if node.op == "call_function":
                read |= {s.name for s in self._value_uses(node)}
        exact = read & set(self.symbols)
        if not exact or exact == set(self.symbols):
            return
        for name in exact:
            self.exact[name] = self.symbols.pop(name)
            self.limits.pop(name, None)

    def _exact_bindings(self, position: int, node: torch.fx.Node) -> None:
        """Where a call finds each exact symbol's value (``_keep_exact_what_values_read``)."""
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = expr_of(value)
            if getattr(expr, "name", None) in self.exact:
                self.exact_size_inputs[position] = expr.name
        elif isinstance(value, torch.Tensor):
            dims = [
                (axis, expr.name)
                for axis, expr in enumerate(exprs(value))
                if getattr(expr, "name", None) in self.exact
            ]
            if dims:
                self.exact_inputs[position] = dims

    def _visit(self, node: torch.fx.Node) -> None:
        """One op call: checked, handed to its rule, its tags checked."""
        if self._drop_size_assertion(node):
            return
        self._check_value_uses(node)
        self._call(node)
        self._check_tags(node)

    def _walk(self) -> None:
        for node in list(self.graph.nodes):  # the nodes rules insert are not walked
            if node.op == "call_function":
                self._visit(node)
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
            if isinstance(value, torch.Tensor) and self.fake_mode is None:
                # any tensor input's mode: a backward's may all have merged sizes (2*s0)
                self.fake_mode = getattr(value, "fake_mode", None)
                self.device = value.device  # where the masks are made
            for dim in dims:
                if isinstance(dim, torch.SymInt) and isinstance(expr_of(dim), sympy.Symbol):
                    symbol = expr_of(dim)  # s0, or s0 + k with k a pinned int of value 0
                    name = symbol.name
                    self.symbols[name] = symbol
                    if dim.node.expr == symbol:
                        self.carriers.setdefault(name, dim)
                    bounds = dim.node.shape_env.var_to_range.get(symbol)
                    upper = bounds.upper if bounds is not None else None
                    self.limits[name] = (
                        int(upper) if isinstance(upper, (int, sympy.Integer)) else None
                    )

    def _placeholder(self, position: int, node: torch.fx.Node) -> None:
        import sympy

        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = expr_of(value)
            if self._free(expr):
                if isinstance(expr, sympy.Symbol):
                    self.size_inputs[position] = expr.name
                else:
                    self.size_input_exprs[position] = self._expression(expr, node.name)
            return
        if not isinstance(value, torch.Tensor):
            if isinstance(value, (torch.SymFloat, torch.SymBool)):
                raise BucketRefused(f"graph input {node.name} is a symbolic {type(value)}")
            return
        tags, padded, merged = [], [], []
        layout = self.given_layouts.get(node.name, {})
        for axis, expr in enumerate(exprs(value)):
            if not self._free(expr):
                tags.append(None)
            elif isinstance(expr, sympy.Symbol):
                tags.append((expr,))
                padded.append((axis, expr.name))
            elif axis in layout and same(product(self._atoms(layout[axis])), expr):
                tags.append(self._atoms(layout[axis]))
                merged.append((axis, layout[axis]))
            else:
                raise BucketRefused(
                    f"input {node.name} dimension {axis} has size {expr}, not one symbol: "
                    "it cannot be padded to a bucket"
                )
        self.tags[node] = tuple(tags)
        if padded:
            self.tensor_inputs[position] = padded
        if merged:
            self.merged_inputs[position] = merged

    def _atoms(self, names: tuple) -> tuple:
        """A layout's atoms (symbol names and ints) as tags hold them."""
        unbound = [a for a in names if not isinstance(a, int) and a not in self.symbols]
        if unbound:
            raise BucketRefused(
                f"symbol {unbound[0]} is no input's whole dimension: a call cannot bind it"
            )
        return tuple(a if isinstance(a, int) else self.symbols[a] for a in names)

    def _expression(self, expr, where: str) -> str:
        """``expr`` as the runtime evaluates it; every symbol in it must be bound."""
        from .dynamic_signature import expression_text

        unbound = sorted(
            s.name
            for s in expr.free_symbols
            if s.name not in self.symbols and s.name not in self.exact
        )
        if unbound:
            raise BucketRefused(f"{where} = {expr} uses {unbound[0]}, no input's whole dimension")
        try:
            return expression_text(expr)
        except TorchNeuronError:
            raise BucketRefused(f"{where} = {expr} has no form the runtime evaluates") from None

    def _free(self, expr) -> bool:
        """Whether ``expr`` depends on a bucketed symbol."""
        return any(s.name in self.symbols for s in getattr(expr, "free_symbols", ()))

    def _drop_size_assertion(self, node: torch.fx.Node) -> bool:
        """An assertion over input sizes alone (``u0 >= 0`` in the backward of a
        selection: the forward asserted it of the count it returned) states a fact of the
        true sizes; in the program it would read padded ones. Dropped."""
        if node.target is not torch.ops.aten._assert_scalar.default:
            return False
        condition = node.args[0]
        value = condition.meta.get("val") if isinstance(condition, torch.fx.Node) else None
        if not isinstance(value, torch.SymBool):
            return False
        free = getattr(expr_of(value), "free_symbols", ())
        if not free or any(s.name not in self.symbols for s in free):
            return False
        self.graph.erase_node(node)
        return True

    def _check_value_uses(self, node: torch.fx.Node) -> None:
        """A bucketed size in a value position would read the padded size."""
        for position, expr in self._value_uses(node, with_positions=True):
            if self._free(expr):
                raise BucketRefused(
                    f"{describe(node)} uses the size {expr} as a value "
                    f"(argument {position}): it would read the padded size"
                )

    def _value_uses(self, node: torch.fx.Node, with_positions: bool = False) -> list:
        """The symbolic sizes ``node`` reads as values (not as shapes): their symbols, or
        with ``with_positions`` (argument position, expression) pairs."""
        if not isinstance(node.target, torch._ops.OpOverload):
            return []  # SymInt arithmetic: checked where its result is used
        if node.target is torch.ops.aten.sym_size.int:
            return []
        allowed = SHAPE_ARGS.get(node.target, set())
        arguments = list(enumerate(node.args)) + [(k, v) for k, v in node.kwargs.items()]
        found = []
        for position, argument in arguments:
            if position in allowed:
                continue
            for leaf in torch.utils._pytree.tree_leaves(argument):
                value = leaf.meta.get("val") if isinstance(leaf, torch.fx.Node) else leaf
                if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                    expr = expr_of(value)
                    if with_positions:
                        found.append((position, expr))
                    else:
                        found.extend(getattr(expr, "free_symbols", ()))
        return found

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
                raise BucketRefused(f"{describe(node)}: its output could not be followed")
            for axis, (expr, tag) in enumerate(zip(exprs(item), item_tags)):
                known = tag is not None and same(product(tag), expr)
                if self._free(expr) != (tag is not None) or (tag is not None and not known):
                    raise BucketRefused(
                        f"{describe(node)} gives dimension {axis} of size {expr} in a way "
                        "the bucket analysis cannot follow"
                    )

    def _output(self, node: torch.fx.Node) -> None:
        results = node.args[0]
        results = results if isinstance(results, (tuple, list)) else (results,)
        for position, result in enumerate(results):
            value = result.meta.get("val") if isinstance(result, torch.fx.Node) else result
            if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                expr = expr_of(value)
                if not self._free(expr):
                    continue
                if not isinstance(value, torch.SymInt):
                    raise BucketRefused(f"the graph returns the size {expr}")
                # given back at its true value
                self.size_outputs[position] = self._expression(expr, f"output {position}")
                continue
            if not isinstance(value, torch.Tensor):
                continue
            sliced, merged = [], []
            for axis, tag in enumerate(self.tags[result]):
                if tag is None:
                    continue
                if len(tag) == 1:
                    sliced.append((axis, tag[0].name))
                    continue
                atoms = tuple(_atom_name(a) for a in tag)
                self._atoms(atoms)  # each symbol bound by the call
                merged.append((axis, atoms))
            if sliced:
                self.outputs[position] = sliced
            if merged:
                self.merged_outputs[position] = merged
                if isinstance(result, torch.fx.Node):
                    self.layouts[result.name] = dict(merged)

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
            if isinstance(item, torch.Tensor) and any(self._free(e) for e in exprs(item)):
                return True
        return False

    def _refuse_along(self, node, what: str = "") -> BucketRefused:
        return BucketRefused(
            f"{describe(node)} {what or 'is not known to keep positions independent'} "
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
                mask.meta["val"] = torch.empty(
                    (self.carriers[symbol],), dtype=torch.bool, device=self.device
                )
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
                current = self._where_along(
                    view, axis, rank, current, fill_value(fill, value.dtype), value
                )
                self.tags[current] = tags
        return current

    def _where_along(self, mask, axis: int, rank: int, kept, fill, like) -> torch.fx.Node:
        """``where(mask, kept, fill)`` with the 1-D ``mask`` laid along ``axis`` of a
        rank-``rank`` value, ``fill`` a scalar of ``like``'s dtype and device; inserted
        where the graph's insertion point is."""
        for _ in range(axis):
            mask = self._insert(aten.unsqueeze.default, (mask, 0))
        for _ in range(rank - axis - 1):
            mask = self._insert(aten.unsqueeze.default, (mask, -1))
        constant = self._insert(
            aten.scalar_tensor.default, (fill,), {"dtype": like.dtype, "device": like.device}
        )
        return self._insert(aten.where.self, (mask, kept, constant))

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
                self.tags[node] = clean(value)
            return  # sizes and their arithmetic: checked where used
        if torch.Tag.nondeterministic_seeded in target.tags:
            raise BucketRefused(
                f"{describe(node)} draws random numbers: padding changes which numbers the "
                "true positions draw"
            )
        if target._schema.is_mutable and self._touches_tags(node):
            raise self._refuse_along(node, "writes in place")
        rule = RULES.get(target)
        if rule is None and (target in ELEMENTWISE or torch.Tag.pointwise in target.tags):
            rule = TagRules._elementwise
        if rule is None and target in REDUCTIONS:
            rule = TagRules._reduction
        if rule is None:
            if self._touches_tags(node):
                raise self._refuse_along(node)
            self.tags[node] = clean(value)
            return
        rule(self, node)


def _atom_name(atom) -> str | int:
    """A tag's atom as a layout keeps it: a symbol's name, or a static factor's int."""
    import sympy

    if isinstance(atom, int) or isinstance(atom, sympy.Integer):
        return int(atom)
    if isinstance(atom, sympy.Symbol):
        return atom.name
    raise BucketRefused(f"a merged dimension has the factor {atom}, neither a symbol nor an int")
