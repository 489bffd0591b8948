"""``nki.language`` (``nl``): tensors, buffers, dtypes, loops and the convenience forms.

Names follow the public NKI language pages (Neuron 2.33:
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.language.html). The
convenience forms (``nl.load``, ``nl.exp(x)``, ``x * y``, ``nl.matmul``, ``nl.sum`` ...)
allocate their result in SBUF (PSUM for ``nl.matmul``/``nl.transpose``) and issue the
``nki.isa`` instruction the real compiler would, so their cost shows in the schedule.
"""

from __future__ import annotations

import builtins

import numpy as np

from torchneuron.nki import isa as _isa
from torchneuron.nki import ops as _ops
from torchneuron.nki import trace as _trace
from torchneuron.nki.errors import refuse
from torchneuron.nki.instruction import partition_first_shape, tile_operand
from torchneuron.nki.tensor import (
    DTYPES,
    HBM,
    PSUM,
    SBUF,
    SHARED_HBM,
    IndexExpr,
    NkiDType,
    Tile,
    as_dtype,
)
from torchneuron.target.hardware import TRN2

# -- buffers ------------------------------------------------------------------------------
sbuf = SBUF
psum = PSUM
hbm = HBM
shared_hbm = SHARED_HBM
private_hbm = HBM

# -- dtypes --------------------------------------------------------------------------------
float32 = DTYPES["float32"]
bfloat16 = DTYPES["bfloat16"]
float16 = DTYPES["float16"]
tfloat32 = DTYPES["tfloat32"]
float8_e4m3 = DTYPES["float8_e4m3"]
float8_e4m3fn = DTYPES["float8_e4m3fn"]
float8_e5m2 = DTYPES["float8_e5m2"]
int8 = DTYPES["int8"]
int16 = DTYPES["int16"]
int32 = DTYPES["int32"]
uint8 = DTYPES["uint8"]
uint16 = DTYPES["uint16"]
uint32 = DTYPES["uint32"]
bool_ = DTYPES["bool_"]


class tile_size:  # noqa: N801 - NKI's spelling
    """Tile limits (nl.tile_size page), from the hardware table (same on trn2 and trn3)."""

    pmax = TRN2.sbuf_partitions
    psum_fmax = TRN2.psum_bytes_per_partition // TRN2.psum_banks // 4
    gemm_stationary_fmax = TRN2.tensor_engine.max_stationary[1]
    gemm_moving_fmax = TRN2.tensor_engine.max_moving_free
    psum_partition = TRN2.sbuf_partitions


# -- loops: Python ranges, unrolled while tracing -------------------------------------------


