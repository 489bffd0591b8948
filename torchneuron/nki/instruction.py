"""How an ``nki.isa`` instruction declares its operands, and the prelude that checks them.

Each instruction (isa.py, isa_vector.py) opens with one declaration, ``@instruction(...)``:
which arguments are tiles, which engines may run it, which tiles the engine reads and
writes, which must be laid out like ``dst``, which two may not both sit in PSUM, which may
be a scalar or a (partitions, 1) vector, and whether it takes ``mask=``. The prelude reads
that declaration and, in this order, cuts the tile operands to the box of ``mask=``, checks
each tile (a non-empty tile inside its allocation), resolves the engine, checks that the
engine reaches every buffer it reads and writes, the layouts, the PSUM pair and the vector
operands, each refusal an ``NKIError`` naming the instruction, the kernel line and the
rule. The instruction's body then sees checked operands (``engine`` is the engine's name)
and states only its semantics: it returns an ``Issue`` (a function that performs it on the
emulator's NumPy state, its poison rule, its cost inputs), which the prelude records.

Also here: the config enums (``nki.isa.engine`` ...), the buffers each engine reaches, the
NumPy state access every body uses (``read``, ``write``) and the shared poison rules.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
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


# -- operand checks ---------------------------------------------------------------------------


def name_of(instr: str) -> str:
    return f"nki.isa.{instr}"


def tile_operand(value, instr: str, role: str) -> Tile:
    """``value`` as a tile operand: a non-empty tile inside its allocation."""
    if not isinstance(value, Tile):
        raise refuse(name_of(instr), f"{role} must be a tile, got {type(value).__name__}")
    if value.size == 0:
        raise refuse(name_of(instr), f"{role} is an empty tile {value.describe()}")
    check_bounds(value, name_of(instr), role)
    return value


def check_access(instr: str, eng: str, tile: Tile, role: str, write: bool) -> None:
    allowed = (ENGINE_WRITES if write else ENGINE_READS)[eng]
    if tile.buffer not in allowed:
        verb = "write" if write else "read"
        raise refuse(
            name_of(instr),
            f"{eng} cannot {verb} {tile.buffer.upper()} ({role} {tile.describe()}); "
            f"it can {verb} {'/'.join(sorted(b.upper() for b in allowed))}",
        )


def _same_layout(instr: str, a: Tile, b: Tile, ra: str, rb: str) -> None:
    if a.partitions != b.partitions or a.free_size != b.free_size:
        raise refuse(
            name_of(instr),
            f"{ra} {a.describe()} and {rb} {b.describe()} differ in partitions or elements "
            f"per partition ({a.partitions}x{a.free_size} vs {b.partitions}x{b.free_size})",
        )


def vector_operand(instr: str, eng: str, value, data: Tile, role: str):
    """A scalar constant or a (partitions, 1) tile broadcast along the free dimension."""
    if value is None or isinstance(value, (int, float, np.number)):
        return value
    tile = tile_operand(value, instr, role)
    check_access(instr, eng, tile, role, write=False)
    if tile.partitions != data.partitions or tile.free_size != 1:
        raise refuse(
            name_of(instr),
            f"{role} {tile.describe()} must be a scalar or a ({data.partitions}, 1) vector",
        )
    return tile


def _pick_engine(instr: str, requested, default: str, allowed: tuple[str, ...]) -> str:
    if requested is None or requested == engine.unknown:
        return default
    value = requested.value if isinstance(requested, engine) else requested
    if value not in allowed:
        raise refuse(name_of(instr), f"engine {value} cannot run {instr}; use one of {allowed}")
    return value


def alu_operand(instr: str, op, role: str = "op") -> _ops.AluOp:
    """``op`` as an ALU operator (``nl.add``; ``nl.sum`` and friends name theirs)."""
    if isinstance(op, _ops.AluOp):
        return op
    alu = getattr(op, "alu", None)
    if isinstance(alu, _ops.AluOp):
        return alu
    raise refuse(name_of(instr), f"{role} {op!r} is not an ALU operator (nl.add, nl.maximum, ...)")


# -- the declaration and its prelude ------------------------------------------------------------


@dataclass
class Issue:
    """What an instruction's body hands the prelude to record: the operands it reads, in
    the order its poison rule and ``strict_reads`` see them (non-tiles are dropped), the
    tiles it writes, the function performing it on {allocation id: ndarray}, the poison
    rule (None: any undefined input makes every output undefined; emulator.execute), the
    reads whose unwritten elements are refused outright, and the cost inputs (timing.py)."""

    reads: tuple
    writes: tuple[Tile, ...]
    run: Callable[[dict], None]
    poison: Callable | None = None
    strict_reads: tuple[int, ...] = ()
    cost: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Operands:
    """One instruction's operand declaration (the fields of ``@instruction``)."""

    tiles: tuple[str, ...] = ()  # tile arguments, dst first; one defaulting to None is optional
    engines: tuple[str, ...] = ()  # engines that may run it (engine=), the default first
    default_engine: Callable[[dict], str] | None = None  # a default that depends on operands
    # False where engine= names something else (dma_copy: the engine issuing the transfer).
    engine_argument: bool = True
    reads: tuple[str, ...] = ()  # tiles the engine reads
    writes: tuple[str, ...] = ()  # tiles the engine writes
    same_layout: tuple[str, ...] = ()  # laid out like dst (partitions, elements per partition)
    not_both_psum: tuple[str, str] | None = None
    vectors: tuple[tuple[str, str], ...] = ()  # (operand, the tile whose partitions it matches)
    maskable: bool = True  # mask= cuts every tile operand alike (same axes, or broadcast)


