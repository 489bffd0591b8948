"""Data-dependent sizes compiled as one program at a bound (issue 27, part 1).

With ``torch._dynamo.config.capture_dynamic_output_shape_ops``, ``nonzero``,
``masked_select``, boolean-mask indexing and assignment and ``unique`` reach the graph
with an *unbacked* size ``u0``: how many elements they select is known only once the
data is. Each such op has a bound from its input's size (``nonzero(x)`` selects at most
``x.numel()`` positions), so the graph is compiled once, at the bound:

1. each producer is replaced by its padded form (``bounded_ops.py``): the selected
   elements first, in PyTorch's order, then filler that is in range as an index, plus a
   0-d *count*, the true size, computed in the same program;
2. the bucket analysis (``buckets_analysis.py``) follows ``u0`` as it follows a
   bucketed symbol, masking every reduction over the padded positions; the mask,
   ``arange(bound) < count``, is made in the program rather than given at the call;
3. Dynamo's range assertions on ``u0`` (``u0 >= 1`` before an ``amax``) are taken out
   of the program and checked on the host against the true counts;
4. the graph is traced again with the bound in place of ``u0`` (static shapes, one
   program) and compiled by the other routes, the counts as extra outputs;
5. ``BoundedFunction`` runs it, reads the counts and slices each padded output back to
   its true size. A new count costs nothing: the program does not change.

A graph the analysis cannot follow (a sort along a padded dimension, a size used as a
value), a producer without a bound (``bincount``, ``repeat_interleave`` with a tensor:
their output sizes come from values, not from a size), or data-dependent sizes in a
graph whose input sizes are themselves symbolic raise ``UnsupportedOpError`` naming the
op: the graph then runs on the CPU with a warning, or the error is raised when the
fallback is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from torchneuron.counters import Counters
from torchneuron.lowering import LoweringError, UnsupportedOpError, decomposition_table

from . import bounded_ops
from .buckets_analysis import Analysis
from .buckets_rules import RULES
from .buckets_tags import ELEMENTWISE, BucketRefused, clean, describe, exprs

aten = torch.ops.aten

# Counters of this process: bounded_graphs (graphs compiled at their bounds), refusals,
# calls (runs of such a graph, whatever their counts)
STATS = Counters("bounded_graphs", "refusals", "calls")
reset_stats = STATS.reset
stats = STATS.snapshot

_ASSERTS = {aten._assert_scalar.default}
_RANGES = {aten.sym_constrain_range.default, aten.sym_constrain_range_for_size.default}
# producers whose size no input's size bounds
_UNBOUNDED = {
    aten.bincount.default: "its length is the largest value plus one",
    aten.repeat_interleave.Tensor: "its length is the sum of the repeats",
    aten.repeat_interleave.self_Tensor: "its length is the sum of the repeats",
}


def unbacked_symbols(value: Any) -> set:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    try:
        return set(free_unbacked_symbols(value))
    except Exception:
        return set()


def has_data_dependent_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether some value that ``gm`` computes, from inputs of static sizes, has a size
    only its data decides. (A graph given such sizes as inputs, a training backward of
    a selection, is padded to its forward's bounds by the next route; one with symbolic
    input sizes is specialized per shape, and each specialization comes here.)"""
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = node.meta.get("val")
            if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                return False
            if isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape):
                return False
        elif _sized_by_data(node.meta.get("val")):
            return True
    return False


def _sized_by_data(value: Any) -> bool:
    """Whether a tensor in ``value`` has a data-dependent size (a scalar read from data,
    ``x.item()``, is not a size: the static route compiles it)."""
    items = value if isinstance(value, (tuple, list)) else [value]
    return any(isinstance(v, torch.Tensor) and unbacked_symbols(v.shape) for v in items)


def bounds_of_inputs(gm: torch.fx.GraphModule, bounds: dict[str, int]) -> tuple[int, ...] | None:
    """The bounds, as a bucket ladder, of the data-dependent sizes ``gm``'s inputs carry,
    when every symbolic size of its inputs is one whose bound ``bounds`` knows."""
    symbols: set[str] = set()
    for node in gm.graph.find_nodes(op="placeholder"):
        value = node.meta.get("val")
        dims = [value] if isinstance(value, torch.SymInt) else getattr(value, "shape", ())
        for dim in dims:
            if isinstance(dim, int):
                continue
            if not isinstance(dim, torch.SymInt):
                return None
            names = {s.name for s in dim.node.expr.free_symbols}
            if not names or not names <= set(bounds):
                return None
            symbols |= names
    if not symbols:
        return None
    ladder = tuple(sorted({bounds[name] for name in symbols if bounds[name] > 0}))
    return ladder or None


