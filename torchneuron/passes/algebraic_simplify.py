"""algebraic-simplify: remove arithmetic identities and collapse chains of layout ops.

Requires: StableHLO; constants already folded (identities are recognised on
splat ``stablehlo.constant`` operands, which fold-constants produces from
``broadcast_in_dim(convert(constant))`` chains). Guarantees: every rewritten
op's uses read an equal value of the same type; ops left unused are erased
when they have no side effects (a dce run is not needed afterwards).

Floating zeros are exact identities only with the right sign: ``x + (-0.0)`` and
``x - (+0.0)`` are ``x`` for every ``x``, but ``-0.0 + 0.0`` is ``+0.0``, so
``add(x, +0.0)`` (and ``subtract(x, -0.0)``) is kept: a result must keep PyTorch's
sign of zero.

Rewrites:

- ``multiply(x, 1) -> x``, ``multiply(1, x) -> x``
- ``add(x, 0) -> x``, ``add(0, x) -> x``, ``subtract(x, 0) -> x`` (integers; floats
  only for ``add(x, -0.0)`` and ``subtract(x, +0.0)``)
- ``divide(x, 1) -> x``
- ``and(x, true) -> x``, ``or(x, false) -> x`` (i1)
- ``transpose(x, identity) -> x``
- ``transpose(transpose(x, p), q) -> transpose(x, [p[q[i]]])``, or ``x`` if that is the identity
- ``reshape(x) -> x`` when the type does not change
- ``reshape(reshape(x)) -> reshape(x)``
- ``broadcast_in_dim(x, [0..r-1]) -> x`` when the type does not change
- ``broadcast_in_dim(broadcast_in_dim(x, a), b) -> broadcast_in_dim(x, [b[a[i]]])``
- ``convert(x) -> x`` when the type does not change
- ``convert(convert(x : A) : B) : A -> x`` when B holds every value of A exactly
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.dce import erase_if_dead
from torchneuron.passes.ir_constants import UnsupportedConstantError, is_splat, splat_scalar
from torchneuron.passes.ir_utils import (
    constant_attr,
    create_op,
    defining_op,
    i64_array,
    ops_in_program_order,
)
from torchneuron.passes.registry import Pass, register_pass


def _splat_equals(
    value: ir.Value, expected: float | bool, negative_zero: bool | None = None
) -> bool:
    """True when ``value`` is a splat constant whose every element equals ``expected``
    (a floating zero also of the sign ``negative_zero`` asks for, when given)."""
    attr = constant_attr(value)
    if attr is None or not is_splat(attr):
        return False
    try:
        scalar = splat_scalar(attr)
    except UnsupportedConstantError:
        return False
    if negative_zero is not None and np.issubdtype(scalar.dtype, np.floating):
        if bool(np.signbit(scalar.astype(np.float64))) != negative_zero:
            return False
    return (
        bool(scalar.astype(np.float64) == expected)
        if scalar.dtype != np.bool_
        else bool(scalar) == expected
    )


def _identity_operand(
    op: ir.Operation,
    identity: float | bool,
    *,
    commutative: bool,
    negative_zero: bool | None = None,
) -> ir.Value | None:
    """The operand ``x`` of ``op(x, identity)`` (or ``op(identity, x)``) with the result's type."""
    lhs, rhs = op.operands
    result_type = op.results[0].type
    if lhs.type == result_type and _splat_equals(rhs, identity, negative_zero):
        return lhs
    if commutative and rhs.type == result_type and _splat_equals(lhs, identity, negative_zero):
        return rhs
    return None


# (element type text) -> the types that hold all its values exactly
_WIDER_FLOATS = {
    "f16": {"f32", "f64"},
    "bf16": {"f32", "f64"},
    "f32": {"f64"},
    "f8E4M3FN": {"f16", "bf16", "f32", "f64"},
    "f8E5M2": {"f16", "bf16", "f32", "f64"},
}
_INTEGER_BITS_IN_FLOAT = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}


def _holds_exactly(source: ir.Type, middle: ir.Type) -> bool:
    """True when converting ``source`` -> ``middle`` -> ``source`` returns every value unchanged."""
    source_text, middle_text = str(source), str(middle)
    if middle_text in _WIDER_FLOATS.get(source_text, ()):
        return True
    if not isinstance(source, ir.IntegerType):
        return False
    if source.width == 1:
        return True  # i1 -> anything -> i1 is (x != 0) of 0/1
    if isinstance(middle, ir.IntegerType):
        wider = middle.width > source.width
        same_signedness = middle.is_unsigned == source.is_unsigned
        # Unsigned fits a wider signed type too.
        return wider and (same_signedness or (source.is_unsigned and not middle.is_unsigned))
    mantissa = _INTEGER_BITS_IN_FLOAT.get(middle_text)
    value_bits = source.width - (0 if source.is_unsigned else 1)
    return mantissa is not None and value_bits <= mantissa


