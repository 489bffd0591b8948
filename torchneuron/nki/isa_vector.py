"""The VectorE and GpSimd arithmetic of ``nki.isa``: element-wise, scalar, select and reduce.

``tensor_tensor``, ``tensor_scalar``, ``scalar_tensor_tensor``, ``select_reduce``,
``tensor_reduce``, ``tensor_scalar_reduce``, ``tensor_partition_reduce`` and ``reciprocal``,
each after the public NKI ISA page of the same name (Neuron 2.33), declared and checked as
instruction.py describes. ``nki.isa`` (isa.py) re-exports them; kernels call them there.
"""

from __future__ import annotations

import math

import numpy as np

from torchneuron.nki import ops as _ops
from torchneuron.nki import trace as _trace
from torchneuron.nki.errors import refuse
from torchneuron.nki.instruction import (
    Issue,
    alu_operand,
    check_access,
    copied,
    elementwise,
    engine,
    instruction,
    name_of,
    operand_value,
    partition_first_shape,
    rate_dtype,
    read,
    read_2d,
    reduce_cmd,
    tile_operand,
    write,
)
from torchneuron.nki.tensor import Tile

VECTOR, SCALAR, GPSIMD = _trace.VECTOR, _trace.SCALAR, _trace.GPSIMD

# Integer tensor_tensor arithmetic stays integer for these operators; the others compute in
# float32 like the float forms.
_INTEGER_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def _integer_math(*tiles) -> bool:
    return all(isinstance(t, Tile) and not t.dtype.is_float for t in tiles)


def _tensor_tensor_engine(operands: dict) -> str:
    # nl.power runs on GpSimd (tensor_tensor page); the rest on VectorE.
    return GPSIMD if alu_operand("tensor_tensor", operands["op"]).name == "power" else VECTOR


@instruction(
    tiles=("dst", "data1", "data2"),
    engines=(VECTOR, GPSIMD),
    default_engine=_tensor_tensor_engine,
    reads=("data1", "data2"),
    writes=("dst",),
    same_layout=("data1", "data2"),
    not_both_psum=("data1", "data2"),
)
def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    """``dst = data1 <op> data2`` element-wise (VectorE; GpSimd for ``nl.power``)."""
    alu = alu_operand("tensor_tensor", op)
    integer = _integer_math(data1, data2, dst) or alu.kind == _ops.BITVEC

    def run(state):
        if integer:
            a = read(state, data1, np.int64).reshape(data1.partitions, -1)
            b = read(state, data2, np.int64).reshape(data2.partitions, -1)
            if alu.kind == _ops.BITVEC:
                result = _ops.ALU_OPS[alu.name].fn(a, b)
            elif alu.name in _INTEGER_OPS:
                result = _INTEGER_OPS[alu.name](a, b)
            else:
                result = alu.fn(a.astype(np.float32), b.astype(np.float32))
        else:
            result = alu.fn(read_2d(state, data1), read_2d(state, data2))
        write(state, dst, result)

    cost = {"free": dst.free_size, "dtype": rate_dtype(data1, data2, dst), "op": alu.name}
    return Issue((data1, data2), (dst,), run, elementwise((dst,)), cost=cost)


@instruction(
    tiles=("dst", "data"),
    engines=(VECTOR, SCALAR, GPSIMD),
    reads=("data",),
    writes=("dst",),
    same_layout=("data",),
    vectors=(("operand0", "data"), ("operand1", "data")),
)
def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=engine.unknown,
    name=None,
):
    """``dst = (data <op0> operand0) <op1> operand1`` with scalar or (partitions, 1) operands
    broadcast along the free axis (VectorE unless told)."""
    first = alu_operand("tensor_scalar", op0, "op0")
    second = None if op1 is None else alu_operand("tensor_scalar", op1, "op1")
    if second is not None and operand1 is None:
        raise refuse(name_of("tensor_scalar"), "op1 is given without operand1")

    def apply(op, x, operand, reverse, state):
        value = operand_value(state, operand)
        return op.fn(value, x) if reverse else op.fn(x, value)

    def run(state):
        x = apply(first, read_2d(state, data), operand0, reverse0, state)
        if second is not None:
            x = apply(second, x, operand1, reverse1, state)
        write(state, dst, x)

    cost = {"free": data.free_size, "dtype": rate_dtype(data, dst), "op": first.name}
    return Issue((data, operand0, operand1), (dst,), run, elementwise((dst,)), cost=cost)