@dataclass
class BoundedPlan:
    graph_module: torch.fx.GraphModule  # static shapes; the counts are its last outputs
    example_inputs: list
    symbols: list[str]  # one count output each, in this order
    outputs: dict[int, list[tuple[int, str]]]  # output position -> [(axis, symbol)]
    size_outputs: dict[int, Any] = field(default_factory=dict)  # position -> sympy expr
    # (condition over the symbols, message): Dynamo's assertions, checked on the host
    assertions: list[tuple[Any, str]] = field(default_factory=list)
    bounds: dict[str, int] = field(default_factory=dict)  # symbol -> its bound


def plan_bounded(gm: torch.fx.GraphModule, example_inputs) -> BoundedPlan:
    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    analysis = BoundedAnalysis(graph)
    try:
        analysis.run()
    except (BucketRefused, UnsupportedOpError) as error:
        raise _refused(str(error)) from None
    except Exception as error:  # a graph the rules do not expect: refused, never guessed
        raise _refused(
            f"the analysis could not follow the graph ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:300]})"
        ) from None
    (out,) = graph.find_nodes(op="output")
    results = out.args[0]
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    symbols = list(analysis.counts)
    out.args = (tuple(results + [analysis.counts[name] for name in symbols]),)
    graph.eliminate_dead_code()
    masked = torch.fx.GraphModule(gm, graph)
    static, inputs = _retrace(masked, example_inputs)
    return BoundedPlan(
        graph_module=static,
        example_inputs=inputs,
        symbols=symbols,
        outputs=analysis.outputs,
        size_outputs=analysis.size_exprs,
        assertions=analysis.assertions,
        bounds=dict(analysis.bounds),
    )


class DataDependentSizeError(LoweringError):
    """A size the data decides that this compiler cannot bound or follow."""


def _refused(reason: str) -> DataDependentSizeError:
    return DataDependentSizeError(f"a data-dependent size is not compiled at a bound: {reason}")


