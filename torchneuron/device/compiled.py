"""The compiled route: an op call run as a program compiled for its call signature.

The signature (``plan.flatten``'s key: the op, each tensor's dtype/shape/strides
where not contiguous, the types of Python scalars, every static argument) is looked
up in an in-memory LRU. Its entry's ``route`` (``plan.Route``) decides, once per
signature, what runs the call; ``_RUNNERS`` is that decision's one table:

- ``COMPILED`` (an ``Entry``): the program runs on numpy arrays over the tensors'
  memory and writes the outputs into new device tensors, or into the mutated
  arguments of in-place and ``out=`` ops; queued (``launch``) unless it must run now;
- ``PADDED`` (a ``padded.PaddedEntry``): a second shape of an op seen before runs its
  shape class's program at the next bucket, compiled once (``padded``), queued as above;
- ``COMPLEX``: complex values as real ops on real pairs (``complex_route``);
- ``FALLBACK``, ``HOST``, ``REJECTED`` (a ``HostOnly``): the CPU kernel, recorded as a
  fallback, by design, or deciding a call the shape function refused.

A miss infers the output shapes (``shapes``), traces the call as a function of flat
tensors and compiles it (``programs.compile_resident``: same pipeline and NEFF cache
as torch.compile; imported on the first miss, as it pulls in torch-mlir).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch._prims_common import make_contiguous_strides_for

from torchneuron.device import (
    _C,
    arrays,
    complex_route,
    fallback,
    padded,
    programs,
    stream_api,
    streams,
)
from torchneuron.device.host import run_on_host
from torchneuron.device.launch import Launch
from torchneuron.device.layout import dense_order, inverse_order
from torchneuron.device.plan import (
    DEVICE_TYPE,
    OpPlan,
    Route,
    new_returns,
    pack_returns,
    unflatten,
)
from torchneuron.device.shapes import MetaRejected, MetaUnavailable, output_metadata
from torchneuron.lru import LRU

COMPILED_CACHE_ENTRIES = 4096


class HostOnly:
    """Cache entry for a call signature that does not run a program, with the reason.

    ``route`` says what runs instead (``Route.FALLBACK``, ``HOST``: output shape depends on
    values, e.g. boolean-mask indexing, run on the host by design without a fallback
    warning; ``COMPLEX``; ``REJECTED``).
    """

    __slots__ = ("reason", "route")

    def __init__(self, reason: str, route: Route = Route.FALLBACK):
        self.reason = reason
        self.route = route


@dataclass
class Entry:
    """A compiled op call: its program and how to turn program outputs into results."""

    program: programs.ResidentProgram
    scalar_dtypes: tuple[np.dtype, ...]
    # (shape, stride, dtype) of each new output tensor, in return order (None: an undefined return)
    fresh: tuple[tuple | None, ...]
    # shape of each mutated tensor after the call; empty ones are not program outputs
    mutated_shapes: tuple[tuple[int, ...], ...] = ()
    # ``fresh`` without the Nones and the empty tensors: what the program returns
    fresh_metas: tuple[tuple, ...] = ()
    # argument position of an integer division's divisor, checked for zeros per call
    divisor: int | None = None
    # the program has run-time checks (an index out of range raises PyTorch's error):
    # it runs synchronously, so the error is raised at the op
    checked: bool = False

    # ``fresh_metas`` in the native layer's form (``_C.capture_launch`` reads it)
    native_metas: Any = None
    # calls run (``padded`` measures a shape change against shapes that ran again)
    runs: int = 0
    # per tensor input, the axis order it is laid out densely in when that is not its
    # own (a transposed weight), else None; None when no input is (``dense_orders``)
    dense_orders: tuple | None = None

    route = Route.COMPILED

    def __post_init__(self) -> None:
        self.fresh_metas = tuple(meta for meta in self.fresh if _computed(meta))
        self.native_metas = _C.output_metas(self.fresh_metas)


def _computed(meta: tuple | None) -> bool:
    """True for a new output the program computes (not undefined, not empty)."""
    return meta is not None and 0 not in meta[0]


def _unload(key: tuple, entry: Entry | HostOnly) -> None:
    if isinstance(entry, Entry):
        programs.forget(entry.program)


# The entry of every call signature with complex values.
COMPLEX_VALUES = HostOnly("complex values run as real pairs", Route.COMPLEX)

# call signature -> Entry or HostOnly
cache: LRU[tuple, Entry | HostOnly] = LRU(COMPILED_CACHE_ENTRIES, on_evict=_unload)


def run_compiled(
    plan: OpPlan, values: list, device: int, key: tuple, tensors: list, scalars: list
) -> Any:
    """Run one call (``device``, ``key``, ``tensors``, ``scalars`` from ``plan.flatten``)."""
    entry = cache.get(key)
    if entry is None:
        entry = _new_entry(plan, values, key, tensors, scalars, device)
    return _RUNNERS[entry.route](plan, values, device, key, entry, tensors, scalars)


def _new_entry(
    plan: OpPlan, values: list, key: tuple, tensors: list, scalars: list, device: int
) -> Entry | HostOnly:
    """The entry of a signature not seen before, cached (but a ``REJECTED`` one)."""
    if complex_route.touches_complex(plan, values):
        entry: Entry | HostOnly = COMPLEX_VALUES
    else:
        entry = _padded_entry(plan, values, key, tensors, scalars, device)
        if entry is None:
            try:
                entry = _compile(plan, values, key, tensors, scalars, device)
            except MetaRejected as rejection:
                return HostOnly(rejection.reason, Route.REJECTED)
            padded.saw_exact(key, entry)
    cache.put(key, entry)
    return entry


def _padded_entry(
    plan: OpPlan, values: list, key: tuple, tensors: list, scalars: list, device: int
):
    """The signature's entry on the padded route, or None (``padded.entry_for``)."""
    scalar_dtypes = tuple(_scalar_dtype(v, tensors) for v in scalars)

    def traceable(fresh_count: int, mutated_count: int) -> Callable:
        computed = (True,) * fresh_count
        return _traceable(plan, values, len(tensors), computed, (True,) * mutated_count)

    written = list(_mutated_targets(plan, values))
    return padded.entry_for(plan, values, key, tensors, written, traceable, scalar_dtypes, device)


