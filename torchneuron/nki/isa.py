"""``nki.isa``: the NeuronCore instructions a kernel issues, checked and recorded.

Each function follows the public NKI ISA page of the same name (Neuron 2.33, NKI 0.7:
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.isa.html): the output
tile comes first as ``dst``, argument names and defaults as documented. Each opens with its
operand declaration (``@instruction``, instruction.py: which buffers the engine reaches,
layouts, ``mask=``), whose prelude raises ``NKIError`` naming the instruction, the kernel
line and the limit; the body adds the limits the page states for that instruction alone
and returns its semantics, which the prelude appends to the trace. Nothing is computed until
the emulator runs the trace: each instruction carries a function that performs it on NumPy
arrays with the engine's numerics (float32 arithmetic, one rounding to the output dtype;
PSUM accumulation in float32), and a poison rule: which output elements are undefined when
some of the elements it reads were never written (emulator.execute).

This file holds data movement, TensorE and ScalarE; the VectorE and GpSimd arithmetic
(``tensor_tensor``, ``tensor_scalar``, the reductions, ``select_reduce`` ...) is in
isa_vector.py and re-exported here, so ``nki.isa`` is the whole instruction set.
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
    broadcast_or,
    copied,
    dge_mode,
    elementwise,
    engine,
    instruction,
    matmul_perf_mode,
    name_of,
    oob_mode,
    operand_value,
    rate_dtype,
    read,
    read_2d,
    reduce_cmd,
    write,
)
from torchneuron.nki.isa_vector import (
    reciprocal,
    scalar_tensor_tensor,
    select_reduce,
    tensor_partition_reduce,
    tensor_reduce,
    tensor_scalar,
    tensor_scalar_reduce,
    tensor_tensor,
)
from torchneuron.nki.tensor import IN_HBM, PSUM

__all__ = [
    "activation",
    "activation_reduce",
    "affine_select",
    "dge_mode",
    "dma_copy",
    "engine",
    "iota",
    "matmul_perf_mode",
    "memset",
    "nc_matmul",
    "nc_transpose",
    "oob_mode",
    "reciprocal",
    "reduce_cmd",
    "scalar_tensor_tensor",
    "select_reduce",
    "tensor_copy",
    "tensor_partition_reduce",
    "tensor_reduce",
    "tensor_scalar",
    "tensor_scalar_reduce",
    "tensor_tensor",
]

TENSOR, VECTOR, SCALAR, GPSIMD, DMA = (
    _trace.TENSOR,
    _trace.VECTOR,
    _trace.SCALAR,
    _trace.GPSIMD,
    _trace.DMA,
)

# Input dtypes TensorE multiplies (nc_matmul page).
MATMUL_INPUT_DTYPES = frozenset(
    ["float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32"]
)
# nc_transpose on VectorE handles at most 32x32 (nc_transpose page).
VECTOR_TRANSPOSE_MAX = 32


# -- data movement -------------------------------------------------------------------------


@instruction(
    tiles=("dst", "src"), engines=(DMA,), engine_argument=False, reads=("src",), writes=("dst",)
)
def dma_copy(
    dst,
    src,
    dst_rmw_op=None,
    oob_mode=oob_mode.error,
    dge_mode=dge_mode.unknown,
    engine=engine.unknown,
    name=None,
):
    """Copy ``src`` to ``dst`` (HBM or SBUF) on a DMA queue, casting to ``dst``'s dtype."""
    squeeze = lambda shape: tuple(n for n in shape if n != 1)
    if squeeze(dst.shape) != squeeze(src.shape):
        raise refuse(
            name_of("dma_copy"), f"dst {dst.describe()} and src {src.describe()} differ in shape"
        )
    rmw = None if dst_rmw_op is None else alu_operand("dma_copy", dst_rmw_op, "dst_rmw_op")
    if rmw is not None and rmw.name != "add":
        raise refuse(name_of("dma_copy"), f"dst_rmw_op {rmw!r} is not supported; only nl.add is")

    def run(state):
        values = state[src.alloc.id][src.numpy_index()]
        if rmw is not None:
            values = read(state, dst).reshape(-1) + np.asarray(values, np.float32).reshape(-1)
        write(state, dst, np.asarray(values).reshape(dst.shape))

    hbm = src.buffer in IN_HBM or dst.buffer in IN_HBM
    cost = {"bytes": max(src.nbytes, dst.nbytes), "hbm": hbm}
    return Issue((src, dst) if rmw else (src,), (dst,), run, copied((dst,)), cost=cost)


