"""Tensors of a traced kernel: memory buffers, allocations and the tiles (views) kernels index.

A kernel never holds numbers while it is traced. ``nl.ndarray`` and the kernel's arguments
create an ``Allocation`` (a named block of HBM, SBUF or PSUM with a shape and dtype); indexing
gives a ``Tile``, a strided view of one allocation that instructions read and write. The
emulator later gives each allocation a NumPy array and each on-chip one an address.

On-chip (SBUF, PSUM) allocations have the partition dimension first, at most
``chip.sbuf_partitions`` (128) long; the other dimensions are the free dimensions, laid out
row-major in each partition. Indexing follows NumPy basic indexing (integers and slices with
positive steps), except that an index out of bounds is an error instead of being clipped.
Index grids (``nl.arange``/``nl.mgrid``: ``IndexExpr``) index a dimension with an affine
range; they are bounds-checked when an instruction uses the tile (``check_bounds``), after
its ``mask=`` (a ``Predicate``) has cut the tile to the box it keeps (``narrow``).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from torchneuron.nki import ops as _ops
from torchneuron.nki.errors import NKIError, kernel_location, refuse
from torchneuron.target.dtypes import numpy_dtype

# -- buffers -------------------------------------------------------------------------------

HBM = "hbm"  # device memory, private to the kernel
SHARED_HBM = "shared_hbm"  # device memory the kernel's caller sees (kernel outputs)
SBUF = "sbuf"  # the 128-partition state buffer
PSUM = "psum"  # the 128-partition partial-sum buffer TensorE writes

ON_CHIP = frozenset([SBUF, PSUM])
IN_HBM = frozenset([HBM, SHARED_HBM])

# -- dtypes --------------------------------------------------------------------------------

# NKI's dtype names (nki.language) -> the row of the one dtype table (target/dtypes.py)
# whose NumPy/ml_dtypes dtype holds each bit-exactly. tfloat32 is stored as float32 (TensorE
# reads 19 of its bits; see docs/nki.md); bool_ as uint8, one byte per element.
_STORED_AS = {
    "float32": "float32",
    "bfloat16": "bfloat16",
    "float16": "float16",
    "tfloat32": "float32",
    "float8_e4m3": "float8_e4m3",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "bool_": "uint8",
}


@dataclass(frozen=True)
class NkiDType:
    """An ``nl`` dtype: its NKI name and the NumPy dtype the emulator stores it in."""

    name: str

    @property
    def numpy(self) -> np.dtype:
        return numpy_dtype(_STORED_AS[self.name], f"nl.{self.name}", neff=False, error=NKIError)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.name.startswith(("float", "bfloat", "tfloat"))

    @property
    def is_fp8(self) -> bool:
        return self.name.startswith("float8")

    def __repr__(self) -> str:
        return f"nl.{self.name}"


DTYPES: dict[str, NkiDType] = {name: NkiDType(name) for name in _STORED_AS}


def as_dtype(value, instruction: str = "dtype") -> NkiDType:
    """An ``NkiDType`` from an ``nl`` dtype, its name, or a NumPy/ml_dtypes dtype."""
    if isinstance(value, NkiDType):
        return value
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        np_dtype = None
    if np_dtype is not None:
        name = "bool_" if np_dtype == np.bool_ else np_dtype.name
        if name in DTYPES and name != "tfloat32":
            return DTYPES[name]
    raise refuse(instruction, f"unsupported dtype {value!r}; supported: {', '.join(DTYPES)}")


# -- allocations and tiles -----------------------------------------------------------------

_ids = itertools.count()


@dataclass(eq=False)
class Allocation:
    """One block of memory a kernel declared (or one of its arguments / outputs)."""

    buffer: str
    shape: tuple[int, ...]
    dtype: NkiDType
    name: str
    location: str  # kernel file:line that declared it
    initial: np.ndarray | None = None  # kernel inputs: their values
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def on_chip(self) -> bool:
        return self.buffer in ON_CHIP

    @functools.cached_property
    def partitions(self) -> int:
        return self.shape[0] if self.on_chip and self.shape else 1

    @property
    def bytes_per_partition(self) -> int:
        """Bytes each partition holds (on chip); the whole tensor's bytes for HBM."""
        free = self.shape[1:] if self.on_chip else self.shape
        return math.prod(free) * self.dtype.itemsize

    def full(self) -> Tile:
        return Tile(self, tuple((0, n, 1) for n in self.shape))


