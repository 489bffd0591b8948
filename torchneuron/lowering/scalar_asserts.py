"""Assertions on data-dependent scalars (``x.item()``) as run-time checks.

``torch._check(n <= 16)`` and ``torch._check_is_size(n)`` of an ``n = t.item()`` reach the
graph as ``aten._assert_scalar(cond, message)`` over Python-level ops on the unbacked
value (``operator.le(_local_scalar_dense(t), 16)``), or as ``sym_constrain_range*(n, min,
max)``. torch-mlir imports those as ``torch.runtime.assert`` and scalar ``torch.constant``
ops, which it cannot lower to StableHLO. The scalar was read from a tensor, so the same
condition is a tensor expression over that tensor:

    _assert_scalar(u <= 16, msg)         ->  check(t <= 16, RuntimeError, msg)
    sym_constrain_range(u, min=a, max=b) ->  check((t >= a) & (t <= b), RuntimeError, ...)

with ``u = _local_scalar_dense(t)``; ``fx_to_torch.prepare_graph`` then makes each check
one more output, as it does the checks of our lowering rules. A condition over anything
else read from a tensor (``n % 2 == 0``) raises ``UnsupportedOpError`` naming the assertion
and its expression; assertions over symbolic sizes alone are left as they were.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

from .checks import CHECK_OP, RUNTIME_ERROR
from .errors import UnsupportedOpError, node_source

aten = torch.ops.aten

# ops that read a Python scalar out of a one-element tensor
_SCALAR_READS = {
    aten._local_scalar_dense.default,
    aten.item.default,
    aten.Int.Tensor,
    aten.Float.Tensor,
    aten.Bool.Tensor,
}
# a Python operator on scalars -> its ATen forms on 0-d tensors: (tensor op tensor,
# tensor op number, number op tensor as tensor op' number)
_TENSOR_FORMS = {
    operator.ge: (aten.ge.Tensor, aten.ge.Scalar, aten.le.Scalar),
    operator.gt: (aten.gt.Tensor, aten.gt.Scalar, aten.lt.Scalar),
    operator.le: (aten.le.Tensor, aten.le.Scalar, aten.ge.Scalar),
    operator.lt: (aten.lt.Tensor, aten.lt.Scalar, aten.gt.Scalar),
    operator.eq: (aten.eq.Tensor, aten.eq.Scalar, aten.eq.Scalar),
    operator.ne: (aten.ne.Tensor, aten.ne.Scalar, aten.ne.Scalar),
    operator.add: (aten.add.Tensor, aten.add.Tensor, aten.add.Tensor),
    operator.sub: (aten.sub.Tensor, aten.sub.Tensor, aten.rsub.Scalar),
    operator.mul: (aten.mul.Tensor, aten.mul.Tensor, aten.mul.Tensor),
    operator.and_: (aten.logical_and.default, None, None),
    operator.or_: (aten.logical_or.default, None, None),
}
_ASSERTS = {aten._assert_scalar.default}
_RANGES = {aten.sym_constrain_range.default, aten.sym_constrain_range_for_size.default}


def scalar_asserts_as_checks(graph: torch.fx.Graph) -> None:
    """Replace, in place, each assertion on a data-dependent scalar by a run-time check."""
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in _ASSERTS:
            condition, message = _arguments(node, ("cond", "assert_msg"))
            if not _reads_scalar(condition):
                continue  # over sizes only (a dynamic graph's guards): left as it was
            with graph.inserting_before(node):
                ok = _as_tensor(graph, condition)
            if ok is None:
                raise _unconverted(node, f"the assertion {message!r}")
        elif node.target in _RANGES:
            size, low, high = _arguments(node, ("size", "min", "max"))
            if not _reads_scalar(size):
                continue  # a constant or a size: left as it was
            with graph.inserting_before(node):
                value = _as_tensor(graph, size)
                ok = value
                if value is not None:
                    low = 0 if low is None and "for_size" in str(node.target) else low
                    bounds = [(aten.ge.Scalar, low), (aten.le.Scalar, high)]
                    parts = [_call(graph, op, value, b) for op, b in bounds if b is not None]
                    ok = parts[0] if len(parts) == 1 else None
                    if len(parts) == 2:
                        ok = _call(graph, aten.logical_and.default, *parts)
            if ok is None:
                raise _unconverted(node, f"the range [{low}, {high}]")
            message = f"value out of its declared range [{low}, {high}]"
        else:
            continue
        with graph.inserting_before(node):
            check = graph.call_function(CHECK_OP, (ok, RUNTIME_ERROR, str(message)))
        check.meta["val"] = ok.meta["val"]  # (its value is never read)
        graph.erase_node(node)


def _reads_scalar(value) -> bool:
    """Whether ``value`` is computed from a scalar read out of a tensor."""
    if not isinstance(value, torch.fx.Node) or isinstance(value.meta.get("val"), torch.Tensor):
        return False  # (the walk stays among scalars)
    if value.op == "call_function" and value.target in _SCALAR_READS:
        return True
    return any(_reads_scalar(a) for a in value.all_input_nodes)


def _arguments(node: torch.fx.Node, names: tuple[str, ...]) -> list:
    args = list(node.args)
    return args + [node.kwargs.get(name) for name in names[len(args) :]]


def _as_tensor(graph: torch.fx.Graph, value) -> torch.fx.Node | None:
    """A 0-d tensor node computing the scalar ``value``; None if it is not made of scalars
    read from tensors, numbers and the operators of ``_TENSOR_FORMS``."""
    if not isinstance(value, torch.fx.Node) or value.op != "call_function":
        return None
    if value.target in _SCALAR_READS:
        source = value.args[0]
        return _call(graph, aten.reshape.default, source, [])
    forms = _TENSOR_FORMS.get(value.target)
    if forms is None or len(value.args) != 2:
        return None
    left, right = value.args
    numbers = [isinstance(v, (bool, int, float)) for v in (left, right)]
    if all(numbers):
        return None
    if any(numbers):
        form = forms[1] if numbers[1] else forms[2]
        tensor = _as_tensor(graph, right if numbers[0] else left)
        number = left if numbers[0] else right
        return None if form is None or tensor is None else _call(graph, form, tensor, number)
    operands = [_as_tensor(graph, left), _as_tensor(graph, right)]
    if any(o is None for o in operands):
        return None
    return _call(graph, forms[0], *operands)


def _call(graph: torch.fx.Graph, op, *args) -> torch.fx.Node:
    """A new node ``op(*args)``, its ``val`` computed from its operands' (fake) values."""
    node = graph.call_function(op, args)
    node.meta["val"] = op(*[a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args])
    return node


def _unconverted(node: torch.fx.Node, what: str) -> UnsupportedOpError:
    return UnsupportedOpError(
        str(node.target),
        [],
        node_source(node),
        detail=f"{what} is over a value that is not a scalar read from a tensor (x.item()) "
        "combined by comparisons and arithmetic; it has no run-time check here",
    )
