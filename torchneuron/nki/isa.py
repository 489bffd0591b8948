"""``nki.isa``: the NeuronCore instructions a kernel issues, checked and recorded.

Each function follows the public NKI ISA page of the same name (Neuron 2.33, NKI 0.7:
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.isa.html): the output
tile comes first as ``dst``, argument names and defaults as documented. A call checks its
operands against the rules the pages state (which buffers the engine reaches, tile limits,
dtypes) and raises ``NKIError`` naming the instruction, the kernel line and the limit; then
it appends the instruction to the trace. Nothing is computed until the emulator runs the
trace: each instruction carries a function that performs it on NumPy arrays with the
engine's numerics (float32 arithmetic, one rounding to the output dtype; PSUM accumulation
in float32), and a poison rule: which output elements are undefined when some of the
elements it reads were never written (emulator.execute).

Why this file is long: it is the one table of instructions, each with its checks, its
NumPy semantics, its poison rule and its cost inputs side by side so a reader sees an instruction whole.
"""

from __future__ import annotations

import functools
import math
from enum import Enum

import numpy as np

from torchneuron.nki import ops as _ops
from torchneuron.nki import trace as _trace
from torchneuron.nki.errors import kernel_location, refuse
from torchneuron.nki.tensor import IN_HBM, PSUM, SBUF, Predicate, Tile, check_bounds, narrow

# -- config enums (nki.isa.engine, reduce_cmd, dge_mode, oob_mode) --------------------------


class engine(Enum):  # noqa: N801 - NKI's spelling
    unknown = "unknown"
    tensor = _trace.TENSOR
    vector = _trace.VECTOR
    scalar = _trace.SCALAR
    gpsimd = _trace.GPSIMD
    sync = "sync"


class reduce_cmd(Enum):  # noqa: N801
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"


class dge_mode(Enum):  # noqa: N801
    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class oob_mode(Enum):  # noqa: N801
    error = "error"
    skip = "skip"


class matmul_perf_mode(Enum):  # noqa: N801
    none = "none"
    double_row = "double_row"


# Input dtypes TensorE multiplies (nc_matmul page).
MATMUL_INPUT_DTYPES = frozenset(
    ["float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32"]
)
# Buffers each engine reaches (NeuronCore-v3 architecture page: TensorE reads SBUF and writes
# PSUM; Vector and Scalar engines read and write SBUF and PSUM; GpSimd cannot access PSUM;
# no compute engine reads HBM, only DMA does, and DMA does not reach PSUM).
ENGINE_READS = {
    _trace.TENSOR: frozenset([SBUF]),
    _trace.VECTOR: frozenset([SBUF, PSUM]),
    _trace.SCALAR: frozenset([SBUF, PSUM]),
    _trace.GPSIMD: frozenset([SBUF]),
    _trace.DMA: frozenset([SBUF, *IN_HBM]),
}
ENGINE_WRITES = {
    _trace.TENSOR: frozenset([PSUM]),
    _trace.VECTOR: frozenset([SBUF, PSUM]),
    _trace.SCALAR: frozenset([SBUF, PSUM]),
    _trace.GPSIMD: frozenset([SBUF]),
    _trace.DMA: frozenset([SBUF, *IN_HBM]),
}
# nc_transpose on VectorE handles at most 32x32 (nc_transpose page).
VECTOR_TRANSPOSE_MAX = 32


# -- helpers ----------------------------------------------------------------------------------


def _name(instr: str) -> str:
    return f"nki.isa.{instr}"


def _tile(value, instr: str, role: str) -> Tile:
    if not isinstance(value, Tile):
        raise refuse(_name(instr), f"{role} must be a tile, got {type(value).__name__}")
    if value.size == 0:
        raise refuse(_name(instr), f"{role} is an empty tile {value.describe()}")
    check_bounds(value, _name(instr), role)
    return value


def _check_access(instr: str, eng: str, tile: Tile, role: str, write: bool) -> None:
    allowed = (ENGINE_WRITES if write else ENGINE_READS)[eng]
    if tile.buffer not in allowed:
        verb = "write" if write else "read"
        raise refuse(
            _name(instr),
            f"{eng} cannot {verb} {tile.buffer.upper()} ({role} {tile.describe()}); "
            f"it can {verb} {'/'.join(sorted(b.upper() for b in allowed))}",
        )


