"""The StableHLO ops the interpreter runs, each made once into a numpy closure.

``MAKERS`` maps an op name to a maker: ``maker(op, result_types) -> fn``, called once
when a program is read (attributes are decoded then), returning ``fn(*operands)``
that computes the op's result from numpy arrays. A maker raises ``Uninterpretable``
for a form it does not cover (the program is then compiled instead); ``fn`` raises it
for a value whose StableHLO meaning numpy does not give exactly (an integer division
by zero, a scatter index out of range): the call is then run compiled. Only ops whose
numpy form computes what StableHLO specifies are here; precision follows numpy's
(float32 stays float32, sums are pairwise), not XLA's fused kernels, so floating
results may differ from the compiled program's in the last bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from torch_mlir import ir
from torch_mlir._mlir_libs import _stablehlo as shlo

from torchneuron.passes.numpy_semantics import (
    comparison,
    float_to_int,
    integer_divide,
    integer_remainder,
    round_half_away,
)

from .interpreter_types import Uninterpretable, element_dtype

Maker = Callable[[Any, list], Callable[..., Any]]
MAKERS: dict[str, Maker] = {}


def _maker(*names: str):
    def register(fn: Maker) -> Maker:
        for name in names:
            MAKERS[name] = fn
        return fn

    return register


def _ints(op: Any, name: str) -> list[int]:
    attribute = op.attributes[name]
    return [int(v) for v in ir.DenseI64ArrayAttr(attribute)]


def _has(op: Any, name: str) -> bool:
    return name in op.attributes


def _floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def _float_result(op, results) -> np.dtype:
    """The op's result type, which must be a float (else ``Uninterpretable``)."""
    dtype = results[0][0]
    if not _floating(dtype):
        raise Uninterpretable(f"{op.name} of {dtype}")
    return dtype


# -- elementwise -----------------------------------------------------------------------

_FLOAT_UNARY = {
    "stablehlo.exponential": np.exp,
    "stablehlo.exponential_minus_one": np.expm1,
    "stablehlo.log": np.log,
    "stablehlo.log_plus_one": np.log1p,
    "stablehlo.tanh": np.tanh,
    "stablehlo.sqrt": np.sqrt,
    "stablehlo.cbrt": np.cbrt,
    "stablehlo.sine": np.sin,
    "stablehlo.cosine": np.cos,
    "stablehlo.tan": np.tan,
    "stablehlo.floor": np.floor,
    "stablehlo.ceil": np.ceil,
    "stablehlo.round_nearest_even": np.rint,
    "stablehlo.is_finite": np.isfinite,
}


@_maker(*_FLOAT_UNARY)
def _float_unary(op, results):
    if not _floating(results[0][0]) and op.name != "stablehlo.is_finite":
        raise Uninterpretable(f"{op.name} of {results[0][0]}")
    return _FLOAT_UNARY[op.name]


@_maker("stablehlo.rsqrt")
def _rsqrt(op, results):
    one = _float_result(op, results).type(1)
    return lambda x: one / np.sqrt(x)


@_maker("stablehlo.logistic")
def _logistic(op, results):
    one = _float_result(op, results).type(1)
    return lambda x: one / (one + np.exp(-x))


@_maker("stablehlo.round_nearest_afz")
def _round_afz(op, results):
    _float_result(op, results)
    return round_half_away


@_maker("stablehlo.abs", "stablehlo.negate", "stablehlo.sign")
def _signed_unary(op, results):
    dtype = results[0][0]
    if dtype.kind not in "fi":
        raise Uninterpretable(f"{op.name} of {dtype}")
    return {"stablehlo.abs": np.abs, "stablehlo.negate": np.negative, "stablehlo.sign": np.sign}[
        op.name
    ]


@_maker("stablehlo.not")
def _not(op, results):
    dtype = results[0][0]
    if dtype == np.bool_:
        return np.logical_not
    if dtype.kind in "iu":
        return np.invert
    raise Uninterpretable(f"{op.name} of {dtype}")


_BINARY = {
    "stablehlo.add": np.add,
    "stablehlo.subtract": np.subtract,
    "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum,
}


@_maker(*_BINARY)
def _binary(op, results):
    dtype = results[0][0]
    if dtype == np.bool_:  # i1 add is or, multiply is and (StableHLO's 1-bit integers)
        return {
            "stablehlo.add": np.logical_or,
            "stablehlo.multiply": np.logical_and,
            "stablehlo.maximum": np.logical_or,
            "stablehlo.minimum": np.logical_and,
        }.get(op.name) or _refuse(op.name, dtype)
    return _BINARY[op.name]


def _refuse(name: str, dtype: Any):
    raise Uninterpretable(f"{name} of {dtype}")