@instruction(
    tiles=("dst", "src"),
    engines=(VECTOR, SCALAR, GPSIMD),
    reads=("src",),
    writes=("dst",),
    same_layout=("src",),
)
def tensor_copy(dst, src, engine=engine.unknown, name=None):
    """Copy ``src`` to ``dst`` on chip with an engine (VectorE unless told), casting."""

    def run(state):
        if src.dtype.is_float or dst.dtype.is_float:
            write(state, dst, read_2d(state, src))
        else:
            write(state, dst, read(state, src, np.int64).reshape(src.partitions, -1))

    cost = {"free": src.free_size, "dtype": rate_dtype(src, dst)}
    return Issue((src,), (dst,), run, copied((dst,)), cost=cost)


@instruction(tiles=("dst",), engines=(VECTOR, GPSIMD), writes=("dst",))
def memset(dst, value, engine=engine.unknown, name=None):
    """Fill ``dst`` with a constant (VectorE unless told)."""
    if not isinstance(value, (int, float, np.number)):
        raise refuse(name_of("memset"), f"value must be a compile-time constant, got {value!r}")

    def run(state):
        write(state, dst, np.full(dst.shape, value, dtype=np.float64))

    return Issue((), (dst,), run, cost={"free": dst.free_size, "dtype": rate_dtype(dst)})


def affine_pattern(instr: str, dst, pattern, offset, channel_multiplier) -> np.ndarray:
    """iota's values for ``dst``: (partitions, free), ``pattern`` over the free axes."""
    try:
        steps = [(int(step), int(num)) for step, num in pattern]
    except (TypeError, ValueError):
        raise refuse(name_of(instr), f"pattern {pattern!r} is not a list of [step, num]") from None
    if math.prod(num for _, num in steps) != dst.free_size:
        raise refuse(
            name_of(instr),
            f"pattern {pattern} covers {math.prod(n for _, n in steps)} elements per partition, "
            f"dst {dst.describe()} has {dst.free_size}",
        )
    value = np.full((dst.partitions, *[n for _, n in steps]), float(offset), dtype=np.float64)
    value += (np.arange(dst.partitions) * channel_multiplier).reshape(-1, *[1] * len(steps))
    for k, (step, num) in enumerate(steps):
        shape = [1] * (len(steps) + 1)
        shape[k + 1] = num
        value += (np.arange(num) * step).reshape(shape)
    return value.reshape(dst.partitions, -1)


# Their values depend on the position in dst, so a mask cannot cut them.
@instruction(tiles=("dst",), engines=(GPSIMD,), writes=("dst",), maskable=False)
def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """``dst[p, i...] = offset + p * channel_multiplier + sum(i_k * step_k)`` on GpSimd, with
    ``pattern = [[step, num], ...]`` over the free dimensions."""
    values = affine_pattern("iota", dst, pattern, offset, channel_multiplier)

    def run(state):
        write(state, dst, values)

    return Issue((), (dst,), run, cost={"free": dst.free_size, "dtype": "float32"})