# An index along one allocation dimension: an int (the dimension is dropped) or a
# (start, stop, step) range with stop exclusive and step > 0.
DimIndex = int | tuple[int, int, int]


def _range_len(r: tuple[int, int, int]) -> int:
    start, stop, step = r
    return max(0, (stop - start + step - 1) // step)


@dataclass(frozen=True, eq=False)
class Tile:
    """A strided view of one allocation: what instructions read and write."""

    alloc: Allocation
    index: tuple[DimIndex, ...]  # one entry per allocation dimension

    # -- shape ------------------------------------------------------------------------
    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(_range_len(i) for i in self.index if not isinstance(i, int))

    @property
    def dtype(self) -> NkiDType:
        return self.alloc.dtype

    @property
    def buffer(self) -> str:
        return self.alloc.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def partitions(self) -> int:
        """Partitions the view spans (on chip: the allocation's first dimension)."""
        if not self.alloc.on_chip:
            return 1
        first = self.index[0]
        return 1 if isinstance(first, int) else _range_len(first)

    @functools.cached_property
    def free_size(self) -> int:
        """Elements per partition."""
        return math.prod(self.shape) // max(1, self.partitions) if self.shape else 1

    @functools.cached_property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def describe(self) -> str:
        dims = "x".join(str(n) for n in self.shape) or "scalar"
        return f"{self.alloc.buffer}:{self.alloc.name}[{dims}] {self.dtype.name}"

    # -- indexing ---------------------------------------------------------------------
    def __getitem__(self, key) -> Tile:
        if not isinstance(key, tuple):
            key = (key,)
        view_dims = [d for d, i in enumerate(self.index) if not isinstance(i, int)]
        if Ellipsis in key:
            at = key.index(Ellipsis)
            fill = len(view_dims) - (len(key) - 1)
            key = key[:at] + (slice(None),) * fill + key[at + 1 :]
        if len(key) > len(view_dims):
            raise refuse(
                "tile indexing",
                f"{len(key)} indices for a {len(view_dims)}-d tile {self.describe()}",
            )
        grids = [k for k in key if isinstance(k, IndexExpr)]
        axes = [g.axis for g in grids]
        if len(grids) > 1 and (axes != sorted(set(axes)) or len({g.ndim for g in grids}) > 1):
            raise refuse(
                "tile indexing",
                f"index grids on axes {axes} of {self.describe()}: each grid must lie on its "
                "own axis, in the order of the tensor's dimensions (transposed access is not "
                "supported)",
            )
        new = list(self.index)
        for alloc_dim, k in zip(view_dims, key):
            new[alloc_dim] = _compose(self.index[alloc_dim], k, self, alloc_dim)
        return Tile(self.alloc, tuple(new))

    def numpy_index(self) -> tuple:
        return tuple(i if isinstance(i, int) else slice(*i) for i in self.index)

    @functools.cached_property
    def bounds(self) -> tuple[tuple[int, int], tuple[int, int], bool]:
        """(partition range, flat free-element range, exact): the view's bounding box in its
        allocation (ranges half-open). ``exact`` says the view covers every element of it."""
        alloc = self.alloc
        los = [i if isinstance(i, int) else i[0] for i in self.index]
        his = [
            i if isinstance(i, int) else i[0] + (max(1, _range_len(i)) - 1) * i[2]
            for i in self.index
        ]
        dims = list(range(len(alloc.shape)))
        if alloc.on_chip:
            part = (los[0], his[0] + 1)
            dims = dims[1:]
        else:
            part = (0, 1)
        strides = []
        acc = 1
        for d in reversed(dims):
            strides.append((d, acc))
            acc *= alloc.shape[d]
        lo = sum(los[d] * s for d, s in strides)
        hi = sum(his[d] * s for d, s in strides) + 1
        free_elements = math.prod(
            1 if isinstance(self.index[d], int) else _range_len(self.index[d]) for d in dims
        )
        steps_ok = all(isinstance(self.index[d], int) or self.index[d][2] == 1 for d in dims)
        exact = steps_ok and free_elements == hi - lo
        if self.size == 0:
            return (0, 0), (0, 0), True
        return part, (lo, hi), exact

    # -- arithmetic sugar: the nl element-wise forms (ops.CONVENIENCE_FORMS) -------------
    def __iadd__(self, other):
        return _ops.CONVENIENCE_FORMS["accumulate"](self, other)

    def __add__(self, other):
        return _ops.ALU_OPS["add"](self, other)

    def __radd__(self, other):
        return _ops.ALU_OPS["add"](other, self)

    def __sub__(self, other):
        return _ops.ALU_OPS["subtract"](self, other)

    def __rsub__(self, other):
        return _ops.ALU_OPS["subtract"](other, self)

    def __mul__(self, other):
        return _ops.ALU_OPS["multiply"](self, other)

    def __rmul__(self, other):
        return _ops.ALU_OPS["multiply"](other, self)

    def __truediv__(self, other):
        return _ops.ALU_OPS["divide"](self, other)

    def __bool__(self):
        raise refuse(
            "tile truth value",
            "a tile has no value while the kernel is traced; use nl.where or nisa.affine_select",
        )

    def __iter__(self):
        raise refuse("tile iteration", "tiles cannot be iterated; index them with slices")


def _compose(current: DimIndex, key, tile: Tile, alloc_dim: int) -> DimIndex:
    start, stop, step = current  # type: ignore[misc]
    length = _range_len(current)  # type: ignore[arg-type]
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        k = int(key)
        if not 0 <= k < length:
            raise refuse(
                "tile indexing",
                f"out-of-bounds access: index {k} of dimension {alloc_dim} of length {length} "
                f"({tile.describe()})",
            )
        return start + k * step
    if isinstance(key, slice):
        for part in (key.start, key.stop, key.step):
            if part is not None and not isinstance(part, (int, np.integer)):
                raise refuse("tile indexing", f"slice bound {part!r} is not a Python int")
        k_step = 1 if key.step is None else int(key.step)
        if k_step <= 0:
            raise refuse("tile indexing", f"slice step {k_step} is not positive")
        k_start = 0 if key.start is None else int(key.start)
        k_stop = length if key.stop is None else int(key.stop)
        if k_start < 0 or k_stop > length or k_start > k_stop:
            raise refuse(
                "tile indexing",
                f"out-of-bounds access: slice {k_start}:{k_stop} of dimension {alloc_dim} of "
                f"length {length} ({tile.describe()})",
            )
        return (start + k_start * step, start + k_stop * step, step * k_step)
    if isinstance(key, IndexExpr):
        if key.coef <= 0:
            raise refuse("tile indexing", f"index grid step {key.coef} is not positive")
        # Not checked against the allocation here: a mask may cut the grid first
        # (check_bounds, when an instruction uses the tile).
        first = start + key.offset * step
        return (first, first + key.n * key.coef * step, key.coef * step)
    raise refuse(
        "tile indexing", f"unsupported index {key!r}; use ints, slices and nl.arange grids"
    )


def new_allocation(shape, dtype, buffer: str, name: str, instruction: str, chip) -> Allocation:
    """Declare an allocation, checking what the buffer allows (partition dim, dtype)."""
    location = kernel_location()
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise refuse(instruction, f"shape {shape!r} is not a tuple of ints", location) from None
    if any(n <= 0 for n in shape) or not shape:
        raise refuse(instruction, f"shape {shape} must be non-empty and positive", location)
    dtype = as_dtype(dtype, instruction)
    if buffer not in (HBM, SHARED_HBM, SBUF, PSUM):
        raise refuse(instruction, f"unknown buffer {buffer!r}", location)
    if buffer in ON_CHIP and shape[0] > chip.sbuf_partitions:
        raise refuse(
            instruction,
            f"partition dimension {shape[0]} exceeds the {chip.sbuf_partitions} partitions of "
            f"{buffer.upper()} (shape {shape})",
            location,
        )
    bank_bytes = chip.psum_bytes_per_partition // chip.psum_banks
    per_partition = math.prod(shape[1:]) * dtype.itemsize
    if buffer == PSUM and per_partition > bank_bytes:
        raise refuse(
            instruction,
            f"PSUM bank overflow: shape {shape} {dtype.name} needs {per_partition} bytes per "
            f"partition, a PSUM bank holds {bank_bytes} ({chip.psum_banks} banks of "
            f"{chip.psum_bytes_per_partition} bytes per partition)",
            location,
        )
    return Allocation(buffer, shape, dtype, name, location)


# -- index grids (nl.arange, nl.mgrid) and masks ---------------------------------------------

_grid_ids = itertools.count()


@dataclass(frozen=True, eq=False)
class IndexExpr:
    """``offset + coef * j`` for ``j`` in ``range(n)`` along axis ``axis`` of an
    ``ndim``-dimensional index grid (``nl.arange(n)[:, None]`` is axis 0 of 2, ...).

    Indexing a tensor with one selects ``n`` elements ``coef`` apart from ``offset``; a
    comparison with an int (``i_p < n``) is a ``Predicate`` for ``mask=``."""

    n: int
    axis: int = 0
    ndim: int = 1
    coef: int = 1
    offset: int = 0
    grid: int = field(default_factory=lambda: next(_grid_ids))

    def _with(self, **changes) -> IndexExpr:
        values = {f: getattr(self, f) for f in ("n", "axis", "ndim", "coef", "offset", "grid")}
        values.update(changes)
        return IndexExpr(**values)

    @staticmethod
    def _int(value, what: str) -> int:
        if isinstance(value, IndexExpr):
            raise refuse(
                "index grid",
                f"{what} of two index grids (a flattened access pattern) is not supported; "
                "index each dimension with its own grid",
            )
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise refuse("index grid", f"{what} with {value!r}: only Python ints are affine")
        return int(value)

    def __add__(self, other) -> IndexExpr:
        return self._with(offset=self.offset + self._int(other, "sum"))

    __radd__ = __add__

    def __sub__(self, other) -> IndexExpr:
        return self._with(offset=self.offset - self._int(other, "difference"))

    def __mul__(self, other) -> IndexExpr:
        k = self._int(other, "product")
        return self._with(coef=self.coef * k, offset=self.offset * k)

    __rmul__ = __mul__

    def __getitem__(self, key) -> IndexExpr:
        """``[:, None]`` / ``[None, :]``: place a 1-d grid on one axis of a larger grid."""
        if not isinstance(key, tuple):
            key = (key,)
        full = [i for i, k in enumerate(key) if k == slice(None)]
        ok = all(k is None or k == slice(None) for k in key)
        if self.ndim != 1 or len(full) != 1 or not ok:
            raise refuse(
                "index grid", f"unsupported grid indexing {key!r}; use [:, None] or [None, :]"
            )
        return self._with(axis=full[0], ndim=len(key))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.n if d == self.axis else 1 for d in range(self.ndim))

    def values(self) -> np.ndarray:
        return (self.offset + self.coef * np.arange(self.n)).reshape(self.shape)

    def _compare(self, other, op, name) -> Predicate:
        if isinstance(other, IndexExpr):
            return Predicate(op(self.values(), other.values()))
        return Predicate(op(self.values(), self._int(other, f"comparison {name}")))

    def __lt__(self, other):
        return self._compare(other, np.less, "<")

    def __le__(self, other):
        return self._compare(other, np.less_equal, "<=")

    def __gt__(self, other):
        return self._compare(other, np.greater, ">")

    def __ge__(self, other):
        return self._compare(other, np.greater_equal, ">=")

    def __bool__(self):
        raise refuse("index grid", "an index grid has no truth value; pass it as mask=")