def _range(start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    for value in (start, stop, step):
        if not isinstance(value, (int, np.integer)):
            raise refuse("nl.affine_range", f"bound {value!r} is not a compile-time int")
    return range(int(start), int(stop), int(step))


def affine_range(start, stop=None, step=1, **kwargs):
    """Iterations without loop-carried dependencies (the emulator runs them in order; the
    schedule overlaps them wherever the tiles allow)."""
    return _range(start, stop, step)


def sequential_range(start, stop=None, step=1, **kwargs):
    return _range(start, stop, step)


def static_range(start, stop=None, step=1, **kwargs):
    return _range(start, stop, step)


# -- index grids ---------------------------------------------------------------------------


def _grid_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise refuse(what, f"bound {value!r} is not a compile-time int")
    return int(value)


def arange(start, stop=None, step=1) -> IndexExpr:
    """A 1-d index grid (``nl.arange(128)[:, None]`` on the partition axis, ``[None, :]`` on
    the free axis). Indexing with ``i + c`` / ``i * c`` (ints, loop variables) is affine; a
    grid is bounds-checked when an instruction uses the tile, after its ``mask=``."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_grid_int(v, "nl.arange") for v in (start, stop, step))
    n = len(range(start, stop, step))
    if step <= 0 or n == 0:
        raise refuse("nl.arange", f"arange({start}, {stop}, {step}) is empty or not increasing")
    return IndexExpr(n, coef=step, offset=start)


class _Grid(tuple):
    """``nl.mgrid[...]``: the grids, one per axis; also ``.p`` (axis 0) and ``.x`` ... ``.z``."""

    p = property(lambda self: self[0])
    x = property(lambda self: self[1])
    y = property(lambda self: self[2])
    z = property(lambda self: self[3])


class _MGrid:
    def __getitem__(self, key) -> _Grid:
        key = key if isinstance(key, tuple) else (key,)
        grids = []
        ident = IndexExpr(1).grid
        for axis, k in enumerate(key):
            if not isinstance(k, slice) or k.stop is None:
                raise refuse("nl.mgrid", f"nl.mgrid takes start:stop[:step] slices, got {k!r}")
            g = arange(0 if k.start is None else k.start, k.stop, 1 if k.step is None else k.step)
            grids.append(IndexExpr(g.n, axis, len(key), g.coef, g.offset, ident))
        return _Grid(grids)

    def __repr__(self) -> str:
        return "nl.mgrid"


mgrid = _MGrid()


def ds(start, size) -> slice:
    """``nl.ds(start, size)``: the slice ``start:start + size``."""
    return slice(_grid_int(start, "nl.ds"), _grid_int(start, "nl.ds") + _grid_int(size, "nl.ds"))


# -- creation --------------------------------------------------------------------------------


def ndarray(shape, dtype, buffer=sbuf, name="", **kwargs) -> Tile:
    """Declare a tensor in ``buffer`` (no instruction: its contents are undefined)."""
    trace = _trace.current()
    return trace.allocate(shape, dtype, buffer, name or None, "nl.ndarray").full()


def full(shape, fill_value, dtype, buffer=sbuf, name="", **kwargs) -> Tile:
    tile = ndarray(shape, dtype, buffer=buffer, name=name)
    if buffer not in (sbuf, psum):
        raise refuse("nl.full", f"only SBUF/PSUM tensors can be filled, not {buffer}")
    _isa.memset(tile, fill_value)
    return tile


def zeros(shape, dtype, buffer=sbuf, name="", **kwargs) -> Tile:
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, buffer=sbuf, name="", **kwargs) -> Tile:
    return full(shape, 1, dtype, buffer=buffer, name=name)


def zeros_like(a: Tile, dtype=None, buffer=None, name="", **kwargs) -> Tile:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def ndarray_like(a: Tile, dtype=None, buffer=None, name="", **kwargs) -> Tile:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


# -- data movement ---------------------------------------------------------------------------


def load(src: Tile, dtype=None, mask=None, **kwargs) -> Tile:
    """Copy an HBM tile into a new SBUF tile (one DMA; with ``mask=`` only the elements the
    mask keeps are read, and the rest of the new tile stays unwritten)."""
    if not isinstance(src, Tile):
        raise refuse("nki.isa.dma_copy", f"src must be a tile, got {type(src).__name__}")
    out = ndarray(src.shape, dtype or src.dtype, buffer=sbuf)
    _isa.dma_copy(dst=out, src=src, mask=mask)
    return out


def store(dst: Tile, value: Tile, mask=None, **kwargs) -> None:
    """Copy an SBUF tile to HBM (one DMA; with ``mask=`` only the kept elements)."""
    _isa.dma_copy(dst=dst, src=value, mask=mask)


def copy(x: Tile, dtype=None, mask=None, **kwargs) -> Tile:
    """A new SBUF tile holding ``x`` (VectorE ``tensor_copy``)."""
    x = tile_operand(x, "tensor_copy", "src") if mask is None else x
    out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
    _isa.tensor_copy(out, x, mask=mask)
    return out


# -- operators and activation functions ----------------------------------------------------

add = _ops.ALU_OPS["add"]
subtract = _ops.ALU_OPS["subtract"]
multiply = _ops.ALU_OPS["multiply"]
divide = _ops.ALU_OPS["divide"]
maximum = _ops.ALU_OPS["maximum"]
minimum = _ops.ALU_OPS["minimum"]
power = _ops.ALU_OPS["power"]
equal = _ops.ALU_OPS["equal"]
not_equal = _ops.ALU_OPS["not_equal"]
greater = _ops.ALU_OPS["greater"]
greater_equal = _ops.ALU_OPS["greater_equal"]
less = _ops.ALU_OPS["less"]
less_equal = _ops.ALU_OPS["less_equal"]
bitwise_and = _ops.ALU_OPS["bitwise_and"]
bitwise_or = _ops.ALU_OPS["bitwise_or"]
bitwise_xor = _ops.ALU_OPS["bitwise_xor"]
left_shift = _ops.ALU_OPS["left_shift"]
right_shift = _ops.ALU_OPS["right_shift"]

exp = _ops.ACTIVATIONS["exp"]
log = _ops.ACTIVATIONS["log"]
tanh = _ops.ACTIVATIONS["tanh"]
sigmoid = _ops.ACTIVATIONS["sigmoid"]
relu = _ops.ACTIVATIONS["relu"]
gelu = _ops.ACTIVATIONS["gelu"]
gelu_apprx_tanh = _ops.ACTIVATIONS["gelu_apprx_tanh"]
silu = _ops.ACTIVATIONS["silu"]
rsqrt = _ops.ACTIVATIONS["rsqrt"]
sqrt = _ops.ACTIVATIONS["sqrt"]
square = _ops.ACTIVATIONS["square"]
reciprocal = _ops.ACTIVATIONS["reciprocal"]
sin = _ops.ACTIVATIONS["sin"]
cos = _ops.ACTIVATIONS["cos"]
erf = _ops.ACTIVATIONS["erf"]
softplus = _ops.ACTIVATIONS["softplus"]
abs = _ops.ACTIVATIONS["abs"]  # noqa: A001 - NKI's name
negative = _ops.ACTIVATIONS["negative"]
sign = _ops.ACTIVATIONS["sign"]


def _result_dtype(*values) -> NkiDType:
    tiles = [v for v in values if isinstance(v, Tile)]
    floats = [t.dtype for t in tiles if t.dtype.is_float]
    if floats:
        return builtins.max(floats, key=lambda d: d.itemsize)
    if any(isinstance(v, float) for v in values):
        return float32
    return builtins.max((t.dtype for t in tiles), key=lambda d: d.itemsize)


def _is_vector(value, data: Tile) -> bool:
    return (
        isinstance(value, Tile)
        and value.free_size == 1
        and data.free_size != 1
        and (value.partitions == data.partitions)
    )


def _elementwise(op: _ops.AluOp, x, y, dtype=None, mask=None) -> Tile:
    """``op(x, y)`` into a new SBUF tile: tensor_tensor, or tensor_scalar when one side is a
    scalar or a (partitions, 1) vector."""
    if not isinstance(x, Tile) and not isinstance(y, Tile):
        raise refuse(f"nl.{op.name}", "at least one operand must be a tile")
    data, other, reverse = (x, y, False)
    if not isinstance(x, Tile) or _is_vector(x, y if isinstance(y, Tile) else x):
        data, other, reverse = (y, x, True)
    out = ndarray(data.shape, as_dtype(dtype) if dtype else _result_dtype(x, y), buffer=sbuf)
    if isinstance(other, Tile) and not _is_vector(other, data):
        first, second = (other, data) if reverse else (data, other)
        _isa.tensor_tensor(out, first, second, op, mask=mask)
    else:
        _isa.tensor_scalar(out, data, op, other, reverse0=reverse, mask=mask)
    return out


def _activation(fn: _ops.ActivationFn, x, dtype=None, mask=None) -> Tile:
    x = tile_operand(x, "activation", "data") if mask is None else x
    out = ndarray(x.shape, as_dtype(dtype) if dtype else x.dtype, buffer=sbuf)
    _isa.activation(out, fn, x, mask=mask)
    return out


def _accumulate(acc: Tile, value) -> Tile:
    """``acc += value``. A fresh ``nl.matmul`` result accumulates in PSUM: the matmul is
    retargeted to write ``acc`` with ``accumulate=True``, as NKI's compiler does; anything
    else is a VectorE add."""
    trace = _trace.current()
    pending = trace.pending_matmul
    args = pending.pop(value.alloc.id, None) if isinstance(value, Tile) else None
    fresh = args is not None and trace.instructions[-1] is args["instruction"]
    if fresh and acc.buffer == PSUM:
        trace.instructions.pop()
        _isa.nc_matmul(acc, args["stationary"], args["moving"], accumulate=True)
        trace.allocations.remove(value.alloc)
        return acc
    if isinstance(value, Tile):
        _isa.tensor_tensor(acc, acc, value, add)
    else:
        _isa.tensor_scalar(acc, acc, add, value)
    return acc


def matmul(x: Tile, y: Tile, transpose_x=False, **kwargs) -> Tile:
    """``x @ y`` (``x.T @ y`` with ``transpose_x=True``) into a new float32 PSUM tile.

    Without ``transpose_x`` the contraction axis of ``x`` is its free axis, so ``x`` is first
    transposed on TensorE and copied back to SBUF (two extra instructions, as on hardware)."""
    x = tile_operand(x, "nc_matmul", "x")
    y = tile_operand(y, "nc_matmul", "y")
    if not transpose_x:
        xt_psum = ndarray((x.free_size, x.partitions), x.dtype, buffer=psum)
        _isa.nc_transpose(xt_psum, x)
        x = copy(xt_psum, dtype=x.dtype)
    out = ndarray((x.free_size, y.free_size), float32, buffer=psum)
    _isa.nc_matmul(out, x, y)
    trace = _trace.current()
    trace.pending_matmul.clear()
    trace.pending_matmul[out.alloc.id] = {
        "instruction": trace.instructions[-1],
        "stationary": x,
        "moving": y,
    }
    return out


def transpose(x: Tile, dtype=None, **kwargs) -> Tile:
    """A new PSUM tile holding ``x`` with its partition and free axes swapped (TensorE)."""
    x = tile_operand(x, "nc_transpose", "data")
    out = ndarray((x.free_size, x.partitions), dtype or x.dtype, buffer=psum)
    _isa.nc_transpose(out, x)
    return out


class _Reduction:
    """``nl.sum``/``nl.max``/... : callable as a reduction; as an ``op`` it names ``alu``."""

    def __init__(self, name: str, alu: _ops.AluOp, scale_by_count: bool = False) -> None:
        self.name = name
        self.alu = alu
        self.scale_by_count = scale_by_count

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __call__(self, x: Tile, axis, dtype=None, keepdims=False, mask=None, **kwargs) -> Tile:
        x = tile_operand(x, "tensor_reduce", "data") if mask is None else x
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        shape = partition_first_shape(x)
        kept = [n for d, n in enumerate(shape) if d not in axes]
        if keepdims:
            kept = [1 if d in axes else n for d, n in enumerate(shape)]
        out = ndarray(tuple(kept) or (1,), as_dtype(dtype) if dtype else x.dtype, buffer=sbuf)
        _isa.tensor_reduce(out, self.alu, x, axes, keepdims=keepdims, mask=mask)
        if self.scale_by_count:
            if mask is not None:
                raise refuse("nl.mean", "mask= is not supported; use nl.sum and a multiply")
            count = int(np.prod([shape[d] for d in axes]))
            _isa.tensor_scalar(out, out, multiply, 1.0 / count)
        return out


sum = _Reduction("sum", add)  # noqa: A001 - NKI's name
prod = _Reduction("prod", multiply)
max = _Reduction("max", maximum)  # noqa: A001
min = _Reduction("min", minimum)  # noqa: A001
mean = _Reduction("mean", add, scale_by_count=True)


def where(condition: Tile, x: Tile, y, dtype=None, mask=None, **kwargs) -> Tile:
    """``x`` where ``condition`` is nonzero, else ``y`` (VectorE ``select_reduce``)."""
    x = tile_operand(x, "select_reduce", "on_true") if mask is None else x
    out = ndarray(x.shape, as_dtype(dtype) if dtype else x.dtype, buffer=sbuf)
    _isa.select_reduce(out, condition, x, y, mask=mask)
    return out


# Calling an operator on tiles and tile arithmetic issue these forms (ops.py).
_ops.CONVENIENCE_FORMS.update(
    elementwise=_elementwise, activation=_activation, accumulate=_accumulate
)