def _run_program(
    plan: OpPlan, values: list, device: int, key: tuple, entry: Entry, tensors: list, scalars: list
) -> Any:
    entry.runs += 1
    if entry.divisor is not None:
        streams.synchronize(device)  # the divisor's value is read: after the queued ops
        _check_divisor(values[entry.divisor])
    try:
        scalar_arrays = _scalar_arrays(plan, entry, tensors, scalars)
    except _ScalarRefused as refusal:  # this value only: the CPU kernel decides
        result = run_on_host(plan, values, tensors, device)
        fallback.record_fallback(plan.name, refusal.reason)
        return result
    if streams.runs_here() or entry.checked or _resizes(plan, values, entry):
        # Synchronous: after the queued ops, on this thread, errors raised here. An out=
        # argument of another shape is an input of the program as it is, and is resized
        # only once the program has run.
        streams.synchronize(device)
        inputs = _C.host_arrays(tensors, entry.dense_orders)
        inputs.extend(scalar_arrays)
        outputs = entry.program.execute(device, inputs)
        return _assemble(plan, values, entry, outputs, device)
    return _launch(plan, values, device, key, entry, tensors, scalar_arrays)


def _run_complex(plan, values, device, key, entry, tensors, scalars) -> Any:
    return complex_route.run_complex(plan, values, tensors, device)


def _run_fallback(plan, values, device, key, entry, tensors, scalars) -> Any:
    fallback.record_fallback(plan.name, entry.reason)
    return run_on_host(plan, values, tensors, device)


def _run_host(plan, values, device, key, entry, tensors, scalars) -> Any:
    return run_on_host(plan, values, tensors, device)


def _run_rejected(plan, values, device, key, entry, tensors, scalars) -> Any:
    # The CPU kernel raises PyTorch's own error for a bad call (nothing is cached then);
    # if it accepts, the signature runs on the host from now on.
    result = run_on_host(plan, values, tensors, device)
    cache.put(key, HostOnly(entry.reason, Route.FALLBACK))
    fallback.record_fallback(plan.name, entry.reason)
    return result


# What runs a call, by its entry's route: the one table of the compiled route's decision.
_RUNNERS: dict[Route, Callable[..., Any]] = {
    Route.COMPILED: _run_program,
    Route.PADDED: _run_program,  # a ``padded.PaddedEntry`` runs like an ``Entry``
    Route.COMPLEX: _run_complex,
    Route.FALLBACK: _run_fallback,
    Route.HOST: _run_host,
    Route.REJECTED: _run_rejected,
}