def _masked(instr: str, declared: Operands, mask, args: tuple, kwargs: dict):
    """``args``/``kwargs`` with each tile cut to the box ``mask`` keeps (masked-out elements
    are neither read nor written); None when the mask keeps nothing (nothing is issued)."""
    if not declared.maskable:
        raise refuse(instr, "mask= is not supported on this instruction")
    if not isinstance(mask, Predicate):
        raise refuse(instr, f"mask must be a predicate on index grids (e.g. i_p < n), got {mask!r}")
    box = mask.box(instr)
    if box is None:
        return None
    shape = mask.values.shape

    def cut(value, role):
        return narrow(value, box, shape, instr, role) if isinstance(value, Tile) else value

    args = tuple(cut(a, f"operand {i}") for i, a in enumerate(args))
    return args, {k: cut(v, k) for k, v in kwargs.items()}


def _checked(instr: str, declared: Operands, signature, arguments: dict) -> str | None:
    """The prelude: check every declared operand (module docstring), replacing each in
    ``arguments`` by its checked value; returns the engine that runs the instruction."""
    for role in declared.tiles:
        value = arguments[role]
        if value is None and signature.parameters[role].default is None:
            continue
        arguments[role] = tile_operand(value, instr, role)
    if not declared.engines:
        return None
    default = declared.engines[0]
    if declared.default_engine is not None:
        default = declared.default_engine(arguments)
    if declared.engine_argument and "engine" in arguments:
        eng = _pick_engine(instr, arguments["engine"], default, declared.engines)
        arguments["engine"] = eng
    else:
        eng = default
    for roles, write in ((declared.reads, False), (declared.writes, True)):
        for role in roles:
            if arguments[role] is not None:
                check_access(instr, eng, arguments[role], role, write=write)
    for role in declared.same_layout:
        _same_layout(instr, arguments["dst"], arguments[role], "dst", role)
    pair = declared.not_both_psum
    if pair and all(arguments[role].buffer == PSUM for role in pair):
        raise refuse(name_of(instr), f"{pair[0]} and {pair[1]} cannot both be in PSUM")
    for role, like in declared.vectors:
        arguments[role] = vector_operand(instr, eng, arguments[role], arguments[like], role)
    return eng


