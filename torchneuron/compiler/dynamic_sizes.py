"""The size inputs of a graph with symbolic sizes, made what a dynamic program takes.

AOTAutograd hands a graph its sizes as inputs of their own (a backward's ``s0*s1``).
A dynamic program takes tensors only: ``sizes_from_tensors`` makes each size input a
computation on the dimensions that carry its symbols (``aten.sym_size`` and integer
arithmetic), a size with no symbol a constant, and, with ``carry_sizes``, a symbol no
tensor carries (a batch size a backward sees only in products) a ``[size, 0]`` tensor
input of its own (``carrier``: no elements, no bytes). An int input no tensor can carry
(its range admits negative values: a Python int Dynamo made symbolic, such as a slice's
start) is pinned: ``pinned_symbols`` finds them, and ``sizes_from_tensors`` takes their
values and makes them constants of the program.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx

from torchneuron.lowering.errors import DynamicShapeError

from .dynamic_signature import expression_text

__all__ = [
    "carrier",
    "carrier_positions",
    "pinned_expr",
    "pinned_symbols",
    "sizes_from_tensors",
]


def pinned_expr(size, pinned: dict | None):
    """The sympy expression of ``size`` (a SymInt, SymBool, ...) with the ``pinned``
    symbols (symbol -> int) given their values."""
    expr = size.node.expr
    return expr.subs(pinned) if pinned else expr


def _size_node(graph: torch.fx.Graph, expr, carriers: dict) -> torch.fx.Node:
    """Nodes computing size expression ``expr`` (sums, products and floor divisions of
    symbols and integers) from the dimensions that carry its symbols; DynamicShapeError
    for another form. A backward graph takes such sizes (``s0*s1``) as inputs."""
    import operator

    import sympy

    def value(node):
        return node.meta["val"] if isinstance(node, torch.fx.Node) else node

    def call(function, *arguments) -> torch.fx.Node:
        node = graph.call_function(function, arguments)
        node.meta["val"] = (
            arguments[0].meta["val"].shape[arguments[1]]
            if function is torch.ops.aten.sym_size.int
            else function(*(value(a) for a in arguments))
        )
        return node

    if isinstance(expr, sympy.Symbol):
        return call(torch.ops.aten.sym_size.int, *carriers[expr])
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        combine = operator.add if isinstance(expr, sympy.Add) else operator.mul
        parts = [_size_node(graph, arg, carriers) for arg in expr.args]
        result = parts[0]
        for part in parts[1:]:
            result = call(combine, result, part)
        return result
    if type(expr).__name__ == "FloorDiv":
        left, right = (_size_node(graph, arg, carriers) for arg in expr.args)
        return call(operator.floordiv, left, right)
    raise DynamicShapeError(f"size expression {expr} has no form a dynamic program can compute")


def _replace_with_constant(node: torch.fx.Node, constant: int) -> None:
    """Every use of ``node`` made a use of the integer ``constant``."""

    def swapped(argument):
        return constant if argument is node else argument

    for user in list(node.users):
        user.args = torch.fx.node.map_arg(user.args, swapped)
        user.kwargs = torch.fx.node.map_arg(user.kwargs, swapped)


def carrier_positions(gm: torch.fx.GraphModule, size_positions) -> list[int]:
    """The positions of ``gm``'s size placeholders that its program takes as shape
    carriers (``compile_dynamic_graph(carry_sizes=True)``): the sizes it does not drop."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    dropped = set(size_positions)
    return [
        i
        for i, node in enumerate(placeholders)
        if isinstance(node.meta.get("val"), torch.SymInt) and i not in dropped
    ]


def carrier(size: int, like: Sequence) -> torch.Tensor:
    """The [size, 0] tensor a program takes for a carried size (no element, no bytes),
    on the device of the first tensor of ``like``."""
    device = next((a.device for a in like if isinstance(a, torch.Tensor)), "cpu")
    return torch.empty((size, 0), dtype=torch.float32, device=device)


def _carry(graph: torch.fx.Graph, node: torch.fx.Node, carriers: dict, first_body) -> None:
    """Make size placeholder ``node`` (a bare symbol) a [size, 0] tensor placeholder whose
    first dimension its uses read (a node before ``first_body``, after every placeholder)."""
    from torch._guards import detect_fake_mode

    size = node.meta["val"]
    values = [n.meta.get("val") for n in graph.nodes if n.op == "placeholder"]
    tensors_in = [v for v in values if isinstance(v, torch.Tensor)]
    fake_mode = detect_fake_mode(tensors_in)
    if fake_mode is None:
        raise DynamicShapeError(f"size input {node.name} has no tensor input to trace beside")
    with fake_mode:  # on the device ``carrier`` puts it: the first tensor input's
        node.meta["val"] = torch.empty((size, 0), dtype=torch.float32, device=tensors_in[0].device)
    users = list(node.users)
    with graph.inserting_before(first_body):
        dimension = graph.call_function(torch.ops.aten.sym_size.int, (node, 0))
    dimension.meta["val"] = size
    for user in users:
        user.replace_input_with(node, dimension)
    carriers[size.node.expr] = (node, 0)


