"""Argument normalisations applied to FX nodes before import.

A table from ATen op to a rule that rewrites the node's arguments into the
form torch-mlir's lowerings handle correctly. Each rule says what it fixes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

aten = torch.ops.aten

NodeRule = Callable[[torch.fx.Node], None]
NORMALIZATIONS: dict[object, NodeRule] = {}


def normalizes(*ops) -> Callable[[NodeRule], NodeRule]:
    def register(rule: NodeRule) -> NodeRule:
        for op in ops:
            NORMALIZATIONS[op] = rule
        return rule

    return register


def normalize_graph(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if _replace_empty_result(node):
            continue
        rule = NORMALIZATIONS.get(node.target)
        if rule is not None:
            rule(node)
    graph.eliminate_dead_code()


def _replace_empty_result(node: torch.fx.Node) -> bool:
    # An op whose result has no elements needs none of its inputs: a constant of
    # that shape is the whole answer. torch-mlir's lowerings of many ops (gather
    # paths of pooling, scatter, ...) fail on zero-size operands.
    value = node.meta.get("val")
    if (
        not isinstance(value, torch.Tensor)
        or not statically_known_true(value.numel() == 0)  # a symbolic size may be 0 or not
        or node.target is aten.full.default
    ):
        return False
    graph = node.graph
    with graph.inserting_before(node):
        constant = graph.call_function(
            aten.full.default,
            (list(value.shape), False if value.dtype == torch.bool else 0),
            {"dtype": value.dtype, "device": torch.device("cpu")},
        )
    constant.meta = {
        k: v for k, v in node.meta.items() if k in ("val", "stack_trace", "tensor_meta")
    }
    node.replace_all_uses_with(constant)
    return True


@normalizes(
    aten.max_pool2d_with_indices.default,
    aten.max_pool2d.default,
    aten.avg_pool2d.default,
    aten.max_pool1d.default,
    aten.avg_pool1d.default,
    aten.max_pool3d_with_indices.default,
    aten.avg_pool3d.default,
)
def _explicit_pool_stride(node: torch.fx.Node) -> None:
    # stride=[] means "same as kernel_size"; torch-mlir's StableHLO lowering
    # reads it as stride 1 and builds an ill-typed reduce_window.
    args = list(node.args)
    if len(args) >= 2 and (len(args) < 3 or not args[2]):
        if node.kwargs.get("stride"):
            return
        kernel = args[1]
        stride = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
        if len(args) >= 3:
            args[2] = stride
        else:
            args.append(stride)
        node.args = tuple(args)
        node.kwargs = {k: v for k, v in node.kwargs.items() if k != "stride"}


@normalizes(
    aten.gt.Scalar, aten.ge.Scalar, aten.lt.Scalar, aten.le.Scalar, aten.eq.Scalar, aten.ne.Scalar
)
def _float_scalar_for_float_tensor(node: torch.fx.Node) -> None:
    # An integer Scalar against a float tensor means the same as its float value, but
    # torch-mlir folds such comparisons of constant tensors wrongly (full(2.0) > 1 ->
    # false, full(2.5) >= 2 -> false): a silently wrong program.
    value = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    other = node.args[1] if len(node.args) > 1 else None
    if (
        isinstance(value, torch.Tensor)
        and value.dtype.is_floating_point
        and isinstance(other, int)
        and not isinstance(other, bool)
    ):
        node.args = (node.args[0], float(other), *node.args[2:])


@normalizes(
    aten.add.Tensor,
    aten.sub.Tensor,
    aten.mul.Tensor,
    aten.div.Tensor,
    aten.add.Scalar,
    aten.sub.Scalar,
    aten.mul.Scalar,
    aten.div.Scalar,
    aten.rsub.Scalar,
)
def _float_operand_for_float_tensor(node: torch.fx.Node) -> None:
    # A negative int operand of a float tensor's arithmetic means its float value, but
    # torch-mlir folds a constant tensor times it as an unsigned 64-bit number:
    # full_like(x, 1) * -3 became 1.8446744e19. The float spelling folds correctly.
    _float_scalar_for_float_tensor(node)


@normalizes(aten.eq.Tensor, aten.ne.Tensor, aten.le.Tensor, aten.ge.Tensor)
def _self_comparison_of_floats(node: torch.fx.Node) -> None:
    # x == x is false for NaN, but torch-mlir folds a comparison of a value with itself
    # to a constant: isfinite (abs(x) != inf and x == x) came out true for NaN. The same
    # test written as abs(x) <= inf (false only for NaN) is not folded.
    lhs, rhs = node.args[0], node.args[1] if len(node.args) > 1 else None
    value = lhs.meta.get("val") if isinstance(lhs, torch.fx.Node) else None
    if lhs is not rhs or not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return
    graph = node.graph
    with graph.inserting_before(node):
        magnitude = graph.call_function(aten.abs.default, (lhs,))
        magnitude.meta["val"] = value.abs()
        ordered = graph.call_function(aten.le.Scalar, (magnitude, float("inf")))
        ordered.meta["val"] = node.meta.get("val")
        replacement = ordered
        if node.target is aten.ne.Tensor:
            replacement = graph.call_function(aten.logical_not.default, (ordered,))
            replacement.meta["val"] = node.meta.get("val")
    node.replace_all_uses_with(replacement)


@normalizes(aten.scalar_tensor.default)
def _scalar_tensor_of_a_tensor_element(node: torch.fx.Node) -> None:
    # scalar_tensor(_local_scalar_dense(t), dtype) -> t converted to dtype: the value never
    # needs to leave the device (torch-mlir lowers the round trip to tensor.extract and
    # arith ops, which are not StableHLO).
    source = node.args[0] if node.args else None
    if not (
        isinstance(source, torch.fx.Node)
        and source.op == "call_function"
        and source.target is aten._local_scalar_dense.default
    ):
        return
    element = source.args[0]
    value = element.meta.get("val") if isinstance(element, torch.fx.Node) else None
    result = node.meta.get("val")
    if (
        not isinstance(value, torch.Tensor)
        or value.numel() != 1
        or not isinstance(result, torch.Tensor)
    ):
        return
    graph = node.graph
    with graph.inserting_before(node):
        scalar = element
        if value.dim() != 0:
            scalar = graph.call_function(aten.reshape.default, (element, []))
            scalar.meta["val"] = value.reshape([])
        converted = graph.call_function(aten._to_copy.default, (scalar,), {"dtype": result.dtype})
    converted.meta = dict(node.meta)
    node.replace_all_uses_with(converted)


@normalizes(aten.slice_scatter.default)
def _bounded_slice_scatter(node: torch.fx.Node) -> None:
    # slice_scatter(x, src, dim, start, end) with end past the dimension (a backward of
    # x[..., k:] has end = 2**63 - 1) makes torch-mlir's StableHLO conversion allocate
    # for the whole range and throw std::bad_alloc. The same bounds, clamped as
    # PyTorch clamps them, select the same elements.
    names = ("input", "src", "dim", "start", "end", "step")
    bound = dict(zip(names, node.args, strict=False)) | dict(node.kwargs)
    value = bound["input"].meta.get("val") if isinstance(bound["input"], torch.fx.Node) else None
    dim = bound.get("dim", 0)
    if not isinstance(value, torch.Tensor) or not isinstance(dim, int) or value.dim() == 0:
        return
    size = value.shape[dim]
    start, end = bound.get("start"), bound.get("end")
    if isinstance(size, torch.SymInt):
        if bound.get("step", 1) == 1:
            start, end = (_in_range_bound(node, bound["input"], dim, v) for v in (start, end))
            if start is not _UNKNOWN and end is not _UNKNOWN:
                _scatter_as_concatenation(node, bound["input"], bound["src"], dim, start, end)
        return
    if not all(isinstance(v, int | None) for v in (size, start, end)):
        return  # a symbolic bound: left as it is
    start, end = _slice_bounds(size, start, end)
    node.args = (bound["input"], bound["src"], dim, start, end, bound.get("step", 1))
    node.kwargs = {}


_UNKNOWN = object()


def _in_range_bound(node: torch.fx.Node, source: torch.fx.Node, dim: int, bound):
    """A slice bound along symbolic dimension ``dim`` as ``_symbolic_bounds`` takes it:
    an int or None as it is; a symbolic one (``x[:, -k:]`` with ``k`` an int argument)
    counted from the start (``size + bound`` for a negative one) where the tracer knows
    it lies in [-size, size] (Dynamo guards a slice's bounds so), else ``_UNKNOWN``:
    PyTorch would clamp it, which the concatenation does not."""
    import operator

    if not isinstance(bound, torch.fx.Node):
        return bound
    value, size = bound.meta.get("val"), source.meta["val"].shape[dim]
    if not isinstance(value, torch.SymInt):
        return _UNKNOWN
    if _known(value >= 0) and _known(value <= size):
        return bound
    if _known(value < 0) and _known(value >= -size):
        with node.graph.inserting_before(node):
            length = node.graph.call_function(aten.sym_size.int, (source, dim))
            counted = node.graph.call_function(operator.add, (length, bound))
        length.meta["val"], counted.meta["val"] = size, size + value
        return counted
    return _UNKNOWN


def _known(condition) -> bool:
    """Whether ``condition`` (a SymBool) holds by the tracer's ranges, or is one of the
    conditions it guarded (Dynamo guards ``-k < 0 and -k >= -size`` for ``x[:, -k:]``);
    no guard is added."""
    if not isinstance(condition, torch.SymBool):
        return bool(condition)
    if statically_known_true(condition):
        return True
    import sympy

    expr = condition.node.expr
    for guard in condition.node.shape_env.guards:
        conjuncts = guard.expr.args if isinstance(guard.expr, sympy.And) else (guard.expr,)
        if expr in conjuncts:
            return True
    return False


def _scatter_as_concatenation(node, source, src, dim: int, start, end) -> None:
    """slice_scatter along a symbolic dimension (the backward of x[:, :-1] at a dynamic
    length) as cat(source[:start], src, source[end:]): torch-mlir lowers slice_scatter
    only with a constant end ("end is not constant"), slices and cat of symbolic sizes
    it lowers."""
    start, end = _symbolic_bounds(node, source, dim, start, end)
    _, stop = _symbolic_bounds(node, source, dim, end, None)  # the dimension's size
    value = source.meta["val"]
    graph = node.graph

    def bound_value(bound):
        return bound.meta["val"] if isinstance(bound, torch.fx.Node) else bound

    def sliced(low, high) -> torch.fx.Node | None:
        low_value, high_value = bound_value(low), bound_value(high)
        if statically_known_true(high_value - low_value <= 0):
            return None  # nothing of the source on this side
        with graph.inserting_before(node):
            piece = graph.call_function(aten.slice.Tensor, (source, dim, low, high, 1))
        piece.meta["val"] = aten.slice.Tensor(value, dim, low_value, high_value, 1)
        return piece

    pieces = [sliced(0, start), src, sliced(end, stop)]
    with graph.inserting_before(node):
        joined = graph.call_function(aten.cat.default, ([p for p in pieces if p is not None], dim))
    joined.meta = {k: v for k, v in node.meta.items() if k in ("val", "stack_trace", "tensor_meta")}
    node.replace_all_uses_with(joined)


@normalizes(aten.slice.Tensor)
def _slice_of_a_symbolic_dimension(node: torch.fx.Node) -> None:
    # x[:, :-1] along a symbolic dimension: torch-mlir's lowering has no form for a
    # negative bound of a dynamic size ("not support dynamic dimSize when end smaller
    # than 0"); the bound counted from the start (size - 1) is the same slice.
    names = ("input", "dim", "start", "end", "step")
    bound = dict(zip(names, node.args, strict=False)) | dict(node.kwargs)
    value = bound["input"].meta.get("val") if isinstance(bound["input"], torch.fx.Node) else None
    dim = bound.get("dim", 0)
    if not isinstance(value, torch.Tensor) or not isinstance(dim, int) or value.dim() == 0:
        return
    if not isinstance(value.shape[dim], torch.SymInt):
        return
    start, end = _symbolic_bounds(node, bound["input"], dim, bound.get("start"), bound.get("end"))
    node.args = (bound["input"], dim, start, end, bound.get("step", 1))
    node.kwargs = {}


def _symbolic_bounds(node: torch.fx.Node, source: torch.fx.Node, dim: int, start, end):
    """``start`` and ``end`` of a slice along symbolic dimension ``dim`` of ``source``,
    a negative int made ``size + bound`` (nodes before ``node``) and one past any size
    made the size itself; others (non-negative ints, symbolic bounds) as they are."""
    import operator

    size_value = source.meta["val"].shape[dim]
    graph = node.graph
    size_node = None

    def size() -> torch.fx.Node:
        nonlocal size_node
        if size_node is None:
            with graph.inserting_before(node):
                size_node = graph.call_function(aten.sym_size.int, (source, dim))
            size_node.meta["val"] = size_value
        return size_node

    def counted_from_start(bound):
        if not isinstance(bound, int):
            return bound
        if bound >= 2**62:  # "to the end" (2**63 - 1 in a backward's slice_scatter)
            return size()
        if bound >= 0:
            return bound
        with graph.inserting_before(node):
            shifted = graph.call_function(operator.add, (size(), bound))
        shifted.meta["val"] = size_value + bound
        return shifted

    start = 0 if start is None else start
    end = size() if end is None else end
    return counted_from_start(start), counted_from_start(end)


def _slice_bounds(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    """``start`` and ``end`` clamped into ``[0, size]`` as ``aten.slice`` clamps them."""
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


@normalizes(torch.ops.prims.device_put.default)
def _device_put_as_copy(node: torch.fx.Node) -> None:
    # x.to(device) of a tensor the graph made (a constant moved to the model's device)
    # traces to prims.device_put, which torch-mlir imports as an opaque operator. Inside
    # one compiled graph every tensor is on the device already: it is a copy.
    source = node.args[0] if node.args else node.kwargs.get("a")
    if not isinstance(source, torch.fx.Node):
        return
    graph = node.graph
    with graph.inserting_before(node):
        copy = graph.call_function(aten.clone.default, (source,))
    copy.meta = dict(node.meta)
    node.replace_all_uses_with(copy)


@normalizes(aten.true_divide.Tensor)
def _true_divide_as_div(node: torch.fx.Node) -> None:
    # The same op as div.Tensor, which torch-mlir lowers. It reaches a graph after the
    # decompositions ran: Dynamo's arithmetic on a Python float it made an input
    # (``2.0 / math.pi`` under dynamic=True, math.pi a 0-d float64 tensor).
    node.target = aten.div.Tensor
