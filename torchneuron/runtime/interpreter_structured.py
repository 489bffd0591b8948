"""The interpreter's ops with structure: reductions, contractions, gather and scatter.

Registered into ``interpreter_ops.MAKERS`` like the elementwise ones (importing this
module does it). A reduction or scatter body is read when the program is: it must be
one combining op of the two block arguments (``add``, ``multiply``, ``maximum``,
``minimum``, ``and``, ``or``), or, for scatter, the update itself (a replacing
scatter). Anything else is ``Uninterpretable``. Operand and start-index batching
dimensions are not covered (a program with them is compiled instead).
"""

from __future__ import annotations

import math

import numpy as np
from torch_mlir._mlir_libs import _stablehlo as shlo

from .interpreter_ops import MAKERS, _ints
from .interpreter_types import Uninterpretable

_COMBINERS = {
    "stablehlo.add": (np.add, np.logical_or),
    "stablehlo.multiply": (np.multiply, np.logical_and),
    "stablehlo.maximum": (np.maximum, np.logical_or),
    "stablehlo.minimum": (np.minimum, np.logical_and),
    "stablehlo.and": (np.bitwise_and, np.logical_and),
    "stablehlo.or": (np.bitwise_or, np.logical_or),
}


def _body(op) -> str:
    """``"replace"`` or the combining op's name of a one-input body, else refused."""
    block = op.regions[0].blocks[0]
    arguments = list(block.arguments)
    operations = [o.operation for o in block.operations]
    if len(arguments) != 2 or not operations or operations[-1].name != "stablehlo.return":
        raise Uninterpretable(f"{op.name} with a body of {len(arguments)} arguments")
    returned = operations[-1].operands[0]
    if len(operations) == 1:
        if returned == arguments[1]:
            return "replace"
        raise Uninterpretable(f"{op.name} whose body returns its first argument")
    combine = operations[0]
    operands = list(combine.operands)
    if (
        len(operations) != 2
        or combine.name not in _COMBINERS
        or sorted(map(hash, operands)) != sorted(map(hash, arguments))
        or returned != combine.results[0]
    ):
        raise Uninterpretable(f"{op.name} with a body other than one combining op")
    return combine.name


def _reduce(op, results):
    if len(op.operands) != 2:
        raise Uninterpretable("a reduce of several inputs")
    dims = tuple(_ints(op, "dimensions"))
    dtype = results[0][0]
    combine = _body(op)
    if combine == "replace":
        raise Uninterpretable("a reduce whose body returns an argument")
    numeric, logical = _COMBINERS[combine]
    ufunc = logical if dtype == np.bool_ else numeric
    if dtype.kind == "f" and combine in ("stablehlo.and", "stablehlo.or"):
        raise Uninterpretable(f"a bitwise reduce of {dtype}")

    identity = _identity(combine, dtype)

    def run(x, init):
        # XLA may fold the init in once per partial sum: only its identity is exact
        if init.item() != identity or (dtype.kind == "f" and np.signbit(init) != (identity < 0)):
            raise Uninterpretable(f"a reduce whose init {init.item()} is not its identity")
        return ufunc.reduce(x, axis=dims, initial=identity).astype(dtype, copy=False)

    return run


def _identity(combine: str, dtype: np.dtype):
    """The value ``combine`` leaves every element unchanged with, in ``dtype``."""
    if dtype == np.bool_:
        return combine in ("stablehlo.multiply", "stablehlo.minimum", "stablehlo.and")
    if combine in ("stablehlo.add", "stablehlo.or"):
        return dtype.type(0)
    if combine == "stablehlo.multiply":
        return dtype.type(1)
    if combine == "stablehlo.and":
        return dtype.type(-1) if dtype.kind == "i" else np.iinfo(dtype).max
    low, high = (
        (-np.inf, np.inf) if dtype.kind == "f" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    )
    return dtype.type(low if combine == "stablehlo.maximum" else high)


MAKERS["stablehlo.reduce"] = _reduce


def _dot_general(op, results):
    if "algorithm" in op.attributes:
        raise Uninterpretable("a dot_general with an algorithm")
    numbers = shlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    lhs_batch = list(numbers.lhs_batching_dimensions)
    rhs_batch = list(numbers.rhs_batching_dimensions)
    lhs_contract = list(numbers.lhs_contracting_dimensions)
    rhs_contract = list(numbers.rhs_contracting_dimensions)
    dtype = results[0][0]

    def run(lhs, rhs):
        lhs_free = [d for d in range(lhs.ndim) if d not in lhs_batch and d not in lhs_contract]
        rhs_free = [d for d in range(rhs.ndim) if d not in rhs_batch and d not in rhs_contract]
        batch = [lhs.shape[d] for d in lhs_batch]
        left = [lhs.shape[d] for d in lhs_free]
        right = [rhs.shape[d] for d in rhs_free]
        depth = math.prod(lhs.shape[d] for d in lhs_contract)
        # contiguous operands of the result's type: numpy's matmul takes BLAS only for
        # contiguous floats (a strided view runs its slow loop), and a wider result type
        # (i8 x i8 -> i32) multiplies in that type
        a = np.ascontiguousarray(
            np.transpose(lhs, lhs_batch + lhs_free + lhs_contract), dtype=dtype
        ).reshape(math.prod(batch), math.prod(left), depth)
        b = np.ascontiguousarray(
            np.transpose(rhs, rhs_batch + rhs_contract + rhs_free), dtype=dtype
        ).reshape(math.prod(batch), depth, math.prod(right))
        return np.matmul(a, b).reshape(batch + left + right)

    return run


