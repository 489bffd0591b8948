"""Argument normalisations applied to FX nodes before import.

A table from ATen op to a rule that rewrites the node's arguments into the
form torch-mlir's lowerings handle correctly. Each rule says what it fixes.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx

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
    for node in graph.nodes:
        if node.op == "call_function":
            rule = NORMALIZATIONS.get(node.target)
            if rule is not None:
                rule(node)


@normalizes(aten.max_pool2d_with_indices.default, aten.max_pool2d.default,
            aten.avg_pool2d.default, aten.max_pool1d.default, aten.avg_pool1d.default,
            aten.max_pool3d_with_indices.default, aten.avg_pool3d.default)
def _explicit_pool_stride(node: torch.fx.Node) -> None:
    # stride=[] means "same as kernel_size"; torch-mlir's StableHLO lowering
    # reads it as stride 1 and builds an ill-typed reduce_window.
    args = list(node.args)
    if len(args) >= 2 and (len(args) < 3 or not args[2]):
        if "stride" in node.kwargs and node.kwargs["stride"]:
            return
        kernel = args[1]
        stride = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
        if len(args) >= 3:
            args[2] = stride
        else:
            args.append(stride)
        node.args = tuple(args)
        node.kwargs = {k: v for k, v in node.kwargs.items() if k != "stride"}