@instruction(tiles=("dst", "data"), engines=(VECTOR,), reads=("data",), writes=("dst",))
def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """Reduce the last free axes of ``data`` with ``op`` on VectorE (float32 math)."""
    instr = name_of("tensor_reduce")
    alu = alu_operand("tensor_reduce", op)
    if alu.reduce is None:
        raise refuse(instr, f"{alu!r} is not a reduction operator")
    rank = len(partition_first_shape(data))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if (
        not axes
        or any(not isinstance(a, int) for a in axes)
        or sorted(axes) != list(range(min(axes), rank))
        or min(axes) < 1
    ):
        raise refuse(
            instr,
            f"axis {axis} must be the last free axes of a rank-{rank} "
            "tile, ending at the last one (axis 0 is the partition axis)",
        )
    if dst.partitions != data.partitions:
        raise refuse(instr, f"dst {dst.describe()} must have {data.partitions} partitions")
    kept = math.prod(partition_first_shape(data)[1 : min(axes)])
    if dst.free_size != kept:
        raise refuse(instr, f"dst {dst.describe()} must hold {kept} elements per partition")

    def run(state):
        x = read(state, data)
        if alu.kind == _ops.BITVEC:
            result = alu.reduce(x.astype(np.int64), axis=axes)
        else:
            result = alu.reduce(x, axis=axes, dtype=np.float32)
            if negate:
                result = -result
        write(state, dst, result)

    def poison(masks, pstate):
        # The reduced axes are the trailing free axes: each dst element reduces one run.
        return [masks[0].reshape(data.partitions, kept, -1).any(axis=2)]

    cost = {"free": data.free_size, "dtype": rate_dtype(data), "op": alu.name}
    return Issue((data,), (dst,), run, poison, cost=cost)


@instruction(
    tiles=("dst", "predicate", "on_true", "reduce_res"),
    engines=(VECTOR,),
    reads=("predicate", "on_true"),
    writes=("dst", "reduce_res"),
    same_layout=("predicate", "on_true"),
    not_both_psum=("predicate", "on_true"),
    vectors=(("on_false", "on_true"),),
)
def select_reduce(
    dst,
    predicate,
    on_true,
    on_false,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    reduce_op=None,
    reverse_pred=False,
    name=None,
):
    """``dst = where(predicate, on_true, on_false)`` on VectorE, optionally with the row max
    into ``reduce_res``."""

    def run(state):
        pred = read_2d(state, predicate) != 0
        if reverse_pred:
            pred = ~pred
        result = np.where(pred, read_2d(state, on_true), operand_value(state, on_false))
        write(state, dst, result)
        if reduce_res is not None:
            write(state, reduce_res, read_2d(state, dst).max(axis=1, keepdims=True))

    writes = (dst,) if reduce_res is None else (dst, reduce_res)
    cost = {"free": dst.free_size, "dtype": rate_dtype(on_true, dst)}
    return Issue((predicate, on_true, on_false), writes, run, elementwise(writes), cost=cost)


@instruction(
    tiles=("dst", "data", "operand1"),
    engines=(VECTOR,),
    reads=("data", "operand1"),
    writes=("dst",),
    same_layout=("data", "operand1"),
    not_both_psum=("data", "operand1"),
    vectors=(("operand0", "data"),),
)
def scalar_tensor_tensor(
    dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None
):
    """``dst = (data <op0> operand0) <op1> operand1`` on VectorE: ``operand0`` a scalar or a
    (partitions, 1) vector, ``operand1`` a tile shaped like ``data``."""
    first = alu_operand("scalar_tensor_tensor", op0, "op0")
    second = alu_operand("scalar_tensor_tensor", op1, "op1")
    if operand0 is None:
        raise refuse(name_of("scalar_tensor_tensor"), "operand0 is required")

    def run(state):
        x, scalar = read_2d(state, data), operand_value(state, operand0)
        x = first.fn(scalar, x) if reverse0 else first.fn(x, scalar)
        other = read_2d(state, operand1)
        write(state, dst, second.fn(other, x) if reverse1 else second.fn(x, other))

    cost = {
        "free": data.free_size,
        "dtype": rate_dtype(data, operand1, dst),
        "op": f"{first.name},{second.name}",
    }
    return Issue((data, operand0, operand1), (dst,), run, elementwise((dst,)), cost=cost)


