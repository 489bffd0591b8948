"""torch.compile of ATen graphs with complex values: retraced over real pairs.

A graph with a complex input, value or output is run node by node over ``Pair``s
(``run_over_pairs``: each complex input as its ``view_as_real`` pair, each complex node
replaced by its rule in ``complex_pairs``) and traced with ``make_fx``: the result is an
all-real graph, compiled as any other. ``PairedGraph`` calls it with ``view_as_real`` of
the complex arguments and returns ``view_as_complex`` of the complex results. A node
with complex values and no rule raises ``UnsupportedOpError`` naming it.

``wrong_under_aot_autograd`` names the complex ops torch.compile must refuse outright:
AOTAutograd itself gets them wrong, whatever the backend.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from .complex_pairs import COMPONENT, Pair, apply, has_rule, is_complex_value
from .errors import UnsupportedOpError, describe_value

_RESHAPES = {
    torch.ops.aten.view.default: torch.ops.aten.reshape.default,
    torch.ops.aten._unsafe_view.default: torch.ops.aten.reshape.default,
}


def graph_has_complex(gm: torch.fx.GraphModule) -> bool:
    return any(_makes_complex(node) for node in gm.graph.nodes)


def _makes_complex(node: torch.fx.Node) -> bool:
    """Whether ``node``'s value, or one of its values (a tuple result), is complex."""
    value = node.meta.get("val")
    values = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in values)


# Complex ops whose results AOTAutograd's runtime gets wrong whatever the backend
# (torch.compile(backend="aot_eager") of torch.linalg.pinv on complex64 differs from
# eager by more than 1 on torch 2.13), so neither our lowering nor a CPU fallback inside
# the compiled graph could give the right answer: refused, never a silent wrong value.
_WRONG_UNDER_AOT_AUTOGRAD = ("linalg_pinv",)


def wrong_under_aot_autograd(gm: torch.fx.GraphModule) -> UnsupportedOpError | None:
    """The refusal of the first op of a complex graph that AOTAutograd gets wrong; None
    when there is none."""
    if not graph_has_complex(gm):
        return None
    for node in gm.graph.nodes:
        packet = getattr(node.target, "_opname", None)  # aten overloads only
        if node.op == "call_function" and packet in _WRONG_UNDER_AOT_AUTOGRAD:
            return UnsupportedOpError(
                str(node.target),
                [_type_text(a.meta.get("val")) for a in node.all_input_nodes],
                detail="refused for complex values under torch.compile: PyTorch's "
                "AOTAutograd returns wrong values for it with any backend; call it outside "
                "the compiled region (torch.compiler.disable) or in eager mode",
            )
    return None


def _type_text(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{list(value.shape)}".removeprefix("torch.")
    return type(value).__name__


def _unsupported(node: torch.fx.Node, detail: str) -> UnsupportedOpError:
    values = [a.meta.get("val") for a in node.all_input_nodes]
    return UnsupportedOpError(
        str(node.target), [describe_value(v) for v in values], None, detail=detail
    )


def run_over_pairs(gm: torch.fx.GraphModule, real_inputs: list, complex_inputs: list[bool]):
    """Run ``gm``'s nodes with each complex value as a Pair (for tracing); outputs as pairs.

    Returns the flat outputs, each complex output in its ``view_as_real`` layout.
    """
    env: dict[torch.fx.Node, Any] = {}
    inputs = iter(zip(real_inputs, complex_inputs))
    outputs: list = []

    def load(value):
        return torch.fx.node.map_arg(value, lambda n: env[n])

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value, was_complex = next(inputs)
            env[node] = Pair.of_stacked(value) if was_complex else value
        elif node.op == "call_function":
            args, kwargs = load(node.args), load(node.kwargs)
            if node.target is operator.getitem:
                env[node] = args[0][args[1]]
                continue
            # the rules' results keep no layout of the original graph: a view is a reshape
            target = _RESHAPES.get(node.target, node.target)
            touches = is_complex_value(list(args)) or is_complex_value(list(kwargs.values()))
            # a real op with a complex result (linalg_eig's tuple) is no plain call either:
            # run as it is, it would leave its complex values in the real retrace
            if not touches and not _makes_complex(node):
                env[node] = target(*args, **kwargs)
                continue
            if not has_rule(target):
                raise _unsupported(node, "no real-pair rule for this op on complex values")
            result = apply(target, args, kwargs)
            if result is NotImplemented:
                raise _unsupported(node, "the real-pair rule declines this call")
            env[node] = result
        elif node.op == "output":
            for value in (
                node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            ):
                value = load(value) if isinstance(value, torch.fx.Node) else value
                outputs.append(value)
        else:
            raise _unsupported(node, f"graph node kind {node.op} over complex values")
    return outputs


class PairedGraph:
    """A graph with complex values, compiled as its real-pair retrace (torch.compile).

    ``compile_real(gm, example_inputs)`` compiles the all-real graph and returns a
    boxed callable (the backend's route table, ``backend.compile_or_fallback``).
    """

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, compile_real: Callable):
        from torch.fx.experimental.proxy_tensor import make_fx

        from .decompositions import decomposition_table

        self.complex_inputs = [
            isinstance(x, torch.Tensor) and x.dtype.is_complex for x in example_inputs
        ]
        # real tensors of the examples' shapes (make_fx brings its own fake mode)
        real_examples = [
            _real_example(x, flag) for x, flag in zip(example_inputs, self.complex_inputs)
        ]
        self.complex_outputs: list[bool] = []

        def real_fn(*flat):
            outputs = run_over_pairs(gm, list(flat), self.complex_inputs)
            self.complex_outputs = [isinstance(o, Pair) for o in outputs]
            return [o.stacked() if isinstance(o, Pair) else o for o in outputs]

        # traced outside AOTAutograd's fake mode, whose shape environment would make the
        # sizes symbolic: the retrace is of one static shape, as the graph is
        from torch._guards import tracing
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily(), tracing(None):
            self.real_gm = make_fx(
                real_fn,
                decomposition_table=decomposition_table(),
                tracing_mode="fake",
                _allow_non_fake_inputs=True,
            )(*real_examples)
        # a complex value left in the retrace would send it down this route again, for ever
        left = next((n for n in self.real_gm.graph.nodes if _makes_complex(n)), None)
        if left is not None:
            raise _unsupported(left, "its complex values stay complex in the real-pair retrace")
        self.compiled = compile_real(self.real_gm, real_examples)

    def __call__(self, *args):
        real = [
            torch.view_as_real(a.resolve_conj()) if flag and a is not None else a
            for a, flag in zip(args, self.complex_inputs)
        ]
        outputs = self.compiled(real)
        return [
            torch.view_as_complex(o.contiguous()) if flag else o
            for o, flag in zip(outputs, self.complex_outputs)
        ]


def _real_example(x: Any, was_complex: bool) -> Any:
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    if not isinstance(x, torch.Tensor):
        return x
    with unset_fake_temporarily():
        if was_complex:
            return torch.zeros((*x.shape, 2), dtype=COMPONENT[x.dtype], device=x.device)
        return torch.zeros(x.shape, dtype=x.dtype, device=x.device)