class BoundedAnalysis(Analysis):
    """The bucket analysis with data-dependent sizes as its symbols (module docstring)."""

    def __init__(self, graph: torch.fx.Graph):
        super().__init__(graph)
        self.counts: dict[str, torch.fx.Node] = {}  # symbol -> its 0-d count node
        self.bounds: dict[str, int] = {}  # symbol -> its bound
        self.assertions: list[tuple[Any, str]] = []
        self.size_exprs: dict[int, Any] = {}

    def _inputs(self, placeholders: list[torch.fx.Node]) -> None:
        """Static inputs only: their dimensions carry no tag."""
        for node in placeholders:
            value = node.meta.get("val")
            if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) or (
                isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape)
            ):
                raise BucketRefused(
                    f"input {node.name} has a symbolic size: data-dependent sizes are "
                    "compiled at a bound only in graphs of static input sizes"
                )
            if isinstance(value, torch.Tensor):
                self.tags[node] = (None,) * value.dim()
                if self.fake_mode is None:
                    self.fake_mode = getattr(value, "fake_mode", None)
        if self.fake_mode is None:
            from torch._guards import detect_fake_mode

            self.fake_mode = detect_fake_mode()

    def _visit(self, node: torch.fx.Node) -> None:
        if node.target in _ASSERTS or node.target in _RANGES:
            self._assertion(node)
            return
        if node.target in _UNBOUNDED and unbacked_symbols(node.meta.get("val")):
            raise BucketRefused(
                f"{describe(node)} has no bound from its input's size: {_UNBOUNDED[node.target]}"
            )
        producer = bounded_ops.producer_of(node)
        if producer is not None and unbacked_symbols(node.meta.get("val")):
            self._produce(node, producer)
            return
        if node.target in (aten.index_put.default, aten._index_put_impl.default):
            if self._assign_selection(node):
                return
        if node.target is aten.index.Tensor and self._padded_index(node):
            return
        self._check_sizes_known(node)
        super()._visit(node)

    def _check_sizes_known(self, node: torch.fx.Node) -> None:
        """A tensor sized by a scalar read from data (``narrow(x, 0, 0, n.item())``) has
        no bound here: refused, naming it."""
        value = node.meta.get("val")
        for item in value if isinstance(value, (tuple, list)) else [value]:
            if not isinstance(item, torch.Tensor):
                continue
            unknown = sorted(s.name for s in unbacked_symbols(item) if s.name not in self.symbols)
            if unknown:
                raise BucketRefused(
                    f"{describe(node)} is sized by {unknown[0]}, a value read from a "
                    "tensor: it has no bound"
                )

    # -- producers

    def _produce(self, node: torch.fx.Node, producer: bounded_ops.Producer) -> None:
        import sympy

        value = node.meta["val"]
        items = list(value) if isinstance(value, (tuple, list)) else [value]
        symbol = None
        for item in items:
            for dim in item.shape if isinstance(item, torch.Tensor) else ():
                if unbacked_symbols(dim):
                    if not isinstance(dim.node.expr, sympy.Symbol):
                        raise BucketRefused(f"{describe(node)} has the size {dim}")
                    symbol = dim
                    break
            if symbol is not None:
                break
        if symbol is None:
            raise BucketRefused(f"{describe(node)}: no data-dependent dimension found")
        name = symbol.node.expr.name
        args = producer.arguments(node)
        bound = producer.bound(node)
        with self.graph.inserting_before(node):
            padded = self.graph.call_function(producer.padded, args)
        padded.meta["val"] = value
        if name in self.symbols:
            # one selection reached twice (the tracer memoizes a mask's count: x[mask]
            # and nonzero(mask) share it): the same count, so the same bound or none
            if self.bounds[name] != bound:
                raise BucketRefused(
                    f"{describe(node)}: the size {name} has two producers of different "
                    f"bounds ({self.bounds[name]} and {bound})"
                )
        else:
            with self.graph.inserting_before(node):
                count = self.graph.call_function(producer.count, args)
                mask = self.graph.call_function(bounded_ops.count_mask, (count, bound))
            device = next(i.device for i in items if isinstance(i, torch.Tensor))
            with self.fake_mode:
                count.meta["val"] = torch.empty((), dtype=torch.int64, device=device)
                mask.meta["val"] = torch.empty((symbol,), dtype=torch.bool, device=device)
            self.symbols[name] = symbol.node.expr
            self.carriers[name] = symbol
            self.masks[name] = mask
            self.counts[name] = count
            self.bounds[name] = bound
            self.tags[count] = ()
            self.tags[mask] = ((symbol.node.expr,),)
        tags = [self._symbol_tags(item) for item in items]
        self.tags[padded] = tags if isinstance(value, (tuple, list)) else tags[0]
        node.replace_all_uses_with(padded)
        self.graph.erase_node(node)

    def _symbol_tags(self, item) -> tuple:
        if not isinstance(item, torch.Tensor):
            return ()
        return tuple(
            (e,) if any(s.name in self.symbols for s in e.free_symbols) else None
            for e in exprs(item)
        )

    def _assign_selection(self, node: torch.fx.Node) -> bool:
        """``x[mask] = values`` with one value per selected element (``values`` padded
        by a producer): each selected position reads its value by its rank among the
        selected ones, and the mask's own count must equal the values' (host check)."""
        source, indices, values = node.args[0], node.args[1], node.args[2]
        accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
        value_tags = self._tag(values)
        if not value_tags or value_tags[0] is None or len(value_tags[0]) != 1:
            return False
        if (
            len(indices) != 1
            or not isinstance(indices[0], torch.fx.Node)
            or indices[0].meta["val"].dtype != torch.bool
        ):
            return False  # by indices (index_add's accumulation): the bucket rule's case
        mask = indices[0]
        if any(t is not None for t in value_tags[1:]) or any(
            t is not None for t in self.tags[source]
        ):
            raise self._refuse_along(node, "assigns padded values along another dimension")
        symbol = value_tags[0][0].name
        with self.graph.inserting_before(node):
            assigned = self.graph.call_function(
                bounded_ops.mask_assign, (source, mask, values, bool(accumulate))
            )
            count = self.graph.call_function(bounded_ops.mask_count, (mask,))
        assigned.meta["val"] = node.meta["val"]
        self.tags[assigned] = (None,) * node.meta["val"].dim()
        check = f"{symbol}__mask_{len(self.counts)}"
        self.counts[check] = count
        self.tags[count] = ()
        import sympy

        self.assertions.append(
            (
                sympy.Eq(sympy.Symbol(check), self.symbols[symbol]),
                f"shape mismatch: the value tensor's {symbol} elements cannot be assigned "
                "to the mask's selected elements (their counts differ)",
            )
        )
        node.replace_all_uses_with(assigned)
        self.graph.erase_node(node)
        return True

    def _padded_index(self, node: torch.fx.Node) -> bool:
        """``x[i]`` with a long index ``i`` padded by a producer: filler indices are 0,
        in range, and their rows are padding of the result."""
        source, indices = node.args[0], node.args[1]
        tagged = [
            (k, i) for k, i in enumerate(indices) if i is not None and any(self._tag(i) or ())
        ]
        if not tagged:
            return False
        present = [k for k, i in enumerate(indices) if i is not None]
        if present != list(range(present[0], present[-1] + 1)):
            raise self._refuse_along(node, "indexes by separated index tensors")
        tags = {self._tag(indices[k]) for k in present}
        if len(tags) != 1:
            raise self._refuse_along(node, "indexes by tensors laid out differently")
        (index_tags,) = tags
        source_tags = self.tags[source]
        if any(source_tags[k] is not None for k in present):
            raise self._refuse_along(node, "indexes by data")
        start, stop = present[0], present[-1] + 1
        self.tags[node] = (*source_tags[:start], *index_tags, *source_tags[stop:])
        self._check_tags(node)
        return True

    # -- elementwise ops over two selections

    def _call(self, node: torch.fx.Node) -> None:
        target = node.target
        if target is aten.flip.default:  # keeps positions along the dimensions it leaves
            tags = self.tags[node.args[0]]
            if any(tags[d % len(tags)] is not None for d in node.args[1]):
                raise self._refuse_along(node, "reverses positions")
            self.tags[node] = tags
            return
        if (
            isinstance(target, torch._ops.OpOverload)
            and target not in RULES
            and (target in ELEMENTWISE or torch.Tag.pointwise in target.tags)
            and isinstance(node.meta.get("val"), torch.Tensor)
        ):
            self._unify_selections(node)
        super()._call(node)

    def _unify_selections(self, node: torch.fx.Node) -> None:
        """``a[m1] + b[m2]``: two selections of one size for the tracer (it asserts
        their counts equal) but two symbols here. Of the same bound, the one the traced
        result names stands for both, and the host checks the counts are equal; the
        operands' tags are rewritten to it."""
        value = node.meta["val"]
        result_exprs = list(exprs(value))
        for argument in self._tensor_args(node):
            tags = list(self.tags[argument])
            offset = value.dim() - len(tags)
            for axis, tag in enumerate(tags):
                if tag is None or len(tag) != 1 or tag[0].name not in self.bounds:
                    continue
                wanted = result_exprs[offset + axis]
                name = getattr(wanted, "name", None)
                if name is None or name == tag[0].name or name not in self.bounds:
                    continue
                if self.bounds[name] != self.bounds[tag[0].name]:
                    raise BucketRefused(
                        f"{describe(node)} combines selections of different bounds "
                        f"({tag[0].name} and {name})"
                    )
                import sympy

                self.assertions.append(
                    (
                        sympy.Eq(tag[0], wanted),
                        f"shape mismatch: {describe(node)} combines selections of different sizes",
                    )
                )
                tags[axis] = (wanted,)
            self.tags[argument] = tuple(tags)

    # -- assertions

    def _assertion(self, node: torch.fx.Node) -> None:
        """Dynamo's assertion on a data-dependent size: checked on the host after the
        run (in the program it would see the bound); others stay as they are."""
        import sympy

        if node.target in _ASSERTS:
            condition = node.args[0]
            value = condition.meta.get("val") if isinstance(condition, torch.fx.Node) else None
            if not isinstance(value, torch.SymBool) or not unbacked_symbols(value):
                self.tags[node] = clean(node.meta.get("val"))
                return
            message = node.args[1] if len(node.args) > 1 else "assertion failed"
            self.assertions.append((value.node.expr, str(message)))
        else:
            size = node.args[0]
            value = size.meta.get("val") if isinstance(size, torch.fx.Node) else size
            if not isinstance(value, torch.SymInt) or not unbacked_symbols(value):
                return
            low = node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None)
            high = node.kwargs.get("max", node.args[2] if len(node.args) > 2 else None)
            expr = value.node.expr
            if low is not None:
                self.assertions.append((sympy.Ge(expr, low), f"{expr} >= {low}"))
            if high is not None:
                self.assertions.append((sympy.Le(expr, high), f"{expr} <= {high}"))
        self.graph.erase_node(node)

    # -- outputs

    def _output(self, node: torch.fx.Node) -> None:
        results = node.args[0]
        results = results if isinstance(results, (tuple, list)) else (results,)
        for position, result in enumerate(results):
            value = result.meta.get("val") if isinstance(result, torch.fx.Node) else result
            if isinstance(value, torch.SymInt) and self._free(value.node.expr):
                self.size_exprs[position] = value.node.expr
                continue
            if isinstance(value, (torch.SymFloat, torch.SymBool)) and self._free(value.node.expr):
                raise BucketRefused(f"the graph returns {value.node.expr}")
            if not isinstance(value, torch.Tensor):
                continue
            sliced = []
            for axis, tag in enumerate(self.tags[result]):
                if tag is None:
                    continue
                if len(tag) != 1:
                    raise BucketRefused(
                        f"output {position} merges a data-dependent size with others"
                    )
                sliced.append((axis, tag[0].name))
            if sliced:
                self.outputs[position] = sliced