def _same_layout(instr: str, a: Tile, b: Tile, ra: str, rb: str) -> None:
    if a.partitions != b.partitions or a.free_size != b.free_size:
        raise refuse(
            _name(instr),
            f"{ra} {a.describe()} and {rb} {b.describe()} differ in partitions or elements "
            f"per partition ({a.partitions}x{a.free_size} vs {b.partitions}x{b.free_size})",
        )


def _vector_operand(instr: str, eng: str, value, data: Tile, role: str):
    """A scalar constant or a (partitions, 1) tile broadcast along the free dimension."""
    if value is None or isinstance(value, (int, float, np.number)):
        return value
    tile = _tile(value, instr, role)
    _check_access(instr, eng, tile, role, write=False)
    if tile.partitions != data.partitions or tile.free_size != 1:
        raise refuse(
            _name(instr),
            f"{role} {tile.describe()} must be a scalar or a ({data.partitions}, 1) vector",
        )
    return tile


def _pf_shape(tile: Tile) -> tuple[int, ...]:
    """The view's shape with the partition axis first (1 if the view dropped it)."""
    if tile.alloc.on_chip and isinstance(tile.index[0], int):
        return (1, *tile.shape)
    return tile.shape


def read(state: dict, tile: Tile, dtype=np.float32) -> np.ndarray:
    """The tile's values as ``dtype`` (engines compute in float32), shaped partitions first."""
    values = state[tile.alloc.id][tile.numpy_index()]
    return np.asarray(values).astype(dtype).reshape(_pf_shape(tile))


def read_2d(state: dict, tile: Tile) -> np.ndarray:
    return read(state, tile).reshape(tile.partitions, -1)


def _operand_value(state: dict, value):
    if isinstance(value, Tile):
        return read_2d(state, value)
    return np.float32(value)


def write(state: dict, tile: Tile, values: np.ndarray) -> None:
    """Round ``values`` to the tile's dtype (round to nearest even) and store them."""
    target = tile.dtype.numpy
    values = np.asarray(values)
    if not tile.dtype.is_float and values.dtype.kind == "f":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            values = np.nan_to_num(np.rint(values), nan=0.0)
        values = np.clip(values, info.min, info.max)
    elif not tile.dtype.is_float:
        info = np.iinfo(target)
        values = np.clip(values, info.min, info.max)
    out = values.astype(target).reshape(tile.shape)
    state[tile.alloc.id][tile.numpy_index()] = out


# -- poison rules (emulator.execute): which output elements are undefined, from the undefined
# bits of the read tiles, each (partitions, free) in the order of the recorded reads.


def _poison_flat(masks, pstate, writes):
    """Copies (DMA, tensor_copy, reciprocal): element i of dst from element i of each read."""
    shape = (writes[0].partitions, writes[0].free_size)
    out = np.zeros(shape, dtype=bool)
    for mask in masks:
        out |= mask.reshape(shape)
    return [out]


def _broadcast_or(masks, shape):
    out = np.zeros(shape, dtype=bool)
    for mask in masks:
        out |= np.broadcast_to(mask, shape)  # (partitions, 1) operands broadcast along free
    return out


def _poison_elementwise(masks, pstate, writes):
    """Same positions; a (partitions, 1) second output (a row reduction) takes its row."""
    shape = (writes[0].partitions, writes[0].free_size)
    out = _broadcast_or(masks, shape)
    return [out] + [out.any(axis=1, keepdims=True) for _ in writes[1:]]


def _poison(rule, writes):
    return lambda masks, pstate: rule(masks, pstate, writes)


def _record(instr, eng, reads, writes, run, poison=None, strict_reads=(), **cost) -> None:
    """``poison(masks, pstate)``: the undefined bits of each written tile (emulator.execute);
    None: any undefined input makes every output undefined. ``strict_reads``: positions of
    the recorded (tile) reads whose unwritten elements are refused outright."""
    trace = _trace.current()
    for role, tiles in (("a read operand", reads), ("a written operand", writes)):
        for tile in tiles:
            if isinstance(tile, Tile):
                check_bounds(tile, _name(instr), role)
    trace.add(
        _trace.Instruction(
            name=instr,
            engine=eng,
            reads=tuple(t for t in reads if isinstance(t, Tile)),
            writes=tuple(writes),
            run=run,
            location=kernel_location(),
            cost=cost,
        )
    )
    # Set as attributes: the Instruction record (trace.py) holds what every consumer needs.
    trace.instructions[-1].poison = poison
    trace.instructions[-1].strict_reads = strict_reads


