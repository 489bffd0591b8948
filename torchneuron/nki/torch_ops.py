"""Calling an ``@nki.jit`` kernel with torch tensors: eager, under ``torch.compile``, profiled.

A kernel called with torch tensors goes through ONE custom op,
``torch.ops.torchneuron_nki.call(int key, Tensor[] inputs) -> Tensor[]``. ``key`` names a
*call spec* in this process's registry: the kernel and where each argument goes (tensor
``k`` of ``inputs``, or a compile-time constant such as ``eps``). One generic op, not one
op per kernel: a kernel needs no registration (and no schema of its own) to be called, its
constants become part of the key so the op stays tensors-in, tensors-out, and the graph
splitter (``collective_graphs``) recognises every kernel by one namespace.

- **Eager** (``neuron`` tensors): the device's queue is drained, the inputs' memory is
  handed to the emulator as NumPy arrays without a copy (``device.arrays.host_array``, the
  native layer's host alias), the outputs are allocated as new ``neuron`` tensors on the
  inputs' core and the emulator writes into their memory directly. With CPU tensors the same
  happens on CPU memory (outputs are CPU tensors). A kernel that writes one of its argument
  tensors is refused (the op declares no mutation).
- **Fake/meta**: the kernel is traced on its arguments' shapes and dtypes only (no
  compute; its on-chip memory is still planned, so a limit is refused at compile time) and
  its returned HBM tensors give the outputs' shapes and dtypes.
- **torch.compile**: ``Kernel`` objects are allowed in Dynamo's graph, so AOTAutograd
  traces the call and records the one custom op; ``collective_graphs`` splits the graph
  there, so the kernel runs eagerly between the compiled segments, in program order.
- **Profiler**: while ``torchneuron.profiler.profile`` records, each call is scheduled on
  the engines (``nki.estimate``'s model) and reported like a NEFF execution named
  ``nki:<kernel>``, with its estimated time and one slice per engine lane.
- **Autograd**: the op has none; pair a forward and a backward kernel in a
  ``torch.autograd.Function`` (examples/nki_torch_autograd.py).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from torchneuron.nki import emulator, timing
from torchneuron.nki import trace as _trace
from torchneuron.nki.errors import NKIError
from torchneuron.nki.tensor import DTYPES, IN_HBM, Tile, as_dtype

NAMESPACE = "torchneuron_nki"
OP_NAME = f"{NAMESPACE}::call"


@dataclass
class CallSpec:
    """A kernel and its argument layout: ("tensor", k) or ("constant", value) per argument."""

    kernel: object
    args: tuple
    kwargs: tuple  # ((name, ("tensor", k) | ("constant", value)), ...)
    # Output structure, known after the first trace: None (one tensor) or the container
    # type (tuple/list) of the returned tensors.
    container: type | None = None
    metas: dict = field(default_factory=dict)  # input metas -> output (shape, dtype) list

    @property
    def name(self) -> str:
        return self.kernel.fn.__name__


_lock = threading.Lock()
_specs: list[CallSpec] = []
_spec_ids: dict[tuple, int] = {}


def _layout(kernel, args, kwargs) -> tuple[list[torch.Tensor], tuple, tuple]:
    tensors: list[torch.Tensor] = []

    def place(value, where: str):
        if isinstance(value, torch.Tensor):
            tensors.append(value)
            return ("tensor", len(tensors) - 1)
        try:
            hash(value)
        except TypeError:
            raise NKIError(
                f"kernel {kernel.fn.__name__}: argument {where} is a {type(value).__name__}; "
                "called with torch tensors, a kernel takes tensors and hashable constants "
                "(numbers, strings, tuples)"
            ) from None
        return ("constant", value)

    laid_args = tuple(place(a, f"{i}") for i, a in enumerate(args))
    laid_kwargs = tuple((k, place(v, k)) for k, v in sorted(kwargs.items()))
    return tensors, laid_args, laid_kwargs


def register(kernel, args, kwargs) -> tuple[int, list[torch.Tensor]]:
    """The registry key of this call's spec, and its tensors in ``inputs`` order."""
    tensors, laid_args, laid_kwargs = _layout(kernel, args, kwargs)
    identity = (id(kernel), laid_args, laid_kwargs)
    with _lock:
        key = _spec_ids.get(identity)
        if key is None or _specs[key].kernel is not kernel:
            key = len(_specs)
            _specs.append(CallSpec(kernel, laid_args, laid_kwargs))
            _spec_ids[identity] = key
    return key, tensors