@_maker("stablehlo.and", "stablehlo.or", "stablehlo.xor")
def _logical(op, results):
    dtype = results[0][0]
    kind = op.name.split(".")[1]
    if dtype == np.bool_:
        return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[kind]
    if dtype.kind in "iu":
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    raise Uninterpretable(f"{op.name} of {dtype}")


@_maker("stablehlo.divide", "stablehlo.remainder")
def _divide(op, results):
    dtype = results[0][0]
    divide = op.name == "stablehlo.divide"
    if _floating(dtype):
        return np.divide if divide else np.fmod
    if dtype.kind not in "iu":
        raise Uninterpretable(f"{op.name} of {dtype}")

    exact = integer_divide if divide else integer_remainder

    def integer(a, b):  # XLA defines these cases; they are left to the compiled program
        if np.any(b == 0) or (dtype.kind == "i" and np.any((b == -1) & (a == np.iinfo(dtype).min))):
            raise Uninterpretable(f"{op.name}: an integer division by zero or overflow")
        return exact(a, b)

    return integer


@_maker("stablehlo.power")
def _power(op, results):
    _float_result(op, results)
    return np.power


@_maker("stablehlo.atan2")
def _atan2(op, results):
    _float_result(op, results)
    return np.arctan2


@_maker("stablehlo.compare")
def _compare(op, results):
    direction = shlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
    kind = "NOTYPE"
    if _has(op, "compare_type"):
        kind = shlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
    compare = comparison(direction, kind)
    if compare is None:
        raise Uninterpretable(f"{op.name} of type {kind}")
    return compare


@_maker("stablehlo.select")
def _select(op, results):
    return np.where


@_maker("stablehlo.clamp")
def _clamp(op, results):
    return lambda low, x, high: np.minimum(np.maximum(x, low), high)


@_maker("stablehlo.convert")
def _convert(op, results):
    target = results[0][0]
    source = element_dtype(ir.RankedTensorType(op.operands[0].type).element_type)

    if target == np.bool_:
        return lambda x: x != 0
    if target.kind in "iu" and _floating(source):

        def to_integer(x):  # toward zero; NaN, inf and values out of range: compiled
            whole = float_to_int(x, target)
            if whole is None:
                raise Uninterpretable(f"{op.name}: a value outside {target}'s range")
            return whole

        return to_integer
    return lambda x: x.astype(target)


# -- shapes ----------------------------------------------------------------------------


@_maker("stablehlo.constant")
def _constant(op, results):
    dtype, shape = results[0]
    attribute = ir.DenseElementsAttr(op.attributes["value"])
    if attribute.is_splat:
        text = str(attribute.get_splat_value()).split(" : ")[0]
        value = np.array(_scalar(text, dtype), dtype=dtype)
        array = np.broadcast_to(value, shape)
    else:
        if dtype == np.bool_ or dtype.kind not in "iuf" or dtype.itemsize < 4 and dtype.kind == "f":
            raise Uninterpretable(f"a dense {dtype} constant")
        array = np.array(attribute, dtype=dtype).reshape(shape)
    array = np.array(array)  # one copy, owned and writable
    array.flags.writeable = False
    return lambda: array


def _scalar(text: str, dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return {"true": True, "false": False, "1": True, "0": False}[text]
    if dtype.kind in "iu":
        return int(text)
    if text.startswith("0x"):  # a NaN or inf printed as its bits
        return np.array(int(text, 16), dtype=f"u{dtype.itemsize}").view(dtype)
    return float(text)


@_maker("stablehlo.iota")
def _iota(op, results):
    dtype, shape = results[0]
    dimension = int(ir.IntegerAttr(op.attributes["iota_dimension"]).value)
    return lambda: _iota_of(shape, dimension, dtype)


@_maker("stablehlo.dynamic_iota")
def _dynamic_iota(op, results):
    dtype = results[0][0]
    dimension = int(ir.IntegerAttr(op.attributes["iota_dimension"]).value)
    return lambda shape: _iota_of(_shape_of(shape), dimension, dtype)


def _iota_of(shape, dimension, dtype):
    line = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(view), shape)


def _shape_of(values: np.ndarray) -> tuple[int, ...]:
    shape = tuple(np.asarray(values).reshape(-1).tolist())
    if any(v < 0 for v in shape):
        raise Uninterpretable(f"a negative size in {list(shape)}")
    return shape


@_maker("stablehlo.get_dimension_size")
def _dimension_size(op, results):
    dimension = int(ir.IntegerAttr(op.attributes["dimension"]).value)
    return lambda x: np.array(x.shape[dimension], dtype=np.int32)