def _rate_dtype(*tiles) -> str:
    """The dtype whose engine rate applies: 2-byte rates only when every operand is 2-byte
    (or narrower) floating point; otherwise the 4-byte rate."""
    names = [t.dtype.name for t in tiles if isinstance(t, Tile)]
    if names and all(n in ("bfloat16", "float16") or n.startswith("float8") for n in names):
        return "bfloat16"
    return "float32"


def _pick_engine(instr: str, requested, default: str, allowed: tuple[str, ...]) -> str:
    if requested is None or requested == engine.unknown:
        return default
    value = requested.value if isinstance(requested, engine) else requested
    if value not in allowed:
        raise refuse(_name(instr), f"engine {value} cannot run {instr}; use one of {allowed}")
    return value


def _alu(instr: str, op, role: str = "op") -> _ops.AluOp:
    if isinstance(op, _ops.AluOp):
        return op
    alu = getattr(op, "alu", None)
    if isinstance(alu, _ops.AluOp):
        return alu
    raise refuse(_name(instr), f"{role} {op!r} is not an ALU operator (nl.add, nl.maximum, ...)")


# -- data movement -------------------------------------------------------------------------


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
    instr = "dma_copy"
    dst = _tile(dst, instr, "dst")
    src = _tile(src, instr, "src")
    _check_access(instr, _trace.DMA, src, "src", write=False)
    _check_access(instr, _trace.DMA, dst, "dst", write=True)
    squeeze = lambda shape: tuple(n for n in shape if n != 1)
    if squeeze(dst.shape) != squeeze(src.shape):
        raise refuse(_name(instr), f"dst {dst.describe()} and src {src.describe()} differ in shape")
    rmw = None if dst_rmw_op is None else _alu(instr, dst_rmw_op, "dst_rmw_op")
    if rmw is not None and rmw.name != "add":
        raise refuse(_name(instr), f"dst_rmw_op {rmw!r} is not supported; only nl.add is")

    def run(state):
        values = state[src.alloc.id][src.numpy_index()]
        if rmw is not None:
            values = read(state, dst).reshape(-1) + np.asarray(values, np.float32).reshape(-1)
        write(state, dst, np.asarray(values).reshape(dst.shape))

    hbm = src.buffer in IN_HBM or dst.buffer in IN_HBM
    _record(
        instr,
        _trace.DMA,
        (src, dst) if rmw else (src,),
        (dst,),
        run,
        poison=_poison(_poison_flat, (dst,)),
        bytes=max(src.nbytes, dst.nbytes),
        hbm=hbm,
    )


def tensor_copy(dst, src, engine=engine.unknown, name=None):
    """Copy ``src`` to ``dst`` on chip with an engine (VectorE unless told), casting."""
    instr = "tensor_copy"
    dst = _tile(dst, instr, "dst")
    src = _tile(src, instr, "src")
    eng = _pick_engine(instr, engine, _trace.VECTOR, (_trace.VECTOR, _trace.SCALAR, _trace.GPSIMD))
    _check_access(instr, eng, src, "src", write=False)
    _check_access(instr, eng, dst, "dst", write=True)
    _same_layout(instr, dst, src, "dst", "src")

    def run(state):
        if src.dtype.is_float or dst.dtype.is_float:
            write(state, dst, read_2d(state, src))
        else:
            write(state, dst, read(state, src, np.int64).reshape(src.partitions, -1))

    _record(
        instr,
        eng,
        (src,),
        (dst,),
        run,
        poison=_poison(_poison_flat, (dst,)),
        free=src.free_size,
        dtype=_rate_dtype(src, dst),
    )