@register_pass
@dataclass(frozen=True)
class AlgebraicSimplify(Pass):
    """x*1, x+0, identity/chained transpose, reshape, broadcast, convert -> simpler."""

    name = "algebraic-simplify"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        rules: dict[str, Callable[[ir.Operation, PassContext], ir.Value | None]] = {
            "stablehlo.multiply": self.multiply,
            "stablehlo.add": self.add,
            "stablehlo.subtract": self.subtract,
            "stablehlo.divide": self.divide,
            "stablehlo.and": self.logical_and,
            "stablehlo.or": self.logical_or,
            "stablehlo.transpose": self.transpose,
            "stablehlo.reshape": self.reshape,
            "stablehlo.broadcast_in_dim": self.broadcast_in_dim,
            "stablehlo.convert": self.convert,
        }
        for op in ops_in_program_order(module.operation):
            rule = rules.get(op.name)
            if rule is None:
                continue
            replacement = rule(op, ctx)
            if replacement is None:
                continue
            operands = [defining_op(v) for v in op.operands]
            op.results[0].replace_all_uses_with(replacement)
            op.erase()
            # A collapsed chain leaves its inner op unused.
            for producer in operands:
                if producer is not None:
                    erase_if_dead(producer)

    # multiply(x, 1) -> x
    def multiply(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        return self.fire(ctx, "mul-by-one", _identity_operand(op, 1, commutative=True))

    # add(x, 0) -> x
    def add(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        zero = _identity_operand(op, 0, commutative=True, negative_zero=True)
        return self.fire(ctx, "add-zero", zero)

    # subtract(x, 0) -> x
    def subtract(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        zero = _identity_operand(op, 0, commutative=False, negative_zero=False)
        return self.fire(ctx, "sub-zero", zero)

    # divide(x, 1) -> x
    def divide(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        return self.fire(ctx, "div-by-one", _identity_operand(op, 1, commutative=False))

    # and(x, true) -> x (i1 only: for integers "true" would be all ones)
    def logical_and(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        if str(ir.RankedTensorType(op.results[0].type).element_type) != "i1":
            return None
        return self.fire(ctx, "and-true", _identity_operand(op, True, commutative=True))

    # or(x, false) -> x
    def logical_or(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        if str(ir.RankedTensorType(op.results[0].type).element_type) != "i1":
            return None
        return self.fire(ctx, "or-false", _identity_operand(op, False, commutative=True))

    # transpose(x, identity) -> x ; transpose(transpose(x, p), q) -> transpose(x, p∘q)
    def transpose(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        permutation = i64_array(op, "permutation")
        operand = op.operands[0]
        if permutation == sorted(permutation) and operand.type == op.results[0].type:
            return self.fire(ctx, "identity-transpose", operand)
        inner = defining_op(operand)
        if inner is None or inner.name != "stablehlo.transpose":
            return None
        inner_permutation = i64_array(inner, "permutation")
        composed = [inner_permutation[q] for q in permutation]
        source = inner.operands[0]
        if composed == sorted(composed) and source.type == op.results[0].type:
            return self.fire(ctx, "transpose-of-transpose", source)
        merged = create_op(
            "stablehlo.transpose",
            [source],
            [op.results[0].type],
            {"permutation": ir.DenseI64ArrayAttr.get(composed)},
            before=op,
        )
        return self.fire(ctx, "transpose-of-transpose", merged.result)

    # reshape(x) -> x (same type) ; reshape(reshape(x)) -> reshape(x)
    def reshape(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        operand = op.operands[0]
        if operand.type == op.results[0].type:
            return self.fire(ctx, "identity-reshape", operand)
        inner = defining_op(operand)
        if inner is None or inner.name != "stablehlo.reshape":
            return None
        source = inner.operands[0]
        if source.type == op.results[0].type:
            return self.fire(ctx, "reshape-of-reshape", source)
        merged = create_op("stablehlo.reshape", [source], [op.results[0].type], before=op)
        return self.fire(ctx, "reshape-of-reshape", merged.result)

    # broadcast_in_dim(x, iota) -> x (same type) ; broadcast(broadcast(x, a), b) -> broadcast(x, b∘a)
    def broadcast_in_dim(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        operand = op.operands[0]
        dims = i64_array(op, "broadcast_dimensions")
        if operand.type == op.results[0].type and dims == list(range(len(dims))):
            return self.fire(ctx, "identity-broadcast", operand)
        inner = defining_op(operand)
        if inner is None or inner.name != "stablehlo.broadcast_in_dim":
            return None
        inner_dims = i64_array(inner, "broadcast_dimensions")
        merged = create_op(
            "stablehlo.broadcast_in_dim",
            [inner.operands[0]],
            [op.results[0].type],
            {"broadcast_dimensions": ir.DenseI64ArrayAttr.get([dims[d] for d in inner_dims])},
            before=op,
        )
        return self.fire(ctx, "broadcast-of-broadcast", merged.result)

    # convert(x) -> x (same type) ; convert(convert(x: A): B): A -> x if B holds A exactly
    def convert(self, op: ir.Operation, ctx: PassContext) -> ir.Value | None:
        operand = op.operands[0]
        if operand.type == op.results[0].type:
            return self.fire(ctx, "identity-convert", operand)
        inner = defining_op(operand)
        if inner is None or inner.name != "stablehlo.convert":
            return None
        source = inner.operands[0]
        if source.type != op.results[0].type:
            return None
        source_element = ir.RankedTensorType(source.type).element_type
        middle_element = ir.RankedTensorType(operand.type).element_type
        if not _holds_exactly(source_element, middle_element):
            return None
        return self.fire(ctx, "convert-round-trip", source)

    @staticmethod
    def fire(ctx: PassContext, pattern: str, replacement: ir.Value | None) -> ir.Value | None:
        if replacement is not None:
            ctx.count(pattern)
        return replacement