@_maker("stablehlo.reshape")
def _reshape(op, results):
    shape = results[0][1]
    if shape is None:
        raise Uninterpretable("a reshape to a dynamic shape")
    return lambda x: x.reshape(shape)


@_maker("stablehlo.dynamic_reshape")
def _dynamic_reshape(op, results):
    return lambda x, shape: x.reshape(_shape_of(shape))


@_maker("stablehlo.broadcast_in_dim")
def _broadcast(op, results):
    shape = results[0][1]
    if shape is None:
        raise Uninterpretable("a broadcast to a dynamic shape")
    dims = _ints(op, "broadcast_dimensions")
    identity = dims == list(range(len(shape)))
    return lambda x: x if identity and x.shape == shape else _broadcast_in_dim(x, shape, dims)


@_maker("stablehlo.dynamic_broadcast_in_dim")
def _dynamic_broadcast(op, results):
    dims = _ints(op, "broadcast_dimensions")
    rank = len(ir.RankedTensorType(op.results[0].type).shape)
    identity = dims == list(range(rank))

    def run(x, shape):
        shape = _shape_of(shape)
        # the front half broadcasts before most elementwise ops, mostly to the operand's
        # own shape: that is the operand itself
        if identity and x.shape == shape:
            return x
        return _broadcast_in_dim(x, shape, dims)

    return run


def _broadcast_in_dim(x: np.ndarray, shape: tuple, dims: list[int]) -> np.ndarray:
    view = [1] * len(shape)
    for axis, dim in enumerate(dims):
        if x.shape[axis] not in (1, shape[dim]):
            raise Uninterpretable(f"broadcast of {x.shape} to {shape} along {dims}")
        view[dim] = x.shape[axis]
    if sorted(dims) != list(dims):
        order = sorted(range(len(dims)), key=lambda a: dims[a])
        x = np.transpose(x, order)
    return np.broadcast_to(x.reshape(view), shape)


@_maker("stablehlo.concatenate")
def _concatenate(op, results):
    dimension = int(ir.IntegerAttr(op.attributes["dimension"]).value)
    return lambda *xs: np.concatenate(xs, axis=dimension)


@_maker("stablehlo.transpose")
def _transpose(op, results):
    permutation = _ints(op, "permutation")
    return lambda x: np.transpose(x, permutation)


@_maker("stablehlo.slice")
def _slice(op, results):
    index = tuple(
        slice(a, b, c)
        for a, b, c in zip(
            _ints(op, "start_indices"), _ints(op, "limit_indices"), _ints(op, "strides")
        )
    )
    return lambda x: x[index]


@_maker("stablehlo.real_dynamic_slice")
def _real_dynamic_slice(op, results):
    def run(x, starts, limits, strides):
        bounds = zip(_shape_of(starts), _shape_of(limits), _shape_of(strides), x.shape)
        index = []
        for a, b, c, size in bounds:
            if c < 1 or not 0 <= a <= b <= size:
                raise Uninterpretable(f"a dynamic slice [{a}:{b}:{c}] of a size {size}")
            index.append(slice(a, b, c))
        return x[tuple(index)]

    return run


def _clamped_starts(starts, shape, sizes) -> list[int]:
    return [
        min(max(int(s), 0), dim - size) for s, dim, size in zip(starts, shape, sizes, strict=True)
    ]


@_maker("stablehlo.dynamic_slice")
def _dynamic_slice(op, results):
    sizes = _ints(op, "slice_sizes")

    def run(x, *starts):
        begin = _clamped_starts(starts, x.shape, sizes)
        return x[tuple(slice(b, b + s) for b, s in zip(begin, sizes))]

    return run


@_maker("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(op, results):
    def run(x, update, *starts):
        begin = _clamped_starts(starts, x.shape, update.shape)
        out = np.array(x)
        out[tuple(slice(b, b + s) for b, s in zip(begin, update.shape))] = update
        return out

    return run


@_maker("stablehlo.pad")
def _pad(op, results):
    low, high, interior = (
        _ints(op, "edge_padding_low"),
        _ints(op, "edge_padding_high"),
        _ints(op, "interior_padding"),
    )
    if any(i < 0 for i in interior):
        raise Uninterpretable("a negative interior padding")

    def run(x, value):
        grown = [d + max(d - 1, 0) * i for d, i in zip(x.shape, interior)]
        spread = np.full(grown, value, dtype=x.dtype)
        spread[tuple(slice(None, None, i + 1) for i in interior)] = x
        widths = [(max(a, 0), max(b, 0)) for a, b in zip(low, high)]
        padded = np.pad(spread, widths, constant_values=value)
        crop = tuple(
            slice(-min(a, 0), padded.shape[axis] + min(b, 0))
            for axis, (a, b) in enumerate(zip(low, high))
        )
        return padded[crop]

    return run
