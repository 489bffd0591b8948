"""fold-constants: evaluate StableHLO ops whose operands are all constants.

Requires: StableHLO (``arith.constant`` tensors are read too). Guarantees:
every folded op is replaced by a ``stablehlo.constant`` holding exactly the
value XLA would compute, and constants left without users are erased. An op
is folded only where numpy reproduces StableHLO's result bit for bit, so
these are left alone: transcendental functions (exp, log, tanh, ... differ in
the last ulp between libraries), float->int conversions of NaN or out-of-range values, conversions that would
round twice, arithmetic in fp8, and sub-byte integer types.

Integer division follows XLA's definitions (``x / 0 = -1``, ``x % 0 = x``,
``INT_MIN / -1 = INT_MIN``, ``INT_MIN % -1 = 0``): folding them also spares
XLA's compiler, which dies with SIGFPE folding a constant division by zero.

Splat operands stay splats: ``broadcast_in_dim(constant 1.0)`` becomes a
``dense<1.0>`` of the result shape without materialising it. A non-splat
result is only built if it has at most ``max-folded-elements`` elements or is
no larger than its largest operand.

Rewrites, each ``op(constant, ..) -> constant(op evaluated)``:

- elementwise: add, subtract, multiply, divide, remainder, maximum, minimum,
  and, or, xor, not, negate, abs, sign, floor, ceil, round_nearest_even,
  round_nearest_afz, compare, select, clamp, convert
- layout: reshape, transpose, broadcast_in_dim, slice, reverse, concatenate
- ``get_dimension_size(x, d)`` with a static dimension ``d`` -> constant
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from torch_mlir import ir
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.passes.context import PassContext
from torchneuron.passes.ir_constants import (
    UnsupportedConstantError,
    elements_attr_to_numpy,
    is_float_dtype,
    is_splat,
    numpy_dtype_of,
    numpy_to_elements_attr,
    splat_elements_attr,
    splat_scalar,
)
from torchneuron.passes.ir_utils import (
    constant_attr,
    create_constant,
    defining_op,
    i64_array,
    is_unused,
    ops_in_program_order,
    replace_op,
    static_tensor_type,
)
from torchneuron.passes.numpy_semantics import (
    comparison,
    float_to_int,
    integer_divide,
    integer_remainder,
    round_half_away,
)
from torchneuron.passes.registry import Pass, register_pass
from torchneuron.target import dtypes

# Float types of two bytes or more (f16, bf16, f32, f64): numpy rounds their + - * / exactly
# as XLA does (bf16/f16 via one f32 rounding). The 1-byte formats are left to XLA.
_ARITHMETIC_FLOATS = frozenset(
    row.numpy for row in dtypes.ROWS if row.is_floating and row.itemsize >= 2
)
# Float types narrower than f32: values reach them through f32, so only one rounding is allowed.
_NARROW_FLOATS = frozenset(row.numpy for row in dtypes.ROWS if row.is_floating and row.itemsize < 4)

# (op, operand arrays, result dtype) -> result array, or None when folding would not be exact.
Evaluator = Callable[[ir.Operation, list[np.ndarray], np.dtype], "np.ndarray | None"]


def _is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def _numeric_ok(dtype: np.dtype, *, ints: bool, floats: bool, bools: bool) -> bool:
    if dtype == np.bool_:
        return bools
    if _is_int(dtype):
        return ints
    return floats and dtype in _ARITHMETIC_FLOATS


def _elementwise(
    numpy_fn: Callable[..., np.ndarray],
    *,
    ints: bool = True,
    floats: bool = True,
    bools: bool = False,
) -> Evaluator:
    def evaluate(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
        if not all(_numeric_ok(x.dtype, ints=ints, floats=floats, bools=bools) for x in xs):
            return None
        return numpy_fn(*xs)

    return evaluate


# divide(a, b): IEEE for floats; for integers truncation toward zero, with XLA's
# definitions a/0 = -1 (all ones) and INT_MIN/-1 = INT_MIN
def _divide(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    a, b = xs
    if _numeric_ok(a.dtype, ints=False, floats=True, bools=False):
        return np.divide(a, b)
    return integer_divide(a, b) if _is_int(a.dtype) else None


# remainder(a, b): sign of the dividend (C fmod); for integers XLA's a%0 = a, INT_MIN%-1 = 0
def _remainder(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    a, b = xs
    if _numeric_ok(a.dtype, ints=False, floats=True, bools=False):
        return np.fmod(a, b)
    return integer_remainder(a, b) if _is_int(a.dtype) else None


# compare(a, b, direction, type) -> i1
def _compare(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    a, b = xs
    direction = _stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
    compare_type = "NOTYPE"
    if "compare_type" in op.attributes:
        compare_type = _stablehlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
    compare = comparison(direction, compare_type)
    if compare is None or not (a.dtype == np.bool_ or _is_int(a.dtype) or is_float_dtype(a.dtype)):
        return None
    return compare(a, b)


# select(pred, on_true, on_false)
def _select(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    pred, on_true, on_false = xs
    return np.where(pred, on_true, on_false).astype(dtype)


# clamp(lo, x, hi) = min(max(x, lo), hi)
def _clamp(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    lo, x, hi = xs
    if not _numeric_ok(x.dtype, ints=True, floats=True, bools=False):
        return None
    return np.minimum(np.maximum(x, lo), hi).astype(dtype)


def _exactly_in_f32(x: np.ndarray) -> bool:
    as_f32 = x.astype(np.float32)
    return bool(np.all((as_f32.astype(x.dtype) == x) | np.isnan(x)))


# convert(x): to the result element type, rounding to nearest even once
def _convert(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    (x,) = xs
    source = x.dtype
    if x.dtype == dtype:
        return x
    known = {np.dtype(np.bool_)} | _ARITHMETIC_FLOATS | _NARROW_FLOATS
    for side in (source, dtype):
        if not (_is_int(side) or side in known or side.kind == "f"):
            return None
    if dtype == np.bool_:
        return x != 0
    if source == np.bool_:
        return x.astype(dtype)
    if _is_int(dtype):
        if _is_int(source):
            return x.astype(dtype)  # two's complement wrap, as XLA
        # Float -> int: NaN and out-of-range results are implementation-defined.
        return float_to_int(x, dtype)
    # Destination is a float.
    if dtype in _NARROW_FLOATS:
        if _is_int(source) and np.any(np.abs(x.astype(np.float64)) > 2**24):
            return None  # int -> f32 would round before the final rounding
        if source == np.float64 and not _exactly_in_f32(x):
            return None  # f64 -> f32 -> narrow would round twice
        if dtype.itemsize == 1:  # fp8 and fp4
            wide = x.astype(np.float64)
            limit = float(ml_dtypes.finfo(dtype).max)
            if not np.all(np.isfinite(wide)) or np.any(np.abs(wide) > limit):
                return None  # fp8 overflow handling differs between implementations
    return x.astype(dtype)


# broadcast_in_dim(x, dims): operand dim i becomes result dim dims[i]
def _broadcast_in_dim(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    (x,) = xs
    result_shape = ir.RankedTensorType(op.results[0].type).shape
    dims = i64_array(op, "broadcast_dimensions")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    ordered = np.transpose(x, order) if dims else x
    expanded_shape = [1] * len(result_shape)
    for operand_dim in order:
        expanded_shape[dims[operand_dim]] = x.shape[operand_dim]
    return np.broadcast_to(ordered.reshape(expanded_shape), result_shape).copy()


def _reshape(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return xs[0].reshape(ir.RankedTensorType(op.results[0].type).shape)


def _transpose(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.transpose(xs[0], i64_array(op, "permutation")).copy()


def _slice(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    starts, limits, strides = (
        i64_array(op, n) for n in ("start_indices", "limit_indices", "strides")
    )
    index = tuple(slice(s, e, st) for s, e, st in zip(starts, limits, strides, strict=True))
    return xs[0][index].copy()


def _reverse(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.flip(xs[0], axis=tuple(i64_array(op, "dimensions"))).copy()


def _concatenate(op: ir.Operation, xs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.concatenate(xs, axis=ir.IntegerAttr(op.attributes["dimension"]).value)


@dataclass(frozen=True)
class _Rule:
    evaluate: Evaluator
    # "elementwise": all-splat operands give a splat computed on the scalars;
    # "layout": a splat operand gives a splat of the same value.
    kind: str


_RULES: dict[str, _Rule] = {
    "stablehlo.add": _Rule(_elementwise(np.add, bools=True), "elementwise"),
    "stablehlo.subtract": _Rule(_elementwise(np.subtract), "elementwise"),
    "stablehlo.multiply": _Rule(_elementwise(np.multiply, bools=True), "elementwise"),
    "stablehlo.divide": _Rule(_divide, "elementwise"),
    "stablehlo.remainder": _Rule(_remainder, "elementwise"),
    "stablehlo.maximum": _Rule(_elementwise(np.maximum, bools=True), "elementwise"),
    "stablehlo.minimum": _Rule(_elementwise(np.minimum, bools=True), "elementwise"),
    "stablehlo.and": _Rule(_elementwise(np.bitwise_and, floats=False, bools=True), "elementwise"),
    "stablehlo.or": _Rule(_elementwise(np.bitwise_or, floats=False, bools=True), "elementwise"),
    "stablehlo.xor": _Rule(_elementwise(np.bitwise_xor, floats=False, bools=True), "elementwise"),
    "stablehlo.not": _Rule(_elementwise(np.invert, floats=False, bools=True), "elementwise"),
    "stablehlo.negate": _Rule(_elementwise(np.negative), "elementwise"),
    "stablehlo.abs": _Rule(_elementwise(np.abs), "elementwise"),
    "stablehlo.sign": _Rule(_elementwise(np.sign), "elementwise"),
    "stablehlo.floor": _Rule(_elementwise(np.floor, ints=False), "elementwise"),
    "stablehlo.ceil": _Rule(_elementwise(np.ceil, ints=False), "elementwise"),
    "stablehlo.round_nearest_even": _Rule(_elementwise(np.rint, ints=False), "elementwise"),
    "stablehlo.round_nearest_afz": _Rule(_elementwise(round_half_away, ints=False), "elementwise"),
    "stablehlo.compare": _Rule(_compare, "elementwise"),
    "stablehlo.select": _Rule(_select, "elementwise"),
    "stablehlo.clamp": _Rule(_clamp, "elementwise"),
    "stablehlo.convert": _Rule(_convert, "elementwise"),
    "stablehlo.reshape": _Rule(_reshape, "layout"),
    "stablehlo.transpose": _Rule(_transpose, "layout"),
    "stablehlo.broadcast_in_dim": _Rule(_broadcast_in_dim, "layout"),
    "stablehlo.slice": _Rule(_slice, "layout"),
    "stablehlo.reverse": _Rule(_reverse, "layout"),
    "stablehlo.concatenate": _Rule(_concatenate, "concatenate"),
}


def _same_bits(values: list[np.ndarray]) -> bool:
    first = values[0].tobytes()
    return all(v.tobytes() == first for v in values[1:])


@register_pass
@dataclass(frozen=True)
class FoldConstants(Pass):
    """Evaluate StableHLO ops on constants where the result is exactly XLA's."""

    name = "fold-constants"
    max_folded_elements: int = 65536

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        for op in ops_in_program_order(module.operation):
            if op.name == "stablehlo.get_dimension_size":
                self.fold_dimension_size(op, ctx)
            elif op.name in _RULES:
                self.fold(op, _RULES[op.name], ctx)

    # get_dimension_size(x, d) with static dim d -> constant
    def fold_dimension_size(self, op: ir.Operation, ctx: PassContext) -> None:
        operand_type = op.operands[0].type
        dim = ir.IntegerAttr(op.attributes["dimension"]).value
        if not isinstance(operand_type, ir.RankedTensorType) or operand_type.is_dynamic_dim(dim):
            return
        result_type = ir.RankedTensorType(op.results[0].type)
        value = np.array(
            operand_type.get_dim_size(dim), dtype=numpy_dtype_of(result_type.element_type)
        )
        self.replace_with_constant(op, splat_elements_attr(value, result_type), ctx)

    def fold(self, op: ir.Operation, rule: _Rule, ctx: PassContext) -> None:
        if len(op.results) != 1:
            return
        result_type = static_tensor_type(op.results[0].type)
        attrs = [constant_attr(v) for v in op.operands]
        if result_type is None or not attrs or any(a is None for a in attrs):
            return
        try:
            result_dtype = numpy_dtype_of(result_type.element_type)
            attr = self.evaluate(op, rule, attrs, result_type, result_dtype)
        except UnsupportedConstantError:
            return
        if attr is not None:
            self.replace_with_constant(op, attr, ctx)

    def evaluate(
        self,
        op: ir.Operation,
        rule: _Rule,
        attrs: list[ir.Attribute],
        result_type: ir.RankedTensorType,
        result_dtype: np.dtype,
    ) -> ir.Attribute | None:
        with np.errstate(all="ignore"):
            if all(is_splat(a) for a in attrs):
                scalars = [splat_scalar(a) for a in attrs]
                if rule.kind == "layout":
                    return splat_elements_attr(scalars[0], result_type)
                if rule.kind == "concatenate" and _same_bits(scalars):
                    return splat_elements_attr(scalars[0], result_type)
                if rule.kind == "elementwise":
                    value = rule.evaluate(op, scalars, result_dtype)
                    if value is None or np.asarray(value).dtype != result_dtype:
                        return None
                    return splat_elements_attr(np.asarray(value), result_type)
            result_elements = int(np.prod(result_type.shape, dtype=np.int64))
            largest_operand = max(
                int(np.prod(ir.RankedTensorType(a.type).shape, dtype=np.int64)) for a in attrs
            )
            if result_elements > max(self.max_folded_elements, largest_operand):
                return None
            value = rule.evaluate(op, [elements_attr_to_numpy(a) for a in attrs], result_dtype)
            if value is None:
                return None
            value = np.asarray(value)
            if value.dtype != result_dtype or list(value.shape) != list(result_type.shape):
                return None
            return numpy_to_elements_attr(value, result_type.element_type)

    def replace_with_constant(self, op: ir.Operation, attr: ir.Attribute, ctx: PassContext) -> None:
        producers = [defining_op(v) for v in op.operands]
        pattern = op.name.removeprefix("stablehlo.")
        replace_op(op, [create_constant(attr, before=op)])
        ctx.count(pattern)
        # Constants whose only user was the folded op go with it.
        for producer in {p for p in producers if p is not None}:
            if is_unused(producer) and producer.name in ("stablehlo.constant", "arith.constant"):
                producer.erase()