def spec(key: int) -> CallSpec:
    if not 0 <= key < len(_specs):
        raise NKIError(f"{OP_NAME}: no kernel call registered under key {key}")
    return _specs[key]


def entry(kernel):
    """The function a torch call of ``kernel`` goes through, allowed in Dynamo's graph as
    it is: Dynamo records a call to it (tensors and constants in, tensors out, shapes from
    the fake implementation) instead of tracing the kernel's Python and this registry, and
    AOTAutograd, tracing that call, records the custom op."""
    found = kernel._torch_entry
    if found is None:

        def call_kernel(*args, **kwargs):
            return call(kernel, args, kwargs)

        call_kernel.__name__ = call_kernel.__qualname__ = f"nki_{kernel.fn.__name__}"
        found = kernel._torch_entry = torch._dynamo.allow_in_graph(call_kernel)
    return found


def call(kernel, args, kwargs):
    """``kernel(*args, **kwargs)`` with torch tensors among the arguments."""
    key, tensors = register(kernel, args, kwargs)
    results = torch.ops.torchneuron_nki.call(key, tensors)
    container = _specs[key].container
    return results[0] if container is None else container(results)


# -- the arguments the tracer sees ---------------------------------------------------------


def _numpy_dtype(spec_: CallSpec, dtype: torch.dtype, position: int) -> np.dtype:
    from torchneuron.device.arrays import numpy_dtype

    try:
        if dtype == torch.bool:  # nl.bool_ is held as uint8: its outputs would come back uint8
            raise TypeError(dtype)
        found = numpy_dtype(dtype)
        as_dtype(found)
    except Exception:  # noqa: BLE001 - the dtype table's or the tracer's refusal, reworded
        supported = ", ".join(n for n in DTYPES if n not in ("tfloat32", "bool_"))
        raise NKIError(
            f"kernel {spec_.name}: tensor argument {position} has dtype "
            f"{str(dtype).removeprefix('torch.')}, which NKI does not have; supported: "
            f"{supported}"
        ) from None
    return found


def _arguments(spec_: CallSpec, arrays: list):
    def value(place):
        kind, item = place
        return arrays[item] if kind == "tensor" else item

    return [value(p) for p in spec_.args], {k: value(p) for k, p in spec_.kwargs}


def _check_devices(spec_: CallSpec, tensors) -> torch.device:
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        names = ", ".join(sorted(str(d) for d in devices))
        raise NKIError(
            f"kernel {spec_.name}: tensor arguments are on different devices ({names}); "
            "a kernel runs on one NeuronCore"
        )
    device = next(iter(devices))
    if device.type not in ("neuron", "cpu"):
        raise NKIError(
            f"kernel {spec_.name}: tensors on {device} are not supported; use neuron or cpu tensors"
        )
    return device


def _returned_tiles(spec_: CallSpec, returned) -> list[Tile]:
    if isinstance(returned, Tile):
        spec_.container = None
        tiles = [returned]
    elif isinstance(returned, (tuple, list)) and all(isinstance(t, Tile) for t in returned):
        spec_.container = type(returned)
        tiles = list(returned)
    else:
        raise NKIError(
            f"kernel {spec_.name}: returns {type(returned).__name__}; called with torch "
            "tensors, a kernel returns an HBM tensor or a tuple of them"
        )
    for tile in tiles:
        if tile.buffer not in IN_HBM:  # Kernel.run refused this already; kept for clarity
            raise NKIError(f"kernel {spec_.name}: returns an on-chip tile {tile.describe()}")
    return tiles