MAKERS["stablehlo.dot_general"] = _dot_general


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """``indices`` with its index vectors along the last axis."""
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def _starts(vectors: np.ndarray, mapping: list[int], rank: int) -> np.ndarray:
    starts = np.zeros(vectors.shape[:-1] + (rank,), dtype=np.int64)
    starts[..., mapping] = vectors
    return starts


def _window_index(starts: np.ndarray, kept: list[int], sizes: list[int]) -> tuple:
    """Index arrays (batch shape + window shape) of every element of every window."""
    batch = starts.shape[:-1]
    index = []
    for dim in range(starts.shape[-1]):
        position = starts[..., dim].reshape(batch + (1,) * len(kept))
        if dim in kept:
            axis = kept.index(dim)
            view = [1] * (len(batch) + len(kept))
            view[len(batch) + axis] = sizes[axis]
            position = position + np.arange(sizes[axis]).reshape(view)
        index.append(position)
    return tuple(index)


def _gather(op, results):
    numbers = shlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])
    if list(numbers.operand_batching_dims) or list(numbers.start_indices_batching_dims):
        raise Uninterpretable("a gather with batching dimensions")
    offset_dims = list(numbers.offset_dims)
    collapsed = list(numbers.collapsed_slice_dims)
    mapping = list(numbers.start_index_map)
    vector_dim = int(numbers.index_vector_dim)
    slice_sizes = _ints(op, "slice_sizes")

    def run(operand, indices):
        vectors = _index_vectors(indices, vector_dim)
        starts = _starts(vectors, mapping, operand.ndim)
        highest = np.array(operand.shape) - np.array(slice_sizes)
        if np.any(highest < 0):
            raise Uninterpretable("a gather slice larger than its operand")
        starts = np.clip(starts, 0, highest)  # StableHLO clamps a gather's starts
        kept = [d for d in range(operand.ndim) if d not in collapsed]
        sizes = [slice_sizes[d] for d in kept]
        batch = starts.shape[:-1]
        found = np.broadcast_to(operand[_window_index(starts, kept, sizes)], batch + tuple(sizes))
        rank = len(batch) + len(kept)
        batch_positions = [i for i in range(rank) if i not in offset_dims]
        order = [
            len(batch) + offset_dims.index(i) if i in offset_dims else batch_positions.index(i)
            for i in range(rank)
        ]
        return np.transpose(found, order)

    return run


MAKERS["stablehlo.gather"] = _gather


def _scatter(op, results):
    if len(op.operands) != 3:
        raise Uninterpretable("a scatter of several inputs")
    numbers = shlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])
    if list(numbers.input_batching_dims) or list(numbers.scatter_indices_batching_dims):
        raise Uninterpretable("a scatter with batching dimensions")
    window_dims = list(numbers.update_window_dims)
    inserted = list(numbers.inserted_window_dims)
    mapping = list(numbers.scattered_dims_to_operand_dims)
    vector_dim = int(numbers.index_vector_dim)
    dtype = results[0][0]
    combine = _body(op)
    if combine != "replace":
        numeric, logical = _COMBINERS[combine]
        ufunc = logical if dtype == np.bool_ else numeric

    def run(operand, indices, updates):
        vectors = _index_vectors(indices, vector_dim)
        starts = _starts(vectors, mapping, operand.ndim)
        kept = [d for d in range(operand.ndim) if d not in inserted]
        sizes = [updates.shape[d] for d in window_dims]
        extent = np.ones(operand.ndim, dtype=np.int64)
        extent[kept] = sizes
        if not np.all((starts >= 0) & (starts + extent <= np.array(operand.shape))):
            raise Uninterpretable("a scatter window out of range")  # XLA skips it
        scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
        values = np.transpose(updates, scatter_dims + window_dims)
        index = _window_index(starts, kept, sizes)
        result = np.array(operand)
        if combine == "replace":
            flat = np.ravel_multi_index(
                tuple(np.broadcast_to(i, values.shape).reshape(-1) for i in index), operand.shape
            )
            if np.unique(flat).size != flat.size:
                raise Uninterpretable("a replacing scatter that writes one element twice")
            result[index] = values
        else:
            ufunc.at(result, index, values)
        return result

    return run


MAKERS["stablehlo.scatter"] = _scatter