def _retrace(masked: torch.fx.GraphModule, example_inputs) -> tuple[torch.fx.GraphModule, list]:
    """``masked`` traced again on inputs of its static sizes: the producers' padded forms
    decomposed, every size that was data-dependent now its bound."""
    from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import make_fx

    with unset_fake_temporarily():
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            inputs = [
                torch.empty_strided(
                    tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device=v.device
                )
                if isinstance(v, torch.Tensor)
                else v
                for v in example_inputs
            ]

        def run(*args):
            return torch.fx.Interpreter(masked).run(*args)

        try:
            static = make_fx(run, decomposition_table=decomposition_table(), tracing_mode="real")(
                *inputs
            )
        except Exception as error:
            raise _refused(
                f"tracing it at its bounds failed ({type(error).__name__}: "
                f"{' '.join(str(error).split())[:300]})"
            ) from None
    leftover = [n for n in static.graph.nodes if unbacked_symbols(n.meta.get("val"))]
    if leftover:
        raise _refused(f"{leftover[0].name} still has a data-dependent size after padding")
    return static, inputs


class BoundedFunction:
    """Runs the program compiled at the bound; slices its outputs to the true counts."""

    def __init__(self, inner, plan: BoundedPlan):
        self.inner = inner
        self.plan = plan

    def __call__(self, *args):
        STATS["calls"] += 1
        results = list(self.inner(list(args)))
        count_values = results[len(results) - len(self.plan.symbols) :]
        del results[len(results) - len(self.plan.symbols) :]
        counts = {name: int(value.item()) for name, value in zip(self.plan.symbols, count_values)}
        _check(self.plan.assertions, counts)
        for position, cuts in self.plan.outputs.items():
            tensor = results[position]
            for axis, symbol in cuts:
                tensor = tensor.narrow(axis, 0, counts[symbol])
            results[position] = tensor
        for position, expr in self.plan.size_outputs.items():
            results[position] = int(_substitute(expr, counts))
        return results