def _refuse_unwritten_outputs(spec_: CallSpec, trace, tiles: list[Tile]) -> None:
    """A returned tensor with elements no instruction writes would hand the caller
    uninitialised memory: refused (at trace time, so under torch.compile too)."""
    for tile in tiles:
        alloc = tile.alloc
        if alloc.initial is not None:
            continue
        written = np.zeros(alloc.shape, dtype=bool)
        for instr in trace.instructions:
            for dst in instr.writes:
                if dst.alloc is alloc:
                    written[dst.numpy_index()] = True
        missing = int((~written[tile.numpy_index()]).sum())
        if missing:
            raise NKIError(
                f"kernel {spec_.name}: returns {tile.describe()} (declared at {alloc.location}) "
                f"with {missing} of its {tile.size} elements written by no instruction; check "
                "the kernel's loop bounds against the arguments' shapes"
            )


def _torch_dtype(tile: Tile) -> torch.dtype:
    from torchneuron.device.arrays import torch_dtype

    return torch_dtype(tile.dtype.numpy)


# -- eager ---------------------------------------------------------------------------------


def _host_array(tensor: torch.Tensor) -> np.ndarray:
    if tensor.device.type == "neuron":
        from torchneuron.device.arrays import host_array

        return host_array(tensor)  # waits for the device's queue; no copy when dense
    from torchneuron.compiler.tensors import to_numpy

    return to_numpy(tensor)  # a view when contiguous