@instruction(
    tiles=("dst", "on_true_tile"),
    engines=(GPSIMD,),
    reads=("on_true_tile",),
    writes=("dst",),
    same_layout=("on_true_tile",),
    maskable=False,
)
def affine_select(
    dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, name=None
):
    """``dst = on_true_tile`` where ``cmp_op(affine value, 0)``, else ``on_false_value``
    (GpSimd). The affine value is ``iota``'s."""
    src = on_true_tile
    cmp_op = _ops.ALU_OPS["equal"] if cmp_op is None else cmp_op
    cmp = alu_operand("affine_select", cmp_op, "cmp_op")
    affine = affine_pattern("affine_select", dst, pattern, offset, channel_multiplier)
    predicate = cmp.fn(affine.astype(np.float32), np.float32(0)) != 0

    def run(state):
        write(state, dst, np.where(predicate, read_2d(state, src), np.float32(on_false_value)))

    cost = {"free": dst.free_size, "dtype": rate_dtype(src, dst)}
    return Issue((src,), (dst,), run, elementwise((dst,)), cost=cost)


# -- TensorE (its operands' axes differ, so a mask cannot cut them alike) --------------------


@instruction(
    tiles=("dst", "stationary", "moving"),
    engines=(TENSOR,),
    reads=("stationary", "moving"),
    writes=("dst",),
    maskable=False,
)
def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=None,
    name=None,
):
    """``dst (PSUM, float32) = stationary.T @ moving`` on TensorE; ``accumulate=True`` adds
    to what ``dst`` holds (PSUM accumulation in float32)."""
    instr = name_of("nc_matmul")
    chip = _trace.current().chip
    if is_transpose:
        raise refuse(instr, "is_transpose=True is not supported yet; use nc_transpose")
    for tile, role in ((stationary, "stationary"), (moving, "moving")):
        if tile.dtype.name not in MATMUL_INPUT_DTYPES:
            raise refuse(
                instr,
                f"TensorE does not multiply {tile.dtype.name} ({role} {tile.describe()}); "
                f"supported: {', '.join(sorted(MATMUL_INPUT_DTYPES))}",
            )
    if dst.dtype.name != "float32":
        raise refuse(instr, f"dst {dst.describe()} must be float32: TensorE accumulates in float32")
    rows, cols = chip.tensor_engine.max_stationary
    k, m = stationary.partitions, stationary.free_size
    k2, n = moving.partitions, moving.free_size
    if k != k2:
        raise refuse(instr, f"contraction (partition) sizes differ: stationary {k}, moving {k2}")
    if k > rows or m > cols:
        raise refuse(instr, f"stationary {k}x{m} exceeds TensorE's {rows}x{cols} stationary limit")
    if n > chip.tensor_engine.max_moving_free:
        raise refuse(
            instr,
            f"moving free size {n} exceeds TensorE's "
            f"{chip.tensor_engine.max_moving_free} (one PSUM bank of float32)",
        )
    if dst.partitions != m or dst.free_size != n:
        raise refuse(instr, f"dst {dst.describe()} must be {m}x{n} (stationary free x moving free)")
    add = bool(accumulate)

    def poison(masks, pstate):
        # dst[i, j] = sum_k stationary[k, i] * moving[k, j]
        out = masks[0].any(axis=0)[:, None] | masks[1].any(axis=0)[None, :]
        if add:
            out = out | masks[2]
        return [out]

    def run(state):
        product = read_2d(state, stationary).T @ read_2d(state, moving)
        if add:
            product = read_2d(state, dst) + product
        write(state, dst, product)

    wider = max((stationary.dtype, moving.dtype), key=lambda d: d.itemsize).name
    return Issue(
        (stationary, moving, dst) if add else (stationary, moving),
        (dst,),
        run,
        poison,
        strict_reads=(2,) if add else (),
        cost={"columns": n, "dtype": wider},
    )


