"""legalize-to-stablehlo: rewrite the non-StableHLO ops torch-mlir leaves behind.

Requires: a module as torch-mlir's ``torch-backend-to-stablehlo-backend-pipeline``
emits it. Guarantees: every tensor-typed ``arith.constant`` became a
``stablehlo.constant``; the scalar shape arithmetic emitted for dynamic
dimensions (``tensor.dim``, ``shape.shape_of``, ``shape.num_elements``,
``arith`` integer ops, ``tensor.from_elements``) is recomputed with StableHLO
ops on 0-d/1-d integer tensors where every input of it could be; the
originals are erased once nothing uses them. What cannot be rewritten stays
as it was (the IR stays valid).

Rewrites (``index`` scalars become ``tensor<i64>``):

- ``arith.constant dense<..> : tensor<..>`` -> ``stablehlo.constant`` (an index
  tensor's as ``tensor<..xi64>``, which its StableHLO users read instead)
- ``arith.constant c : index|iN|fN`` -> ``stablehlo.constant dense<c> : tensor<..>``
- ``tensor.dim x, c`` -> constant (static dim) or ``convert(get_dimension_size(x, c))``
- ``arith.index_cast|extsi|trunci v`` -> ``convert(v)``
- ``arith.addi|subi|muli|divsi|maxsi|minsi a, b`` -> ``add|subtract|multiply|divide|maximum|minimum``
- ``arith.floordivsi a, b`` -> ``divide`` less one where the remainder's sign differs from ``b``'s
- ``arith.divui a, b`` -> ``divide`` where both are counts (constants >= 0, dimension
  sizes, element counts, and sums, products and quotients of those): unsigned and signed
  division agree on them (a view's ``-1`` dimension, ``numel // 50``)
- ``arith.cmpi eq|ne|slt|sle|sgt|sge a, b`` -> ``compare EQ|NE|LT|LE|GT|GE, a, b, SIGNED``
- ``arith.select c, a, b`` -> ``select c, a, b``
- ``tensor.from_elements a, b, ..`` -> ``concatenate(reshape(a), reshape(b), ..)``
- ``shape.shape_of x`` -> ``concatenate`` of each dimension size
- ``shape.num_elements s`` -> ``reshape(slice(s, 0)) * reshape(slice(s, 1)) * ..``
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.ir_utils import (
    create_constant,
    create_op,
    defining_op,
    is_unused,
    ops_in_program_order,
    replace_op,
)
from torchneuron.passes.registry import Pass, register_pass

_SCALAR_ARITH_TO_STABLEHLO = {
    "arith.addi": "stablehlo.add",
    "arith.subi": "stablehlo.subtract",
    "arith.muli": "stablehlo.multiply",
    "arith.divsi": "stablehlo.divide",
    "arith.maxsi": "stablehlo.maximum",
    "arith.minsi": "stablehlo.minimum",
}
_INTEGER_CASTS = frozenset(["arith.index_cast", "arith.extsi", "arith.trunci"])
# arith.cmpi's predicate (its integer value) -> StableHLO's comparison direction;
# the unsigned predicates are left alone (shape arithmetic is signed).
_CMPI_DIRECTION = {0: "EQ", 1: "NE", 2: "LT", 3: "LE", 4: "GT", 5: "GE"}


# Scalar ops whose result is a count (>= 0) when their operands are.
_COUNTS_FROM_COUNTS = frozenset(
    ["arith.index_cast", "arith.extsi", "arith.addi", "arith.muli", "arith.divui", "arith.maxsi"]
)


def _is_count(value: ir.Value, depth: int = 0) -> bool:
    """Whether shape arithmetic's ``value`` is never negative: a constant >= 0, a
    dimension size, an element count, or a sum, product or quotient of such."""
    op = defining_op(value)
    if op is None or depth > 16:
        return False
    if op.name == "arith.constant":
        attribute = op.attributes["value"]
        return isinstance(attribute, ir.IntegerAttr) and attribute.value >= 0
    if op.name in ("tensor.dim", "shape.num_elements"):
        return True
    if op.name in _COUNTS_FROM_COUNTS:
        return all(_is_count(operand, depth + 1) for operand in op.operands)
    return False


def _tensor_element_type(scalar_type: ir.Type) -> ir.Type:
    # Shapes are computed in i64 once they live in tensors.
    return ir.IntegerType.get_signless(64) if isinstance(scalar_type, ir.IndexType) else scalar_type


class _ShapeArithmetic:
    """Rebuilds scalar shape computations as StableHLO ops on tensors, op by op."""

    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx
        # scalar (or index-tensor) value -> its StableHLO tensor equivalent
        self.tensor_of: dict[ir.Value, ir.Value] = {}
        # originals with a tensor equivalent, and the pattern that made it
        self.rewritten: list[tuple[ir.Operation, str]] = []
        self.created: list[ir.Operation] = []

    def emit(
        self,
        name: str,
        operands: list[ir.Value],
        result_type: ir.Type,
        attributes: dict[str, ir.Attribute] | None = None,
        *,
        before: ir.Operation,
    ) -> ir.Value:
        op = create_op(name, operands, [result_type], attributes, before=before)
        self.created.append(op)
        return op.result

    def i64_constant(self, value: int, shape: list[int], before: ir.Operation) -> ir.Value:
        i64 = ir.IntegerType.get_signless(64)
        attr = ir.DenseElementsAttr.get(
            np.array([value], dtype=np.int64), type=ir.RankedTensorType.get(shape, i64)
        )
        return self.emit("stablehlo.constant", [], attr.type, {"value": attr}, before=before)

    def dimension_size(self, tensor: ir.Value, dim: int, before: ir.Operation) -> ir.Value:
        """tensor<i64> holding dimension ``dim`` of ``tensor``."""
        tensor_type = ir.RankedTensorType(tensor.type)
        if not tensor_type.is_dynamic_dim(dim):
            return self.i64_constant(tensor_type.get_dim_size(dim), [], before)
        i64 = ir.IntegerType.get_signless(64)
        size = self.emit(
            "stablehlo.get_dimension_size",
            [tensor],
            ir.RankedTensorType.get([], ir.IntegerType.get_signless(32)),
            {"dimension": ir.IntegerAttr.get(i64, dim)},
            before=before,
        )
        return self.emit(
            "stablehlo.convert", [size], ir.RankedTensorType.get([], i64), before=before
        )

    def concatenate_scalars(self, scalars: list[ir.Value], before: ir.Operation) -> ir.Value:
        """1-d tensor of the 0-d tensors ``scalars`` (all of one element type)."""
        element_type = ir.RankedTensorType(scalars[0].type).element_type
        pieces = [
            self.emit(
                "stablehlo.reshape", [s], ir.RankedTensorType.get([1], element_type), before=before
            )
            for s in scalars
        ]
        if len(pieces) == 1:
            return pieces[0]
        return self.emit(
            "stablehlo.concatenate",
            pieces,
            ir.RankedTensorType.get([len(pieces)], element_type),
            {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)},
            before=before,
        )

    def record(self, op: ir.Operation, tensor: ir.Value, pattern: str) -> None:
        self.tensor_of[op.results[0]] = tensor
        self.rewritten.append((op, pattern))

    def rewrite(self, op: ir.Operation) -> None:
        name = op.name
        if name == "arith.constant":
            self.rewrite_scalar_constant(op)
        elif name == "tensor.dim":
            self.rewrite_dim(op)
        elif name in _INTEGER_CASTS:
            self.rewrite_cast(op)
        elif name in _SCALAR_ARITH_TO_STABLEHLO:
            self.rewrite_arith(op)
        elif name == "arith.floordivsi":
            self.rewrite_floordiv(op)
        elif name == "arith.divui":
            self.rewrite_count_division(op)
        elif name == "arith.cmpi":
            self.rewrite_cmpi(op)
        elif name == "arith.select":
            self.rewrite_select(op)
        elif name == "tensor.from_elements":
            self.rewrite_from_elements(op)
        elif name == "shape.shape_of":
            self.rewrite_shape_of(op)
        elif name == "shape.num_elements":
            self.rewrite_num_elements(op)

    # arith.constant c : index|iN|fN -> stablehlo.constant dense<c>
    def rewrite_scalar_constant(self, op: ir.Operation) -> None:
        attr = op.attributes["value"]
        scalar_type = op.results[0].type
        element_type = _tensor_element_type(scalar_type)
        tensor_type = ir.RankedTensorType.get([], element_type)
        if isinstance(attr, ir.IntegerAttr):
            value = ir.IntegerAttr.get(element_type, attr.value)
        elif isinstance(attr, ir.FloatAttr):
            value = ir.FloatAttr.get(element_type, attr.value)
        else:
            return
        splat = ir.DenseElementsAttr.get_splat(tensor_type, value)
        constant = self.emit("stablehlo.constant", [], tensor_type, {"value": splat}, before=op)
        self.record(op, constant, "scalar-constant")

    # arith.constant dense<..> : tensor<Nxindex> -> stablehlo.constant dense<..> : tensor<Nxi64>
    # (StableHLO has no index tensors; its users read the i64 tensor instead)
    def rewrite_index_constant(self, op: ir.Operation) -> None:
        tensor_type = ir.RankedTensorType(op.results[0].type)
        values = ir.DenseIntElementsAttr(op.attributes["value"])
        i64 = ir.IntegerType.get_signless(64)
        attr = ir.DenseElementsAttr.get(
            np.array([int(values[i]) for i in range(len(values))], dtype=np.int64),
            type=ir.RankedTensorType.get(list(tensor_type.shape), i64),
        )
        constant = self.emit("stablehlo.constant", [], attr.type, {"value": attr}, before=op)
        self.record(op, constant, "index-constant")

    # tensor.dim x, c -> constant | convert(get_dimension_size(x, c))
    def rewrite_dim(self, op: ir.Operation) -> None:
        source, index = op.operands
        index_op = defining_op(index)
        if index_op is None or index_op.name != "arith.constant":
            return
        if not isinstance(source.type, ir.RankedTensorType):
            return
        dim = ir.IntegerAttr(index_op.attributes["value"]).value
        self.record(op, self.dimension_size(source, dim, before=op), "tensor-dim")

    # index_cast|extsi|trunci v -> convert(v)
    def rewrite_cast(self, op: ir.Operation) -> None:
        operand = self.tensor_of.get(op.operands[0])
        if operand is None:
            return
        target = ir.RankedTensorType.get([], _tensor_element_type(op.results[0].type))
        if operand.type == target:
            # index <-> i64: both are already the same i64 tensor
            self.record(op, operand, "index-cast")
            return
        converted = self.emit("stablehlo.convert", [operand], target, before=op)
        self.record(op, converted, "index-cast")

    # arith.<int op> a, b -> stablehlo.<op> a, b
    def rewrite_arith(self, op: ir.Operation) -> None:
        operands = [self.tensor_of.get(v) for v in op.operands]
        if any(v is None for v in operands):
            return
        result = self.emit(
            _SCALAR_ARITH_TO_STABLEHLO[op.name], operands, operands[0].type, before=op
        )
        self.record(op, result, "scalar-arith")

    # arith.divui a, b -> divide(a, b), where both are counts (never negative)
    def rewrite_count_division(self, op: ir.Operation) -> None:
        operands = [self.tensor_of.get(v) for v in op.operands]
        if any(v is None for v in operands) or not all(_is_count(v) for v in op.operands):
            return
        result = self.emit("stablehlo.divide", operands, operands[0].type, before=op)
        self.record(op, result, "count-division")

    # arith.floordivsi a, b -> q = divide(a, b) (truncating), less one where the remainder
    # is nonzero and its sign differs from b's: Python's // on sizes (s0 // 2, a view's
    # -1 dimension), exact for every sign
    def rewrite_floordiv(self, op: ir.Operation) -> None:
        a, b = (self.tensor_of.get(v) for v in op.operands)
        if a is None or b is None:
            return
        scalar = a.type
        boolean = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))
        element = ir.RankedTensorType(scalar).element_type

        def constant(value: int) -> ir.Value:
            splat = ir.DenseElementsAttr.get_splat(scalar, ir.IntegerAttr.get(element, value))
            return self.emit("stablehlo.constant", [], scalar, {"value": splat}, before=op)

        def compare(x: ir.Value, y: ir.Value, direction: str) -> ir.Value:
            attributes = {
                "comparison_direction": ir.Attribute.parse(
                    f"#stablehlo<comparison_direction {direction}>"
                ),
                "compare_type": ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"),
            }
            return self.emit("stablehlo.compare", [x, y], boolean, attributes, before=op)

        zero, one = constant(0), constant(1)
        quotient = self.emit("stablehlo.divide", [a, b], scalar, before=op)
        product = self.emit("stablehlo.multiply", [quotient, b], scalar, before=op)
        remainder = self.emit("stablehlo.subtract", [a, product], scalar, before=op)
        signs_differ = self.emit(
            "stablehlo.xor",
            [compare(remainder, zero, "LT"), compare(b, zero, "LT")],
            boolean,
            before=op,
        )
        inexact = compare(remainder, zero, "NE")
        adjust = self.emit("stablehlo.and", [inexact, signs_differ], boolean, before=op)
        lowered = self.emit("stablehlo.subtract", [quotient, one], scalar, before=op)
        result = self.emit("stablehlo.select", [adjust, lowered, quotient], scalar, before=op)
        self.record(op, result, "scalar-floordiv")

    # arith.cmpi pred, a, b -> stablehlo.compare DIR, a, b, SIGNED  (a clamp of a size)
    def rewrite_cmpi(self, op: ir.Operation) -> None:
        operands = [self.tensor_of.get(v) for v in op.operands]
        direction = _CMPI_DIRECTION.get(ir.IntegerAttr(op.attributes["predicate"]).value)
        if any(v is None for v in operands) or direction is None:
            return
        result = self.emit(
            "stablehlo.compare",
            operands,
            ir.RankedTensorType.get([], ir.IntegerType.get_signless(1)),
            {
                "comparison_direction": ir.Attribute.parse(
                    f"#stablehlo<comparison_direction {direction}>"
                ),
                "compare_type": ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"),
            },
            before=op,
        )
        self.record(op, result, "scalar-compare")

    # arith.select c, a, b -> stablehlo.select c, a, b
    def rewrite_select(self, op: ir.Operation) -> None:
        operands = [self.tensor_of.get(v) for v in op.operands]
        if any(v is None for v in operands):
            return
        result = self.emit("stablehlo.select", operands, operands[1].type, before=op)
        self.record(op, result, "scalar-select")

    # tensor.from_elements a, b, .. -> concatenate(reshape(a), reshape(b), ..)
    def rewrite_from_elements(self, op: ir.Operation) -> None:
        scalars = [self.tensor_of.get(v) for v in op.operands]
        result_type = ir.RankedTensorType(op.results[0].type)
        if not scalars or any(v is None for v in scalars) or result_type.rank > 1:
            return
        tensor = (
            scalars[0] if result_type.rank == 0 else self.concatenate_scalars(scalars, before=op)
        )
        if tensor.type == result_type:
            replace_op(op, [tensor])
            self.ctx.count("from-elements")
            return
        self.record(op, tensor, "from-elements")

    # shape.shape_of x -> concatenate(dimension sizes of x)
    def rewrite_shape_of(self, op: ir.Operation) -> None:
        source = op.operands[0]
        if not isinstance(source.type, ir.RankedTensorType) or source.type.rank == 0:
            return
        sizes = [self.dimension_size(source, d, before=op) for d in range(source.type.rank)]
        self.record(op, self.concatenate_scalars(sizes, before=op), "shape-of")

    # shape.num_elements s -> s[0] * s[1] * ..
    def rewrite_num_elements(self, op: ir.Operation) -> None:
        shape = self.tensor_of.get(op.operands[0])
        if shape is None or not isinstance(op.results[0].type, ir.IndexType):
            return
        length = ir.RankedTensorType(shape.type).get_dim_size(0)
        i64 = ir.IntegerType.get_signless(64)
        product = self.i64_constant(1, [], before=op) if length == 0 else None
        for i in range(length):
            element = self.emit(
                "stablehlo.slice",
                [shape],
                ir.RankedTensorType.get([1], i64),
                {
                    "start_indices": ir.DenseI64ArrayAttr.get([i]),
                    "limit_indices": ir.DenseI64ArrayAttr.get([i + 1]),
                    "strides": ir.DenseI64ArrayAttr.get([1]),
                },
                before=op,
            )
            scalar = self.emit(
                "stablehlo.reshape", [element], ir.RankedTensorType.get([], i64), before=op
            )
            if product is None:
                product = scalar
            else:
                product = self.emit(
                    "stablehlo.multiply", [product, scalar], product.type, before=op
                )
        self.record(op, product, "num-elements")

    def redirect_tensor_uses(self) -> None:
        """Let StableHLO users of rewritten index tensors read the i64 tensors instead."""
        for original, tensor in self.tensor_of.items():
            if not isinstance(original.type, ir.RankedTensorType):
                continue
            for use in list(original.uses):
                owner = use.owner.operation
                if owner.name.startswith("stablehlo."):
                    owner.replace_uses_of_with(original, tensor)

    def erase_dead_ops(self) -> None:
        """Erase originals nothing uses any more, then equivalents nothing came to use."""
        # A rewrite counts once its original is gone, i.e. fully replaced.
        for op, pattern in reversed(self.rewritten):
            if is_unused(op):
                op.erase()
                self.ctx.count(pattern)
        for op in reversed(self.created):
            if is_unused(op):
                op.erase()


@register_pass
@dataclass(frozen=True)
class LegalizeToStablehlo(Pass):
    """arith.constant and dynamic-shape scalar arithmetic -> StableHLO ops."""

    name = "legalize-to-stablehlo"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        shape_arithmetic = _ShapeArithmetic(ctx)
        for op in ops_in_program_order(module.operation):
            if op.name == "arith.constant" and isinstance(op.results[0].type, ir.RankedTensorType):
                if isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.IndexType):
                    shape_arithmetic.rewrite_index_constant(op)
                    continue
                # arith.constant dense<..> : tensor<..> -> stablehlo.constant dense<..>
                replacement = create_constant(op.attributes["value"], before=op)
                replace_op(op, [replacement])
                ctx.count("arith-constant")
                continue
            shape_arithmetic.rewrite(op)
        shape_arithmetic.redirect_tensor_uses()
        shape_arithmetic.erase_dead_ops()