def _never_negative(size: torch.SymInt) -> bool:
    """Whether the tracer's range for ``size``'s symbol excludes negative values."""
    bounds = size.node.shape_env.var_to_range.get(size.node.expr)
    return bounds is not None and bounds.lower >= 0


def _fold_integer_arithmetic(graph: torch.fx.Graph) -> None:
    """Each Python integer op (``operator.neg``, ``add``, ...) whose arguments are all
    integers replaced by its value: a pinned int's uses (``-k`` as a slice's start) are
    constants the lowering can take."""
    import operator

    folding = {operator.neg, operator.add, operator.sub, operator.mul, operator.floordiv}
    for node in list(graph.nodes):
        if (
            node.op == "call_function"
            and node.target in folding
            and not node.kwargs
            and all(isinstance(a, int) and not isinstance(a, bool) for a in node.args)
        ):
            _replace_with_constant(node, int(node.target(*node.args)))
            graph.erase_node(node)


def _carriers(placeholders) -> dict[Any, tuple[torch.fx.Node, int]]:
    """Symbol -> (placeholder, axis) of the first tensor dimension that is that symbol."""
    import sympy

    found: dict[Any, tuple[torch.fx.Node, int]] = {}
    for node in placeholders:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            for axis, dim in enumerate(value.shape):
                if isinstance(dim, torch.SymInt) and isinstance(dim.node.expr, sympy.Symbol):
                    found.setdefault(dim.node.expr, (node, axis))
    return found


def pinned_symbols(gm: torch.fx.GraphModule) -> dict[int, Any]:
    """Position -> symbol of each size placeholder that is a bare symbol no tensor
    dimension carries and whose range admits negative values, so no ``[size, 0]`` tensor
    can carry it either: an int argument Dynamo made symbolic (a slice's start, a shift).
    A program takes these as constants (``sizes_from_tensors(pinned=...)``)."""
    import sympy

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    carried = _carriers(placeholders)
    found = {}
    for position, node in enumerate(placeholders):
        value = node.meta.get("val")
        if (
            isinstance(value, torch.SymInt)
            and isinstance(value.node.expr, sympy.Symbol)
            and value.node.expr not in carried
            and not _never_negative(value)
        ):
            found[position] = value.node.expr
    return found


def sizes_from_tensors(
    gm: torch.fx.GraphModule, carry_sizes: bool = False, pinned: dict | None = None
) -> tuple[torch.fx.GraphModule, list[int], dict[int, str]]:
    """A copy of ``gm`` whose size placeholders read a tensor's size, whose size outputs
    are gone; the size placeholders' positions and the size outputs' expressions. With
    ``carry_sizes``, a size placeholder that is a symbol no tensor carries is made a
    carrier (``_carry``) and kept. ``pinned`` (symbol -> int) gives symbols their value:
    every size expression is taken with them substituted."""
    import sympy

    pinned = pinned or {}

    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(output[0] if isinstance(output, tuple) else output)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    carriers = _carriers(placeholders)
    first_body = next((n for n in graph.nodes if n.op != "placeholder"), None)
    if carry_sizes:
        for node in placeholders:
            value = node.meta.get("val")
            if (
                isinstance(value, torch.SymInt)
                and isinstance(value.node.expr, sympy.Symbol)
                and value.node.expr not in carriers
                and value.node.expr not in pinned
                and _never_negative(value)  # an int argument may be (a slice's start)
            ):
                _carry(graph, node, carriers, first_body)
    size_positions = []
    for position, node in enumerate(placeholders):
        value = node.meta.get("val")
        if isinstance(value, torch.SymInt):
            expr = pinned_expr(value, pinned)
            missing = [s for s in expr.free_symbols if s not in carriers]
            if missing:
                raise DynamicShapeError(
                    f"size input {node.name} = {expr} is no tensor input's dimension "
                    "(nor arithmetic of them)"
                )
            if expr.free_symbols:
                with graph.inserting_before(first_body):
                    size = _size_node(graph, expr, carriers)
                size.meta["val"] = value
                node.replace_all_uses_with(size)
            else:  # a size the tracer knows (Dynamo passes some as inputs): a constant
                _replace_with_constant(node, int(expr))
            graph.erase_node(node)
            size_positions.append(position)
        elif isinstance(value, (int, float, bool)) or (
            value is not None and not isinstance(value, torch.Tensor)
        ):
            raise DynamicShapeError(
                f"graph input {node.name!r} is {type(value).__name__}, not a tensor or a size"
            )
    output_node = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output_node.args[0]
    single = not isinstance(results, (tuple, list))
    results = (results,) if single else tuple(results)
    size_outputs: dict[int, str] = {}
    kept = []
    for i, r in enumerate(results):
        value = r.meta.get("val") if isinstance(r, torch.fx.Node) else r
        if isinstance(value, torch.SymInt):
            expr = pinned_expr(value, pinned)
            size_outputs[i] = expression_text(expr)
        else:
            kept.append(r)
    if size_outputs:
        output_node.args = (tuple(kept),)
    if pinned:
        _fold_integer_arithmetic(graph)
    graph.eliminate_dead_code()
    return torch.fx.GraphModule(gm, graph), size_positions, size_outputs