@instruction(
    tiles=("dst", "data"),
    engines=(TENSOR, VECTOR),
    default_engine=lambda operands: TENSOR if operands["dst"].buffer == PSUM else VECTOR,
    reads=("data",),
    writes=("dst",),
    maskable=False,
)
def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """Swap the partition and free axes of a 2-D tile: on TensorE (SBUF -> PSUM, up to
    128x128) or VectorE (up to 32x32)."""
    chip = _trace.current().chip
    p, f = data.partitions, data.free_size
    limit = chip.tensor_engine.max_stationary[1] if engine == TENSOR else VECTOR_TRANSPOSE_MAX
    if p > limit or f > limit:
        raise refuse(
            name_of("nc_transpose"), f"data {p}x{f} exceeds {engine}'s {limit}x{limit} transpose"
        )
    if dst.partitions != f or dst.free_size != p:
        raise refuse(name_of("nc_transpose"), f"dst {dst.describe()} must be {f}x{p}")

    def run(state):
        write(state, dst, read_2d(state, data).T)

    def poison(masks, pstate):
        return [masks[0].T]

    if engine == TENSOR:
        cost = {"columns": p, "dtype": data.dtype.name}
    else:
        cost = {"free": f, "dtype": rate_dtype(data, dst)}
    return Issue((data,), (dst,), run, poison, cost=cost)


# -- ScalarE -------------------------------------------------------------------------------


@instruction(
    tiles=("dst", "data", "reduce_res"),
    engines=(SCALAR,),
    reads=("data",),
    writes=("dst", "reduce_res"),
    same_layout=("data",),
    vectors=(("bias", "data"), ("scale", "data")),
)
def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    engine=engine.scalar,
    name=None,
):
    """``dst = op(data * scale + bias)`` on ScalarE, optionally summing the result along the
    free axis into ``reduce_res`` (one float32 per partition)."""
    instr = name_of("activation")
    if not isinstance(op, _ops.ActivationFn):
        raise refuse(instr, f"op {op!r} is not an activation function (nl.exp, ...)")
    if reduce_res is not None:
        if reduce_res.partitions != data.partitions or reduce_res.free_size != 1:
            raise refuse(
                instr, f"reduce_res {reduce_res.describe()} must be ({data.partitions}, 1)"
            )
        if reduce_op is None or alu_operand("activation", reduce_op, "reduce_op").name != "add":
            raise refuse(instr, "reduce_op must be nl.add (ScalarE's reduction registers only sum)")
    cmd = reduce_cmd
    if reduce_res is not None and cmd == type(cmd).idle:
        cmd = type(cmd).reset_reduce

    def run(state):
        x = read_2d(state, data) * operand_value(state, scale)
        if bias is not None:
            x = x + operand_value(state, bias)
        y = op.fn(x)
        write(state, dst, y)
        if reduce_res is not None:
            # The engine sums the rounded output it wrote, in float32.
            written = read_2d(state, dst)
            regs = state.setdefault("scalar_reduce_regs", np.zeros(128, np.float32))
            rows = written.shape[0]
            if cmd.value in ("reset", "reset_reduce"):
                regs[:] = 0
            if cmd.value in ("reduce", "reset_reduce"):
                regs[:rows] += written.sum(axis=1, dtype=np.float32)
            write(state, reduce_res, regs[:rows].reshape(rows, 1))

    def poison(masks, pstate):
        out = broadcast_or(masks, (dst.partitions, dst.free_size))
        if reduce_res is None:
            return [out]
        # The reduction registers carry undefined bits across instructions, as their sums.
        regs = pstate.setdefault("scalar_reduce_regs", np.zeros(128, dtype=bool))
        rows = out.shape[0]
        if cmd.value in ("reset", "reset_reduce"):
            regs[:] = False
        if cmd.value in ("reduce", "reset_reduce"):
            regs[:rows] |= out.any(axis=1)
        return [out, regs[:rows].reshape(rows, 1).copy()]

    writes = (dst,) if reduce_res is None else (dst, reduce_res)
    cost = {"free": data.free_size, "dtype": rate_dtype(data, dst), "op": op.name}
    return Issue((data, bias, scale), writes, run, poison, cost=cost)


@instruction()
def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """``activation`` with ``reduce_cmd=reset_reduce``."""
    activation(
        dst,
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        reduce_cmd=reduce_cmd.reset_reduce,
    )