class _ScalarRefused(Exception):
    """A Python scalar of this call cannot be a program input (internal; never escapes)."""

    def __init__(self, reason: str):
        self.reason = reason


def _scalar_arrays(plan: OpPlan, entry: Entry, tensors: list, scalars: list) -> list:
    """The lifted scalars as 0-d arrays of the program's input dtypes."""
    scalar_arrays = []
    for value, dtype in zip(scalars, entry.scalar_dtypes):
        if type(value) is int and tensors and not _fits_tensor(value, tensors[0].dtype):
            if plan.op._schema.name in _VALUE_WRITES:  # PyTorch refuses the overflow
                raise _ScalarRefused(f"the scalar {value!r} overflows")
            # PyTorch casts a number to the integer tensor's dtype first, wrapping it:
            # remainder(int32 1, 2**53 + 1) is 1 % 1
            value = _wrapped(value, tensors[0].dtype)
        if dtype.kind in "iub" and not _fits(value, dtype):
            # fill_(nan) into int64: the CPU kernel raises PyTorch's error (a plain
            # cast here would wrap or saturate)
            raise _ScalarRefused(f"the scalar {value!r} does not fit {dtype}")
        scalar_arrays.append(np.asarray(value, dtype=dtype))
    return scalar_arrays


def _mutated_targets(plan: OpPlan, values: list) -> Iterator[Any]:
    """Each tensor the call writes, in program output order (a list argument's in turn)."""
    for arg_position in plan.mutated:
        value = values[arg_position]
        if isinstance(value, (list, tuple)):
            yield from value
        else:
            yield value


def _resizes(plan: OpPlan, values: list, entry: Entry) -> bool:
    """Whether the call resizes a mutated argument (an out= argument of another shape)."""
    return any(
        tuple(target.shape) != shape
        for target, shape in zip(_mutated_targets(plan, values), entry.mutated_shapes)
    )


def _launch(
    plan: OpPlan,
    values: list,
    device: int,
    key: tuple,
    entry: Entry,
    tensors: list,
    scalar_arrays: list,
) -> Any:
    """Queue the call (``launch.Launch``); its result tensors are allocated now."""
    # the mutated arguments (of the right shape already: ``_resizes``) that get data
    targets = [
        target
        for target, shape in zip(_mutated_targets(plan, values), entry.mutated_shapes)
        if 0 not in shape
    ]
    fresh, views = _C.capture_launch(tensors, entry.native_metas, targets, device)
    streams.submit(
        Launch(
            device,
            stream_api.current_stream(device),
            plan.name,
            key,
            entry,
            plan,
            values,
            tensors,
            scalar_arrays,
            fresh + targets,
            views,
        )
    )
    return pack_returns(plan, values, _returned(fresh, entry, device))


# Integer division ops: PyTorch's CPU kernels raise on a zero divisor, where the
# program's integer divide gives -1 (quotient) or the dividend (remainder).
_INTEGER_DIVISIONS = frozenset(
    {
        "aten::floor_divide",
        "aten::floor_divide_",
        "aten::div",
        "aten::div_",
        "aten::remainder",
        "aten::remainder_",
        "aten::fmod",
        "aten::fmod_",
    }
)