@dataclass(frozen=True, eq=False)
class Predicate:
    """A compile-time boolean over an index grid (``mask=``): True where an instruction acts."""

    values: np.ndarray

    def _other(self, other) -> np.ndarray:
        if not isinstance(other, Predicate):
            raise refuse("mask", f"cannot combine a mask with {other!r}")
        return other.values

    def __and__(self, other):
        return Predicate(np.logical_and(self.values, self._other(other)))

    def __or__(self, other):
        return Predicate(np.logical_or(self.values, self._other(other)))

    def __invert__(self):
        return Predicate(np.logical_not(self.values))

    def __bool__(self):
        raise refuse("mask", "a mask has no truth value; pass it as mask= (use & and |)")

    def box(self, instruction: str) -> tuple[tuple[int, int] | None, ...] | None:
        """Per grid axis, the half-open range the mask keeps (None: the whole axis), or None
        when it keeps nothing. A mask that is not a box (e.g. triangular) is refused."""
        m = np.asarray(self.values, dtype=bool)
        if not m.any():
            return None
        ranges: list[tuple[int, int] | None] = []
        projections = []
        for axis in range(m.ndim):
            others = tuple(d for d in range(m.ndim) if d != axis)
            keep = m.any(axis=others) if others else m
            where = np.flatnonzero(keep)
            lo, hi = int(where[0]), int(where[-1]) + 1
            if hi - lo != len(where):
                raise refuse(
                    instruction, "mask keeps non-contiguous indices; only box masks are supported"
                )
            ranges.append(None if (lo, hi) == (0, m.shape[axis]) else (lo, hi))
            projections.append(keep.reshape([-1 if d == axis else 1 for d in range(m.ndim)]))
        full = functools.reduce(np.logical_and, projections) if projections else m
        if not np.array_equal(np.broadcast_to(full, m.shape), m):
            raise refuse(
                instruction,
                "mask is not a box (e.g. triangular); only masks that keep a range per axis "
                "are supported (use nisa.affine_select for others)",
            )
        return tuple(ranges) if m.ndim else ()