def instruction(**declaration):
    """Declare an instruction's operands (``Operands``' fields); the body gets them checked
    and returns an ``Issue`` to record (or None: it issued through other instructions)."""
    declared = Operands(**declaration)

    def wrap(body):
        instr = body.__name__
        signature = inspect.signature(body)

        @functools.wraps(body)
        def call(*args, mask=None, **kwargs):
            if mask is not None:
                cut = _masked(name_of(instr), declared, mask, args, kwargs)
                if cut is None:
                    return None
                args, kwargs = cut
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            eng = _checked(instr, declared, signature, arguments)
            issue = body(**arguments)
            if issue is not None:
                record(instr, eng, issue)
            return None

        return call

    return wrap


def record(instr: str, eng: str, issue: Issue) -> None:
    """Append the instruction to the active trace (its tiles bounds-checked once more: a
    mask may have cut them)."""
    trace = _trace.current()
    for role, tiles in (("a read operand", issue.reads), ("a written operand", issue.writes)):
        for tile in tiles:
            if isinstance(tile, Tile):
                check_bounds(tile, name_of(instr), role)
    trace.add(
        _trace.Instruction(
            name=instr,
            engine=eng,
            reads=tuple(t for t in issue.reads if isinstance(t, Tile)),
            writes=tuple(issue.writes),
            run=issue.run,
            location=kernel_location(),
            cost=issue.cost,
            poison=issue.poison,
            strict_reads=issue.strict_reads,
        )
    )


def rate_dtype(*tiles) -> str:
    """The dtype whose engine rate applies: 2-byte rates only when every operand is 2-byte
    (or narrower) floating point; otherwise the 4-byte rate."""
    names = [t.dtype.name for t in tiles if isinstance(t, Tile)]
    if names and all(n in ("bfloat16", "float16") or n.startswith("float8") for n in names):
        return "bfloat16"
    return "float32"


# -- the emulator's NumPy state ---------------------------------------------------------------


def partition_first_shape(tile: Tile) -> tuple[int, ...]:
    """The view's shape with the partition axis first (1 if the view dropped it)."""
    if tile.alloc.on_chip and isinstance(tile.index[0], int):
        return (1, *tile.shape)
    return tile.shape


def read(state: dict, tile: Tile, dtype=np.float32) -> np.ndarray:
    """The tile's values as ``dtype`` (engines compute in float32), shaped partitions first."""
    values = state[tile.alloc.id][tile.numpy_index()]
    return np.asarray(values).astype(dtype).reshape(partition_first_shape(tile))


def read_2d(state: dict, tile: Tile) -> np.ndarray:
    return read(state, tile).reshape(tile.partitions, -1)


def operand_value(state: dict, value):
    """A vector operand's values (partitions, 1), or a scalar's as float32."""
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


# -- shared poison rules (emulator.execute): which output elements are undefined, from the
# undefined bits of the read tiles, each (partitions, free) in the order of the recorded reads.


def broadcast_or(masks, shape):
    out = np.zeros(shape, dtype=bool)
    for mask in masks:
        out |= np.broadcast_to(mask, shape)  # (partitions, 1) operands broadcast along free
    return out


def copied(writes: tuple[Tile, ...]):
    """Copies (DMA, tensor_copy, reciprocal): element i of dst from element i of each read."""

    def rule(masks, pstate):
        shape = (writes[0].partitions, writes[0].free_size)
        out = np.zeros(shape, dtype=bool)
        for mask in masks:
            out |= mask.reshape(shape)
        return [out]

    return rule


def elementwise(writes: tuple[Tile, ...]):
    """Same positions; a (partitions, 1) second output (a row reduction) takes its row."""

    def rule(masks, pstate):
        out = broadcast_or(masks, (writes[0].partitions, writes[0].free_size))
        return [out] + [out.any(axis=1, keepdims=True) for _ in writes[1:]]

    return rule