def memset(dst, value, engine=engine.unknown, name=None):
    """Fill ``dst`` with a constant (VectorE unless told)."""
    instr = "memset"
    dst = _tile(dst, instr, "dst")
    eng = _pick_engine(instr, engine, _trace.VECTOR, (_trace.VECTOR, _trace.GPSIMD))
    _check_access(instr, eng, dst, "dst", write=True)
    if not isinstance(value, (int, float, np.number)):
        raise refuse(_name(instr), f"value must be a compile-time constant, got {value!r}")

    def run(state):
        write(state, dst, np.full(dst.shape, value, dtype=np.float64))

    _record(instr, eng, (), (dst,), run, free=dst.free_size, dtype=_rate_dtype(dst))


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """``dst[p, i...] = offset + p * channel_multiplier + sum(i_k * step_k)`` on GpSimd, with
    ``pattern = [[step, num], ...]`` over the free dimensions."""
    instr = "iota"
    dst = _tile(dst, instr, "dst")
    _check_access(instr, _trace.GPSIMD, dst, "dst", write=True)
    values = _affine(instr, dst, pattern, offset, channel_multiplier)

    def run(state):
        write(state, dst, values)

    _record(instr, _trace.GPSIMD, (), (dst,), run, free=dst.free_size, dtype="float32")