def narrow(tile: Tile, box, mask_shape, instruction: str, role: str) -> Tile:
    """``tile`` cut to the ``box`` of a mask over its view axes (partition axis first)."""
    key = []
    for axis, size in enumerate(tile.shape):
        keep = box[axis] if axis < len(box) else None
        if keep is None or size == 1:
            key.append(slice(None))
        elif size == mask_shape[axis]:
            key.append(slice(*keep))
        else:
            raise refuse(
                instruction,
                f"mask over a grid of shape {tuple(mask_shape)} does not fit {role} "
                f"{tile.describe()} (axis {axis})",
            )
    return tile[tuple(key)]


def check_bounds(tile: Tile, instruction: str, role: str) -> None:
    """Refuse a view reaching outside its allocation (index grids are checked here, when an
    instruction uses them, so that a mask can cut a partial last tile first)."""
    for dim, (index, length) in enumerate(zip(tile.index, tile.alloc.shape)):
        if isinstance(index, int):
            lo = hi = index
        else:
            n = _range_len(index)
            if n == 0:
                continue
            lo, hi = index[0], index[0] + (n - 1) * index[2]
        if lo < 0 or hi >= length:
            raise refuse(
                instruction,
                f"out-of-bounds access: {role} reaches indices {lo}..{hi} of dimension {dim} "
                f"of length {length} ({tile.alloc.buffer}:{tile.alloc.name}"
                f"{list(tile.alloc.shape)})",
            )