@instruction()
def tensor_scalar_reduce(
    dst,
    data,
    op0,
    operand0,
    reduce_op,
    reduce_res=None,
    reverse0=False,
    reduce_cmd=reduce_cmd.reset_reduce,
    reduce_init=None,
    reduce_res_negate=False,
    name=None,
):
    """``dst = data <op0> operand0`` on VectorE, and ``reduce_res`` = the rows of ``dst``
    reduced with ``reduce_op`` (only ``reduce_cmd=reset_reduce`` is modelled)."""
    instr = name_of("tensor_scalar_reduce")
    if reduce_cmd.value != "reset_reduce" or reduce_init is not None:
        raise refuse(instr, "only reduce_cmd=reset_reduce without reduce_init is supported yet")
    reducer = alu_operand("tensor_scalar_reduce", reduce_op, "reduce_op")
    if reducer.name not in ("add", "multiply", "maximum", "minimum"):
        raise refuse(
            instr, f"reduce_op {reducer!r} must be nl.add, nl.multiply, nl.maximum or nl.minimum"
        )
    tensor_scalar(dst, data, op0, operand0, reverse0=reverse0)
    if reduce_res is None:
        return None
    result = tile_operand(reduce_res, "tensor_scalar_reduce", "reduce_res")
    check_access("tensor_scalar_reduce", VECTOR, result, "reduce_res", write=True)
    if result.partitions != dst.partitions or result.free_size != 1:
        raise refuse(instr, f"reduce_res {result.describe()} must be ({dst.partitions}, 1)")
    # Folded into the tensor_scalar instruction: the reduction costs nothing extra here.
    recorded = _trace.current().instructions[-1]
    inner = recorded.run

    def run(state):
        inner(state)
        values = reducer.reduce(read_2d(state, dst), axis=1, dtype=np.float32)
        write(state, result, -values if reduce_res_negate else values)

    recorded.name = "tensor_scalar_reduce"
    recorded.run = run
    recorded.writes = (*recorded.writes, result)
    recorded.poison = elementwise(recorded.writes)
    return None


@instruction(tiles=("dst", "data"), engines=(GPSIMD,), reads=("data",), writes=("dst",))
def tensor_partition_reduce(dst, op, data, name=None):
    """Reduce ``data`` across its partitions on GpSimd: ``dst`` has one partition."""
    instr = name_of("tensor_partition_reduce")
    mean = getattr(op, "name", None) == "mean"
    alu = _ops.ALU_OPS["add"] if mean else alu_operand("tensor_partition_reduce", op)
    if alu.reduce is None:
        raise refuse(instr, f"{alu!r} is not a reduction operator")
    if dst.partitions != 1 or dst.free_size != data.free_size:
        raise refuse(instr, f"dst {dst.describe()} must be (1, {data.free_size})")

    def run(state):
        x = read_2d(state, data)
        if alu.kind == _ops.BITVEC:
            values = alu.reduce(x.astype(np.int64), axis=0)
        else:
            values = alu.reduce(x, axis=0, dtype=np.float32)
            if mean:
                values = values / np.float32(data.partitions)
        write(state, dst, values.reshape(1, -1))

    def poison(masks, pstate):
        return [masks[0].any(axis=0, keepdims=True)]

    # The lanes combine partitions: cost as streaming all partitions' elements.
    cost = {"free": data.free_size, "dtype": rate_dtype(data, dst), "op": alu.name}
    return Issue((data,), (dst,), run, poison, cost=cost)


@instruction(
    tiles=("dst", "data"),
    engines=(VECTOR,),
    reads=("data",),
    writes=("dst",),
    same_layout=("data",),
)
def reciprocal(dst, data, name=None):
    """``dst = 1 / data`` on VectorE."""

    def run(state):
        with np.errstate(divide="ignore"):
            write(state, dst, np.float32(1.0) / read_2d(state, data))

    cost = {"free": data.free_size, "dtype": rate_dtype(data, dst)}
    return Issue((data,), (dst,), run, copied((dst,)), cost=cost)