def _run(key: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    spec_ = spec(key)
    device = _check_devices(spec_, inputs)
    for i, t in enumerate(inputs):
        _numpy_dtype(spec_, t.dtype, i)
    arrays = [_host_array(t.detach()) for t in inputs]
    args, kwargs = _arguments(spec_, arrays)
    outputs: list[torch.Tensor] = []
    tiles: list[Tile] = []

    def bind(trace, returned) -> dict:
        tiles.extend(_returned_tiles(spec_, returned))
        _refuse_argument_writes(spec_, trace)
        _refuse_unwritten_outputs(spec_, trace, tiles)
        bound = {a.id: a.initial for a in trace.allocations if a.initial is not None}
        for tile in tiles:
            alloc = tile.alloc
            if alloc.id not in bound:
                tensor = torch.empty(alloc.shape, dtype=_torch_dtype(tile), device=device)
                outputs.append(tensor)
                bound[alloc.id] = _host_array(tensor)
        return bound

    from torchneuron import profiler
    from torchneuron.device import _C
    from torchneuron.device.profiler_events import ensure_hook

    # torchneuron.profiler, or a torch.profiler session with PrivateUse1 events
    profiling = profiler.is_recording() or _C.profiler_recording()
    if profiling:
        ensure_hook()
    start = time.perf_counter()
    target = spec_.kernel.device_target()
    run = spec_.kernel.run(args, kwargs, execute=True, estimate=False, bind=bind, target=target)
    seconds = time.perf_counter() - start
    results = _results(tiles, outputs, run, device)
    if profiling:
        run.schedule = timing.schedule(run.trace, run.plan)
        _report(spec_, run, device, start, seconds)
    return results


def _refuse_argument_writes(spec_: CallSpec, trace) -> None:
    for instr in trace.instructions:
        for tile in instr.writes:
            if tile.alloc.initial is not None:
                raise NKIError(
                    f"kernel {spec_.name}: nki.isa.{instr.name} at {instr.location} writes its "
                    f"argument {tile.alloc.name}; called with torch tensors, a kernel returns "
                    "new tensors and leaves its arguments unchanged"
                )


def _results(tiles, outputs, run, device) -> list[torch.Tensor]:
    """The returned tiles as tensors: a tile covering its whole output allocation is that
    allocation's tensor; a part of one, or an argument returned, is copied out."""
    by_alloc = {}
    produced = iter(outputs)
    results = []
    for tile in tiles:
        alloc = tile.alloc
        if alloc.initial is None and alloc.id not in by_alloc:
            by_alloc[alloc.id] = next(produced)
        whole = tile.shape == alloc.shape and all(
            not isinstance(i, int) and i[0] == 0 and i[2] == 1 for i in tile.index
        )
        if whole and alloc.id in by_alloc:
            results.append(by_alloc[alloc.id])
            continue
        source = _host_array(by_alloc[alloc.id]) if alloc.id in by_alloc else alloc.initial
        tensor = torch.empty(tile.shape, dtype=_torch_dtype(tile), device=device)
        np.copyto(_host_array(tensor), source[tile.numpy_index()])
        results.append(tensor)
    return results


def _report(spec_: CallSpec, run, device: torch.device, start: float, seconds: float) -> None:
    """Hand the call to the execute hooks (the profiler) as an execution ``nki:<kernel>``."""
    from torchneuron.runtime.loaded_neff import _EXECUTE_HOOKS

    record = _KernelExecution(spec_.name, run, device)
    for hook in list(_EXECUTE_HOOKS):
        hook(record, start, seconds)


# -- fake ----------------------------------------------------------------------------------


def _fake(key: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    spec_ = spec(key)
    _check_devices(spec_, inputs)
    # A kernel's Python needs concrete shapes: a symbolic size is specialised here (int()
    # guards on it, so Dynamo recompiles for another size).
    metas = tuple((tuple(int(d) for d in t.shape), t.dtype) for t in inputs)
    found = spec_.metas.get(metas)
    if found is None:
        arrays = [
            np.broadcast_to(np.zeros((), _numpy_dtype(spec_, dtype, i)), shape)
            for i, (shape, dtype) in enumerate(metas)
        ]
        args, kwargs = _arguments(spec_, arrays)
        target = spec_.kernel.device_target()
        run = spec_.kernel.run(args, kwargs, execute=False, estimate=False, target=target)
        tiles = _returned_tiles(spec_, run.returned)
        _refuse_argument_writes(spec_, run.trace)
        _refuse_unwritten_outputs(spec_, run.trace, tiles)
        found = spec_.metas[metas] = [(tile.shape, _torch_dtype(tile)) for tile in tiles]
    device = inputs[0].device if inputs else torch.device("cpu")
    return [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in found]


@torch.library.custom_op(OP_NAME, mutates_args=())
def _call_op(key: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    return _run(key, inputs)


_call_op.register_fake(_fake)


def _setup_context(ctx, inputs, output) -> None:
    ctx.key = inputs[0]


def _no_backward(ctx, grads):
    raise NKIError(
        f"kernel {spec(ctx.key).name}: no gradient through an NKI kernel call; pair it with a "
        "backward kernel in a torch.autograd.Function (examples/nki_torch_autograd.py)"
    )


_call_op.register_autograd(_no_backward, setup_context=_setup_context)


# -- profiler records ----------------------------------------------------------------------


@dataclass
class _Kernel:
    name: str
    ops: list
    engine: str
    lanes: dict
    bound: str = "nki"
    hbm_read_bytes: int = 0
    hbm_write_bytes: int = 0
    sbuf_bytes: int = 0
    flops: int = 0


class _KernelSchedule:
    """The parts of a NEFF schedule the profiler reads, for one NKI kernel call."""

    def __init__(self, name: str, schedule: timing.Schedule, plan: emulator.MemoryPlan):
        self.latency_s = schedule.seconds
        self.flops = 0
        self.hbm_bytes = sum(
            s.instruction.cost.get("bytes", 0)
            for s in schedule.slots
            if s.lane.startswith(_trace.DMA)
        )
        busy = schedule.busy_seconds()
        lanes: dict[str, tuple[float, float]] = {}
        for slot in schedule.slots:
            lane = _trace.DMA if slot.lane.startswith(_trace.DMA) else slot.lane
            begin, end = lanes.get(lane, (slot.start, slot.end))
            lanes[lane] = (min(begin, slot.start), max(end, slot.end))
        self._busy = busy
        engine = max(busy, key=busy.get) if busy else _trace.DMA
        self.kernels = [
            _Kernel(
                f"nki:{name}",
                list(schedule.slots),
                engine,
                lanes,
                sbuf_bytes=plan.sbuf_high_water,
            )
        ]

    def engine_busy_seconds(self) -> dict[str, float]:
        return dict(self._busy)


class _KernelExecution:
    """What an execute hook reads of a ``LoadedNeff``, for one kernel call."""

    executor_name = "nki emulator"

    def __init__(self, name: str, run, device: torch.device):
        from torchneuron.runtime.core import get_core

        self.name = f"nki:{name}"
        self.schedule = _KernelSchedule(name, run.schedule, run.plan)
        self.core = get_core((device.index or 0) if device.type == "neuron" else 0)
