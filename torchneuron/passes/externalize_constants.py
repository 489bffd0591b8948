"""externalize-constants: move large constants out of the program into NEFF weights.

Requires: a ``func.func @<function>`` (``@main`` by default). Guarantees:
every non-splat ``stablehlo.constant`` / ``arith.constant`` in the function's
entry block whose payload exceeds ``threshold-bytes``, and every
``dense_resource`` constant (a portable artifact cannot hold those), is gone:

- a large one became a new trailing argument of the function carrying
  ``{neuron.weight = "<name>"}``, and its data is ``ctx.weights[<name>]``
  (a numpy array of the exact element type; bf16/fp8 via ml_dtypes);
- a small ``dense_resource`` one became an inline ``dense<...>`` constant.

Names are ``<prefix><n>`` with ``n`` counting in program order, skipping names
already in ``ctx.weights`` or already on an argument, so reruns and
pre-existing weights never collide. Splats are never externalized (they are
one element in the IR). Constants inside nested regions stay where they are.

Rewrites:

- ``%c = constant dense<..>`` (large) -> new argument ``%argN {neuron.weight = "const_k"}``
- ``%c = constant dense_resource<..>`` (small) -> ``%c = constant dense<..>``
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.errors import PassError
from torchneuron.passes.ir_constants import (
    elements_attr_to_numpy,
    is_dense_elements,
    is_dense_resource,
    is_splat,
    numpy_to_elements_attr,
    payload_bytes,
    read_resource_blobs,
    resource_to_numpy,
)
from torchneuron.passes.ir_utils import (
    CONSTANT_OP_NAMES,
    create_constant,
    find_function,
    replace_op,
)
from torchneuron.passes.registry import Pass, register_pass

WEIGHT_ATTRIBUTE = "neuron.weight"


def argument_attributes(function: ir.Operation) -> list[ir.DictAttr]:
    """The per-argument attribute dictionaries of a func.func (empty ones if it has none)."""
    count = len(ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).inputs)
    if "arg_attrs" not in function.attributes:
        return [ir.DictAttr.get({}, context=function.context) for _ in range(count)]
    return [ir.DictAttr(a) for a in ir.ArrayAttr(function.attributes["arg_attrs"])]


def weight_names(function: ir.Operation) -> list[str | None]:
    """For each argument of ``function``, its ``neuron.weight`` name or None for a program input."""
    names: list[str | None] = []
    for attrs in argument_attributes(function):
        names.append(
            ir.StringAttr(attrs[WEIGHT_ATTRIBUTE]).value if WEIGHT_ATTRIBUTE in attrs else None
        )
    return names


def _append_argument(function: ir.Operation, tensor_type: ir.Type, weight_name: str) -> ir.Value:
    """Add a trailing argument of ``tensor_type`` tagged as weight ``weight_name``."""
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    attrs = argument_attributes(function)
    entry = function.regions[0].blocks[0]
    argument = entry.add_argument(tensor_type, function.location)
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(function_type.inputs) + [tensor_type], list(function_type.results))
    )
    attrs.append(ir.DictAttr.get({WEIGHT_ATTRIBUTE: ir.StringAttr.get(weight_name)}))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    return argument


@register_pass
@dataclass(frozen=True)
class ExternalizeConstants(Pass):
    """Large constants -> trailing neuron.weight arguments of @main, data in ctx.weights."""

    name = "externalize-constants"
    threshold_bytes: int = 1024
    function: str = "main"
    name_prefix: str = "const_"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        try:
            function = find_function(module, self.function)
        except KeyError as error:
            raise PassError(f"externalize-constants: {error.args[0]}") from None
        taken = set(ctx.weights) | {n for n in weight_names(function) if n is not None}
        blobs: dict[str, bytes] | None = None
        next_index = 0
        for op in list(function.regions[0].blocks[0].operations):
            op = op.operation
            if op.name not in CONSTANT_OP_NAMES or not isinstance(
                op.results[0].type, ir.RankedTensorType
            ):
                continue
            try:
                attr = op.attributes["value"]
            except TypeError:
                continue  # complex payloads: the bindings cannot read them
            if is_dense_resource(attr):
                if blobs is None:
                    blobs = read_resource_blobs(module)
                data = resource_to_numpy(attr, blobs)
            elif is_dense_elements(attr) and not is_splat(attr):
                if payload_bytes(attr.type) <= self.threshold_bytes:
                    continue
                data = elements_attr_to_numpy(attr)
            else:
                continue
            if payload_bytes(op.results[0].type) <= self.threshold_bytes:
                # dense_resource -> dense: small, and serializable inline.
                element_type = ir.RankedTensorType(op.results[0].type).element_type
                inline = numpy_to_elements_attr(data, element_type)
                replace_op(op, [create_constant(inline, before=op)])
                ctx.count("inline-resource")
                continue
            while f"{self.name_prefix}{next_index}" in taken:
                next_index += 1
            weight_name = f"{self.name_prefix}{next_index}"
            taken.add(weight_name)
            argument = _append_argument(function, op.results[0].type, weight_name)
            ctx.weights[weight_name] = np.ascontiguousarray(data)
            replace_op(op, [argument])
            ctx.count("externalized")