def _integral(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return not (value.dtype.is_floating_point or value.dtype.is_complex)
    return isinstance(value, int)


def _divisor(plan: OpPlan, values: list) -> int | None:
    """Position of the divisor of an integer division (None for anything else)."""
    if plan.op._schema.name not in _INTEGER_DIVISIONS or "other" not in plan.names:
        return None
    if plan.op._schema.name in ("aten::div", "aten::div_") and (
        "rounding_mode" not in plan.names or values[plan.names.index("rounding_mode")] is None
    ):
        return None  # true division: a float result
    position = plan.names.index("other")
    if not (_integral(values[0]) and _integral(values[position])):
        return None
    return position


def _check_divisor(divisor: Any) -> None:
    if isinstance(divisor, torch.Tensor):
        if divisor.device.type == "cpu":
            zero = bool((divisor == 0).any())
        else:
            zero = bool((_C.host_arrays([divisor])[0] == 0).any())
    else:
        zero = divisor == 0
    if zero:
        raise RuntimeError("ZeroDivisionError")


def _fits(value: Any, dtype: np.dtype) -> bool:
    """Whether ``value`` converts to the integer (or bool) ``dtype`` without overflow."""
    if dtype.kind == "b" or isinstance(value, bool):
        return True
    if isinstance(value, complex):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    info = np.iinfo(dtype)
    return info.min <= int(value) <= info.max


# Ops that write a number into the tensor: an overflowing one is refused, not wrapped.
_VALUE_WRITES = frozenset(
    {
        "aten::fill",
        "aten::fill_",
        "aten::masked_fill",
        "aten::masked_fill_",
        "aten::index_fill",
        "aten::index_fill_",
        "aten::full",
        "aten::full_like",
        "aten::new_full",
    }
)


def _wrapped(value: int, dtype: torch.dtype) -> int:
    """``value`` cast to the integer ``dtype`` as C++ casts it (modulo 2**bits)."""
    info = torch.iinfo(dtype)
    span = info.max - info.min + 1
    return (value - info.min) % span + info.min


def _fits_tensor(value: int, dtype: torch.dtype) -> bool:
    """Whether an int meets an integer tensor of ``dtype`` without being cast (floats: yes)."""
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def _assemble(plan: OpPlan, values: list, entry: Entry, outputs: list, device: int) -> Any:
    """Write program outputs into new tensors and the mutated arguments; the op's result."""
    created = _C.device_tensors_from(outputs, entry.fresh_metas, device)
    position = len(created)
    new = _returned(created, entry, device)
    for target, shape in zip(_mutated_targets(plan, values), entry.mutated_shapes):
        if 0 in shape:  # nothing to write: only the shape can change
            if tuple(target.shape) != shape:
                target.resize_(shape)
            continue
        array = outputs[position]
        position += 1
        if tuple(target.shape) != array.shape:
            target.resize_(array.shape)  # out= arguments take the result's shape
        _C.write_array(target, array)
    return pack_returns(plan, values, new)


def _returned(created: list, entry: Entry, device: int) -> list:
    """The op's new returns: the computed tensors ``created``, with the undefined (None)
    and empty returns put back in their places."""
    if len(created) == len(entry.fresh):
        return created
    made = iter(created)
    return [next(made) if _computed(meta) else _empty_output(meta, device) for meta in entry.fresh]


def _empty_output(meta: tuple | None, device: int) -> torch.Tensor | None:
    if meta is None:
        return None
    shape, stride, dtype = meta
    return torch.empty_strided(shape, stride, dtype=dtype, device=torch.device(DEVICE_TYPE, device))


def _scalar_dtype(value: Any, tensors: list) -> np.dtype:
    """The dtype of the 0-d input standing for a Python scalar.

    Chosen so type promotion gives what a Python scalar gives: a 0-d tensor of a
    higher category than the other operands would otherwise decide the result
    dtype, so a float scalar is float64 only next to floating tensors (which then
    win), and the default dtype otherwise.
    """
    if isinstance(value, bool):
        return arrays.numpy_dtype(torch.bool)
    if isinstance(value, int):
        return arrays.numpy_dtype(torch.int64)
    if isinstance(value, complex):
        wide = any(t.is_complex() for t in tensors)
        return arrays.numpy_dtype(torch.complex128 if wide else torch.complex64)
    if any(t.is_floating_point() or t.is_complex() for t in tensors):
        return arrays.numpy_dtype(torch.float64)
    return arrays.numpy_dtype(torch.get_default_dtype())


def _compile(plan: OpPlan, values: list, key: tuple, tensors: list, scalars: list, device: int):
    """Trace and compile one call signature (or say why it runs on the host)."""
    from torchneuron.compiler import eager

    arrays.register_numpy_views()  # every compiled entry runs after this
    specs = [eager.TensorSpec(tuple(t.shape), tuple(t.stride()), t.dtype) for t in tensors]
    orders = dense_orders(tensors)
    key_parts = _stable_key(key)
    if orders is not None:  # such inputs arrive in their dense order (``_C.host_arrays``)
        for position, order in enumerate(orders):
            if order is not None:
                shape = tuple(specs[position].shape[axis] for axis in order)
                strides = tuple(make_contiguous_strides_for(shape))
                specs[position] = eager.TensorSpec(shape, strides, specs[position].dtype)
        key_parts = (*key_parts, ("dense orders", orders))
    try:
        fresh, mutated_shapes = output_metadata(plan, values)
    except MetaUnavailable as error:
        route = Route.HOST if error.data_dependent else Route.FALLBACK
        return HostOnly(str(error), route)
    scalar_dtypes = tuple(_scalar_dtype(v, tensors) for v in scalars)
    # Empty new outputs need no computing (and torch-mlir cannot lower some empty constants).
    computed = tuple(_computed(meta) for meta in fresh if meta is not None)
    mutated_computed = tuple(0 not in shape for shape in mutated_shapes)
    traced_fn = _traceable(plan, values, len(tensors), computed, mutated_computed)
    if orders is not None:
        traced_fn = _permuted_back(traced_fn, orders)
    output_count = sum(computed) + sum(mutated_computed)
    try:
        program = programs.compile_resident(
            plan.name,
            key_parts,
            specs + [eager.TensorSpec((), (), arrays.torch_dtype(d)) for d in scalar_dtypes],
            traced_fn,
            output_count,
            device,
        )
        entry = Entry(
            program,
            scalar_dtypes,
            fresh,
            mutated_shapes,
            divisor=_divisor(plan, values),
            checked=bool(program.program_on(device).manifest.get("checks")),
            dense_orders=orders,
        )
    except eager.OpCompileError as error:
        return HostOnly(error.reason)
    return entry


def dense_orders(tensors: list) -> tuple | None:
    """For each tensor laid out densely in an order that is not its own (a transposed
    weight, ``w.t()``), that order, outermost axis first; None for the others; None when
    no tensor is. Such an input reaches its program in that order, without the copy that
    making it contiguous would be (``_C.host_arrays``), and the program permutes it back
    (``_permuted_back``), which XLA folds into the op that reads it."""
    orders = [None if t.is_conj() or t.is_neg() else dense_order(t) for t in tensors]
    return tuple(orders) if any(order is not None for order in orders) else None


def _permuted_back(traced_fn: Callable, orders: tuple) -> Callable:
    """``traced_fn`` taking each input of ``orders`` in that dense order."""
    inverses = [None if order is None else inverse_order(order) for order in orders]

    def traced(*flat):
        flat = list(flat)
        for position, inverse in enumerate(inverses):
            if inverse is not None:
                flat[position] = flat[position].permute(inverse)
        return traced_fn(*flat)

    return traced


def _stable_key(key: tuple) -> tuple:
    """``key`` with every part given a repr that is the same in every process."""

    def stable(part):
        if isinstance(part, torch._ops.OpOverload):
            return str(part)
        if isinstance(part, torch.Size):
            return tuple(part)
        if isinstance(part, type):
            return part.__name__
        if isinstance(part, tuple):
            return tuple(stable(p) for p in part)
        return part

    return tuple(stable(p) for p in key)


def _traceable(
    plan: OpPlan,
    values: list,
    tensor_count: int,
    computed: tuple,
    mutated_computed: tuple,
) -> Callable:
    """A function of flat tensors (then lifted scalars, as 0-d tensors) that performs the call.

    Mutated arguments are cloned first, and returned after the op's new outputs,
    so functionalization turns the op into its functional form.
    """
    perform = plan.rewrite.call if plan.rewrite is not None else plan.call

    def traced(*flat):
        call_values = unflatten(plan, values, iter(flat[:tensor_count]), iter(flat[tensor_count:]))
        for position in plan.mutated:
            value = call_values[position]
            if isinstance(value, list):
                call_values[position] = [None if v is None else v.clone() for v in value]
            elif isinstance(value, torch.Tensor):
                call_values[position] = value.clone()
        result = perform(call_values)
        outputs = [value for value in new_returns(plan, result) if value is not None]
        outputs = [value for value, wanted in zip(outputs, computed) if wanted]
        written = _mutated_targets(plan, call_values)
        outputs.extend(value for value, wanted in zip(written, mutated_computed) if wanted)
        return tuple(outputs)

    return traced


def forget_padded() -> None:
    """Forget every shape class and padded entry: each signature compiles exactly again
    until a class sees a second shape (``TORCHNEURON_BUCKETS=off`` keeps it so)."""
    padded.clear()
    for key, entry in cache.items():
        if entry.route is Route.PADDED:
            cache.pop(key)


def compiled_cache_info() -> dict[str, int]:
    """How many call signatures are compiled, and how many run on the CPU."""
    entries = [entry for _, entry in cache.items()]
    return {
        "compiled": sum(isinstance(e, Entry) for e in entries),
        "host": sum(isinstance(e, HostOnly) for e in entries),
    }