def _affine(instr, dst: Tile, pattern, offset, channel_multiplier) -> np.ndarray:
    try:
        steps = [(int(step), int(num)) for step, num in pattern]
    except (TypeError, ValueError):
        raise refuse(_name(instr), f"pattern {pattern!r} is not a list of [step, num]") from None
    if math.prod(num for _, num in steps) != dst.free_size:
        raise refuse(
            _name(instr),
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


def affine_select(
    dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, name=None
):
    """``dst = on_true_tile`` where ``cmp_op(affine value, 0)``, else ``on_false_value``
    (GpSimd). The affine value is ``iota``'s."""
    instr = "affine_select"
    dst = _tile(dst, instr, "dst")
    src = _tile(on_true_tile, instr, "on_true_tile")
    for tile, role, w in ((src, "on_true_tile", False), (dst, "dst", True)):
        _check_access(instr, _trace.GPSIMD, tile, role, write=w)
    _same_layout(instr, dst, src, "dst", "on_true_tile")
    cmp = _alu(instr, cmp_op if cmp_op is not None else _ops.ALU_OPS["equal"], "cmp_op")
    affine = _affine(instr, dst, pattern, offset, channel_multiplier)
    predicate = cmp.fn(affine.astype(np.float32), np.float32(0)) != 0

    def run(state):
        write(state, dst, np.where(predicate, read_2d(state, src), np.float32(on_false_value)))

    _record(
        instr,
        _trace.GPSIMD,
        (src,),
        (dst,),
        run,
        poison=_poison(_poison_elementwise, (dst,)),
        free=dst.free_size,
        dtype=_rate_dtype(src, dst),
    )


# -- TensorE ---------------------------------------------------------------------------------


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
    instr = "nc_matmul"
    chip = _trace.current().chip
    dst = _tile(dst, instr, "dst")
    stationary = _tile(stationary, instr, "stationary")
    moving = _tile(moving, instr, "moving")
    if is_transpose:
        raise refuse(_name(instr), "is_transpose=True is not supported yet; use nc_transpose")
    for tile, role in ((stationary, "stationary"), (moving, "moving")):
        _check_access(instr, _trace.TENSOR, tile, role, write=False)
        if tile.dtype.name not in MATMUL_INPUT_DTYPES:
            raise refuse(
                _name(instr),
                f"TensorE does not multiply {tile.dtype.name} ({role} {tile.describe()}); "
                f"supported: {', '.join(sorted(MATMUL_INPUT_DTYPES))}",
            )
    _check_access(instr, _trace.TENSOR, dst, "dst", write=True)
    if dst.dtype.name != "float32":
        raise refuse(
            _name(instr), f"dst {dst.describe()} must be float32: TensorE accumulates in float32"
        )
    rows, cols = chip.tensor_engine.max_stationary
    k, m = stationary.partitions, stationary.free_size
    k2, n = moving.partitions, moving.free_size
    if k != k2:
        raise refuse(
            _name(instr), f"contraction (partition) sizes differ: stationary {k}, moving {k2}"
        )
    if k > rows or m > cols:
        raise refuse(
            _name(instr), f"stationary {k}x{m} exceeds TensorE's {rows}x{cols} stationary limit"
        )
    if n > chip.tensor_engine.max_moving_free:
        raise refuse(
            _name(instr),
            f"moving free size {n} exceeds TensorE's "
            f"{chip.tensor_engine.max_moving_free} (one PSUM bank of float32)",
        )
    if dst.partitions != m or dst.free_size != n:
        raise refuse(
            _name(instr), f"dst {dst.describe()} must be {m}x{n} (stationary free x moving free)"
        )
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

    _record(
        instr,
        _trace.TENSOR,
        (stationary, moving, dst) if add else (stationary, moving),
        (dst,),
        run,
        poison=poison,
        strict_reads=(2,) if add else (),
        columns=n,
        dtype=_wider(stationary, moving),
    )


def _wider(*tiles: Tile) -> str:
    return max((t.dtype for t in tiles), key=lambda d: d.itemsize).name


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """Swap the partition and free axes of a 2-D tile: on TensorE (SBUF -> PSUM, up to
    128x128) or VectorE (up to 32x32)."""
    instr = "nc_transpose"
    chip = _trace.current().chip
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    default = _trace.TENSOR if dst.buffer == PSUM else _trace.VECTOR
    eng = _pick_engine(instr, engine, default, (_trace.TENSOR, _trace.VECTOR))
    _check_access(instr, eng, data, "data", write=False)
    _check_access(instr, eng, dst, "dst", write=True)
    p, f = data.partitions, data.free_size
    limit = chip.tensor_engine.max_stationary[1] if eng == _trace.TENSOR else VECTOR_TRANSPOSE_MAX
    if p > limit or f > limit:
        raise refuse(_name(instr), f"data {p}x{f} exceeds {eng}'s {limit}x{limit} transpose")
    if dst.partitions != f or dst.free_size != p:
        raise refuse(_name(instr), f"dst {dst.describe()} must be {f}x{p}")

    def run(state):
        write(state, dst, read_2d(state, data).T)

    def poison(masks, pstate):
        return [masks[0].T]

    if eng == _trace.TENSOR:
        _record(instr, eng, (data,), (dst,), run, poison=poison, columns=p, dtype=data.dtype.name)
    else:
        _record(
            instr,
            eng,
            (data,),
            (dst,),
            run,
            poison=poison,
            free=f,
            dtype=_rate_dtype(data, dst),
        )


# -- ScalarE -------------------------------------------------------------------------------


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
    instr = "activation"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    if not isinstance(op, _ops.ActivationFn):
        raise refuse(_name(instr), f"op {op!r} is not an activation function (nl.exp, ...)")
    eng = _pick_engine(instr, engine, _trace.SCALAR, (_trace.SCALAR,))
    _check_access(instr, eng, data, "data", write=False)
    _check_access(instr, eng, dst, "dst", write=True)
    _same_layout(instr, dst, data, "dst", "data")
    bias = _vector_operand(instr, eng, bias, data, "bias")
    scale = _vector_operand(instr, eng, scale, data, "scale")
    if reduce_res is not None:
        reduce_res = _tile(reduce_res, instr, "reduce_res")
        _check_access(instr, eng, reduce_res, "reduce_res", write=True)
        if reduce_res.partitions != data.partitions or reduce_res.free_size != 1:
            raise refuse(
                _name(instr), f"reduce_res {reduce_res.describe()} must be ({data.partitions}, 1)"
            )
        if reduce_op is None or _alu(instr, reduce_op, "reduce_op").name != "add":
            raise refuse(
                _name(instr), "reduce_op must be nl.add (ScalarE's reduction registers only sum)"
            )
    cmd = reduce_cmd
    if reduce_res is not None and cmd == globals()["reduce_cmd"].idle:
        cmd = globals()["reduce_cmd"].reset_reduce

    def run(state):
        x = read_2d(state, data) * _operand_value(state, scale)
        if bias is not None:
            x = x + _operand_value(state, bias)
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
        out = _broadcast_or(masks, (dst.partitions, dst.free_size))
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

    reads = (data, bias, scale)
    writes = (dst,) if reduce_res is None else (dst, reduce_res)
    _record(
        instr,
        eng,
        reads,
        writes,
        run,
        poison=poison,
        free=data.free_size,
        dtype=_rate_dtype(data, dst),
        op=op.name,
    )


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


# -- VectorE ---------------------------------------------------------------------------------


def _integer_math(*tiles) -> bool:
    return all(isinstance(t, Tile) and not t.dtype.is_float for t in tiles)


def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    """``dst = data1 <op> data2`` element-wise (VectorE; GpSimd for ``nl.power``)."""
    instr = "tensor_tensor"
    dst = _tile(dst, instr, "dst")
    data1 = _tile(data1, instr, "data1")
    data2 = _tile(data2, instr, "data2")
    alu = _alu(instr, op)
    default = _trace.GPSIMD if alu.name == "power" else _trace.VECTOR
    eng = _pick_engine(instr, engine, default, (_trace.VECTOR, _trace.GPSIMD))
    for tile, role in ((data1, "data1"), (data2, "data2")):
        _check_access(instr, eng, tile, role, write=False)
        _same_layout(instr, dst, tile, "dst", role)
    _check_access(instr, eng, dst, "dst", write=True)
    if data1.buffer == PSUM and data2.buffer == PSUM:
        raise refuse(_name(instr), "data1 and data2 cannot both be in PSUM")
    integer = _integer_math(data1, data2, dst) or alu.kind == _ops.BITVEC

    def run(state):
        if integer:
            a = read(state, data1, np.int64).reshape(data1.partitions, -1)
            b = read(state, data2, np.int64).reshape(data2.partitions, -1)
            result = (
                _ops.ALU_OPS[alu.name].fn(a, b) if alu.kind == _ops.BITVEC else _int_op(alu, a, b)
            )
        else:
            result = alu.fn(read_2d(state, data1), read_2d(state, data2))
        write(state, dst, result)

    _record(
        instr,
        eng,
        (data1, data2),
        (dst,),
        run,
        poison=_poison(_poison_elementwise, (dst,)),
        free=dst.free_size,
        dtype=_rate_dtype(data1, data2, dst),
        op=alu.name,
    )


def _int_op(alu, a, b):
    table = {
        "add": np.add,
        "subtract": np.subtract,
        "multiply": np.multiply,
        "maximum": np.maximum,
        "minimum": np.minimum,
    }
    if alu.name in table:
        return table[alu.name](a, b)
    return alu.fn(a.astype(np.float32), b.astype(np.float32))


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
    instr = "tensor_scalar"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    eng = _pick_engine(instr, engine, _trace.VECTOR, (_trace.VECTOR, _trace.SCALAR, _trace.GPSIMD))
    _check_access(instr, eng, data, "data", write=False)
    _check_access(instr, eng, dst, "dst", write=True)
    _same_layout(instr, dst, data, "dst", "data")
    first = _alu(instr, op0, "op0")
    second = None if op1 is None else _alu(instr, op1, "op1")
    operand0 = _vector_operand(instr, eng, operand0, data, "operand0")
    operand1 = _vector_operand(instr, eng, operand1, data, "operand1")
    if second is not None and operand1 is None:
        raise refuse(_name(instr), "op1 is given without operand1")

    def apply(op, x, operand, reverse, state):
        value = _operand_value(state, operand)
        return op.fn(value, x) if reverse else op.fn(x, value)

    def run(state):
        x = apply(first, read_2d(state, data), operand0, reverse0, state)
        if second is not None:
            x = apply(second, x, operand1, reverse1, state)
        write(state, dst, x)

    _record(
        instr,
        eng,
        (data, operand0, operand1),
        (dst,),
        run,
        poison=_poison(_poison_elementwise, (dst,)),
        free=data.free_size,
        dtype=_rate_dtype(data, dst),
        op=first.name,
    )


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """Reduce the last free axes of ``data`` with ``op`` on VectorE (float32 math)."""
    instr = "tensor_reduce"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    alu = _alu(instr, op)
    if alu.reduce is None:
        raise refuse(_name(instr), f"{alu!r} is not a reduction operator")
    _check_access(instr, _trace.VECTOR, data, "data", write=False)
    _check_access(instr, _trace.VECTOR, dst, "dst", write=True)
    rank = len(_pf_shape(data))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if (
        not axes
        or any(not isinstance(a, int) for a in axes)
        or sorted(axes) != list(range(min(axes), rank))
        or min(axes) < 1
    ):
        raise refuse(
            _name(instr),
            f"axis {axis} must be the last free axes of a rank-{rank} "
            "tile, ending at the last one (axis 0 is the partition axis)",
        )
    if dst.partitions != data.partitions:
        raise refuse(_name(instr), f"dst {dst.describe()} must have {data.partitions} partitions")
    kept = math.prod(_pf_shape(data)[1 : min(axes)])
    if dst.free_size != kept:
        raise refuse(_name(instr), f"dst {dst.describe()} must hold {kept} elements per partition")

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

    _record(
        instr,
        _trace.VECTOR,
        (data,),
        (dst,),
        run,
        poison=poison,
        free=data.free_size,
        dtype=_rate_dtype(data),
        op=alu.name,
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
    instr = "select_reduce"
    dst = _tile(dst, instr, "dst")
    predicate = _tile(predicate, instr, "predicate")
    on_true = _tile(on_true, instr, "on_true")
    for tile, role in ((predicate, "predicate"), (on_true, "on_true")):
        _check_access(instr, _trace.VECTOR, tile, role, write=False)
        _same_layout(instr, dst, tile, "dst", role)
    _check_access(instr, _trace.VECTOR, dst, "dst", write=True)
    if predicate.buffer == PSUM and on_true.buffer == PSUM:
        raise refuse(_name(instr), "predicate and on_true cannot both be in PSUM")
    on_false = _vector_operand(instr, _trace.VECTOR, on_false, on_true, "on_false")
    if reduce_res is not None:
        reduce_res = _tile(reduce_res, instr, "reduce_res")
        _check_access(instr, _trace.VECTOR, reduce_res, "reduce_res", write=True)

    def run(state):
        pred = read_2d(state, predicate) != 0
        if reverse_pred:
            pred = ~pred
        result = np.where(pred, read_2d(state, on_true), _operand_value(state, on_false))
        write(state, dst, result)
        if reduce_res is not None:
            write(state, reduce_res, read_2d(state, dst).max(axis=1, keepdims=True))

    writes = (dst,) if reduce_res is None else (dst, reduce_res)
    _record(
        instr,
        _trace.VECTOR,
        (predicate, on_true, on_false),
        writes,
        run,
        poison=_poison(_poison_elementwise, writes),
        free=dst.free_size,
        dtype=_rate_dtype(on_true, dst),
    )


def scalar_tensor_tensor(
    dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None
):
    """``dst = (data <op0> operand0) <op1> operand1`` on VectorE: ``operand0`` a scalar or a
    (partitions, 1) vector, ``operand1`` a tile shaped like ``data``."""
    instr = "scalar_tensor_tensor"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    operand1 = _tile(operand1, instr, "operand1")
    for tile, role in ((data, "data"), (operand1, "operand1")):
        _check_access(instr, _trace.VECTOR, tile, role, write=False)
        _same_layout(instr, dst, tile, "dst", role)
    _check_access(instr, _trace.VECTOR, dst, "dst", write=True)
    if data.buffer == PSUM and operand1.buffer == PSUM:
        raise refuse(_name(instr), "data and operand1 cannot both be in PSUM")
    first, second = _alu(instr, op0, "op0"), _alu(instr, op1, "op1")
    operand0 = _vector_operand(instr, _trace.VECTOR, operand0, data, "operand0")
    if operand0 is None:
        raise refuse(_name(instr), "operand0 is required")

    def run(state):
        x, scalar = read_2d(state, data), _operand_value(state, operand0)
        x = first.fn(scalar, x) if reverse0 else first.fn(x, scalar)
        other = read_2d(state, operand1)
        write(state, dst, second.fn(other, x) if reverse1 else second.fn(x, other))

    _record(
        instr,
        _trace.VECTOR,
        (data, operand0, operand1),
        (dst,),
        run,
        poison=_poison(_poison_elementwise, (dst,)),
        free=data.free_size,
        dtype=_rate_dtype(data, operand1, dst),
        op=f"{first.name},{second.name}",
    )


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
    instr = "tensor_scalar_reduce"
    if reduce_cmd.value != "reset_reduce" or reduce_init is not None:
        raise refuse(
            _name(instr), "only reduce_cmd=reset_reduce without reduce_init is supported yet"
        )
    reducer = _alu(instr, reduce_op, "reduce_op")
    if reducer.name not in ("add", "multiply", "maximum", "minimum"):
        raise refuse(
            _name(instr),
            f"reduce_op {reducer!r} must be nl.add, nl.multiply, nl.maximum or nl.minimum",
        )
    tensor_scalar(dst, data, op0, operand0, reverse0=reverse0)
    if reduce_res is None:
        return
    dst_tile = dst
    result = _tile(reduce_res, instr, "reduce_res")
    _check_access(instr, _trace.VECTOR, result, "reduce_res", write=True)
    if result.partitions != dst_tile.partitions or result.free_size != 1:
        raise refuse(
            _name(instr), f"reduce_res {result.describe()} must be ({dst_tile.partitions}, 1)"
        )
    # Folded into the tensor_scalar instruction: the reduction costs nothing extra here.
    recorded = _trace.current().instructions[-1]
    inner = recorded.run

    def run(state):
        inner(state)
        values = reducer.reduce(read_2d(state, dst_tile), axis=1, dtype=np.float32)
        write(state, result, -values if reduce_res_negate else values)

    recorded.name = instr
    recorded.run = run
    recorded.writes = (*recorded.writes, result)
    recorded.poison = _poison(_poison_elementwise, recorded.writes)


def tensor_partition_reduce(dst, op, data, name=None):
    """Reduce ``data`` across its partitions on GpSimd: ``dst`` has one partition."""
    instr = "tensor_partition_reduce"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    _check_access(instr, _trace.GPSIMD, data, "data", write=False)
    _check_access(instr, _trace.GPSIMD, dst, "dst", write=True)
    mean = getattr(op, "name", None) == "mean"
    alu = _ops.ALU_OPS["add"] if mean else _alu(instr, op)
    if alu.reduce is None:
        raise refuse(_name(instr), f"{alu!r} is not a reduction operator")
    if dst.partitions != 1 or dst.free_size != data.free_size:
        raise refuse(_name(instr), f"dst {dst.describe()} must be (1, {data.free_size})")

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
    _record(
        instr,
        _trace.GPSIMD,
        (data,),
        (dst,),
        run,
        poison=poison,
        free=data.free_size,
        dtype=_rate_dtype(data, dst),
        op=alu.name,
    )


def reciprocal(dst, data, name=None):
    """``dst = 1 / data`` on VectorE."""
    instr = "reciprocal"
    dst = _tile(dst, instr, "dst")
    data = _tile(data, instr, "data")
    _check_access(instr, _trace.VECTOR, data, "data", write=False)
    _check_access(instr, _trace.VECTOR, dst, "dst", write=True)
    _same_layout(instr, dst, data, "dst", "data")

    def run(state):
        with np.errstate(divide="ignore"):
            write(state, dst, np.float32(1.0) / read_2d(state, data))

    _record(
        instr,
        _trace.VECTOR,
        (data,),
        (dst,),
        run,
        poison=_poison(_poison_flat, (dst,)),
        free=data.free_size,
        dtype=_rate_dtype(data, dst),
    )


# -- masks -------------------------------------------------------------------------------------

# Instructions whose operands are laid out alike (or broadcast along an axis), so that a mask
# over the grid cuts each operand the same way. nc_matmul/nc_transpose (their operands' axes
# differ) and iota/affine_select (their values depend on the position in dst) refuse one.
_MASKABLE = (
    "dma_copy tensor_copy memset activation activation_reduce tensor_tensor tensor_scalar "
    "tensor_reduce select_reduce scalar_tensor_tensor tensor_scalar_reduce "
    "tensor_partition_reduce reciprocal"
).split()
_UNMASKABLE = "nc_matmul nc_transpose iota affine_select".split()


def _with_mask(fn, maskable: bool):
    """``fn`` taking ``mask=``: a predicate on index grids (``i_p < n``); the instruction acts
    only on the box the mask keeps (each tile operand is cut to it, so masked-out elements
    are neither read nor written), and is not issued when the mask keeps nothing."""

    @functools.wraps(fn)
    def call(*args, mask=None, **kwargs):
        if mask is None:
            return fn(*args, **kwargs)
        instr = _name(fn.__name__)
        if not maskable:
            raise refuse(instr, "mask= is not supported on this instruction")
        if not isinstance(mask, Predicate):
            raise refuse(
                instr,
                f"mask must be a predicate on index grids (e.g. i_p < n), got {mask!r}",
            )
        box = mask.box(instr)
        if box is None:
            return None
        shape = mask.values.shape

        def cut(value, role):
            return narrow(value, box, shape, instr, role) if isinstance(value, Tile) else value

        args = tuple(cut(a, f"operand {i}") for i, a in enumerate(args))
        kwargs = {k: cut(v, k) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return call


for _fn_name in _MASKABLE + _UNMASKABLE:
    globals()[_fn_name] = _with_mask(globals()[_fn_name], _fn_name in _MASKABLE)
del _fn_name