def _substitute(expr, counts: dict[str, int]):
    import sympy

    return expr.xreplace(
        {
            s: sympy.Integer(counts[s.name])
            for s in getattr(expr, "free_symbols", ())
            if s.name in counts
        }
    )


def _check(assertions, counts: dict[str, int]) -> None:
    for condition, message in assertions:
        if not bool(_substitute(condition, counts)):
            raise RuntimeError(f"{message} ({_describe_counts(condition, counts)})")


def _describe_counts(condition, counts: dict[str, int]) -> str:
    names = sorted(s.name for s in getattr(condition, "free_symbols", ()))
    return ", ".join(f"{n} = {counts[n]}" for n in names if n in counts)


def compile_bounded(
    gm: torch.fx.GraphModule, example_inputs, name: str, compile_part, bounds: dict | None = None
):
    """The callable of ``gm`` compiled at its bounds (``compile_part`` compiles the static
    graph through the other routes); ``DataDependentSizeError`` where it cannot be.
    ``bounds`` receives each data-dependent size's bound, by symbol name, for the graph
    that takes the sizes as inputs (a training forward's backward)."""
    try:
        plan = plan_bounded(gm, example_inputs)
    except DataDependentSizeError:
        STATS["refusals"] += 1
        raise
    inner = compile_part(plan.graph_module, plan.example_inputs, name)
    STATS["bounded_graphs"] += 1
    if bounds is not None:
        bounds.update(plan.bounds)
    return BoundedFunction(inner, plan)
