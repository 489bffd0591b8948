"""Kernels for every ATen op on the neuron device (everything the native layer does not own).

One boxed fallback for the PrivateUse1 key catches every op; the ~440 ops whose
default kernel would otherwise arrive as ``empty`` + ``.out`` get a direct
kernel too. Each op call takes one of three routes:

- **compiled** (the default): the call is described by a cheap tuple (op, each
  tensor's dtype/shape/strides where not contiguous, static arguments; Python
  scalars are program inputs, so new values do not recompile) and looked up in
  an in-memory LRU of compiled ops; a miss traces and compiles the op through
  ``torchneuron.compiler.eager`` (same pipeline and NEFF cache as torch.compile).
  The program runs on the tensors' core; results are written into new device
  tensors, or into the mutated arguments of in-place and ``out=`` ops.
- **random**: ops that draw random numbers run the CPU kernel with the device
  generator's state (the CPU engine, so a seed gives the numbers it gives on CPU).
- **host**: ops whose output shape depends on the data (``nonzero``,
  ``masked_select``, ``unique``...) or that return Python values run their CPU
  kernel on host aliases of the device memory. So does an op with no lowering
  (the CPU fallback, see ``fallback``), with a warning the first time.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from torchneuron.device import _C, fallback


class _LazyEager:
    """``torchneuron.compiler.eager``, imported on first compile (it pulls in torch-mlir)."""

    def __getattr__(self, name: str):
        from torchneuron.compiler import eager as module

        globals()["eager"] = module
        return getattr(module, name)


eager = _LazyEager()

DEVICE_TYPE = "neuron"
_NEURON = torch.device(DEVICE_TYPE)
_CPU = torch.device("cpu")
aten = torch.ops.aten

# Ops whose output shape depends on input values, or whose result is a host value.
HOST_OPS = frozenset(
    {
        "aten::nonzero",
        "aten::nonzero_numpy",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::unique_dim_consecutive",
        "aten::repeat_interleave",
        "aten::bincount",
        "aten::equal",
        "aten::is_set_to",
        "aten::_assert_async",
        "aten::_assert_async.msg",
        "aten::_print",
        "aten::nonzero_static",
    }
)
# Random ops without a Generator argument: they draw from the default generator.
IMPLICIT_RANDOM_OPS = frozenset(
    {"aten::native_dropout", "aten::_fused_dropout", "aten::rrelu_with_noise"}
)

COMPILED_CACHE_ENTRIES = 4096

# How a schema argument is handled.
(
    TENSOR,
    OPTIONAL_TENSOR,
    TENSOR_LIST,
    OPTIONAL_TENSOR_LIST,
    SCALAR,
    SCALAR_LIST,
    GENERATOR,
    DEVICE,
    STATIC,
) = range(9)

_numpy_dtype_of: dict[torch.dtype, np.dtype] = {}


def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    found = _numpy_dtype_of.get(dtype)
    if found is None:
        from torchneuron.target import dtypes

        found = dtypes.numpy_dtype(str(dtype).removeprefix("torch."))
        _numpy_dtype_of[dtype] = found
    return found


_views_registered = False


def _register_numpy_views() -> None:
    """Tell the native layer how dtypes numpy lacks travel (integers viewed as ml_dtypes).

    Done before the first program runs (importing ml_dtypes takes a while, so not
    at device registration).
    """
    global _views_registered
    if _views_registered:
        return
    _views_registered = True
    for dtype, carrier in (
        (torch.bfloat16, torch.int16),
        (torch.float8_e4m3fn, torch.int8),
        (torch.float8_e5m2, torch.int8),
    ):
        _C.register_numpy_view(dtype, carrier, _numpy_dtype(dtype))


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """Numpy array over a tensor's data: zero-copy for a dense neuron tensor, else a copy."""
    if not _views_registered:
        _register_numpy_views()
    return _C.host_arrays([tensor])[0]


# ---------------------------------------------------------------------------
# Per-op plans (built once per OpOverload from its schema)
# ---------------------------------------------------------------------------


def _argument_kind(arg) -> int:
    text = str(arg.type)
    if text == "Tensor":
        return TENSOR
    if text == "Optional[Tensor]":
        return OPTIONAL_TENSOR
    if text == "List[Tensor]":
        return TENSOR_LIST
    if text == "List[Optional[Tensor]]":
        return OPTIONAL_TENSOR_LIST
    if text in ("number", "Optional[number]"):
        return SCALAR
    if text == "List[number]":
        return SCALAR_LIST
    if text == "Optional[Generator]":
        return GENERATOR
    if text in ("Device", "Optional[Device]"):
        return DEVICE
    return STATIC


@dataclass
class OpPlan:
    op: torch._ops.OpOverload
    name: str  # aten::add.Tensor
    packet_name: str  # aten::add
    names: tuple[str, ...]
    kinds: tuple[int, ...]
    defaults: tuple[Any, ...]
    kwarg_only: tuple[bool, ...]
    mutated: tuple[int, ...]  # argument positions written by the op
    # per return: position of the argument it is (an in-place/out= result), or None for a new tensor
    return_aliases: tuple[int | None, ...]
    returns_tensors: bool
    returns_list: bool
    route: str  # "compiled" | "random" | "host"
    has_generator: bool
    # Scalar arguments that are program inputs, and how to call the op with tensors there
    lifted: frozenset = frozenset()
    rewrite: Any = None

    def normalize(self, args: tuple, kwargs: dict) -> list:
        values = list(args)
        if len(values) < len(self.names):
            names, defaults = self.names, self.defaults
            for position in range(len(values), len(names)):
                values.append(kwargs.get(names[position], defaults[position]))
        return values

    def call(self, values: list) -> Any:
        args = []
        kwargs = {}
        for position, value in enumerate(values):
            if self.kwarg_only[position]:
                kwargs[self.names[position]] = value
            else:
                args.append(value)
        try:
            return self.op(*args, **kwargs)
        except RuntimeError as error:
            # A wrapped number (C++ passed a Scalar where the schema has a Tensor, and
            # Python sees a number) that this op's Python binding does not accept.
            if "Expected a value of type 'Tensor'" not in str(error):
                raise
            return self.call(_numbers_as_tensors(self, values))


def _numbers_as_tensors(plan: OpPlan, values: list) -> list:
    """``values`` with numbers in Tensor positions as 0-d tensors that promote like them.

    A wrapped number does not take part in type promotion unless its category
    (bool < integer < float < complex) is higher than the tensors', so it becomes a
    tensor of the first tensor operand's dtype when that is of the same category, and
    of the default dtype of its category otherwise.
    """
    like = next((v for v in values if isinstance(v, torch.Tensor)), None)
    converted = list(values)
    for position, value in enumerate(values):
        kind = plan.kinds[position]
        if (kind == TENSOR or kind == OPTIONAL_TENSOR) and isinstance(
            value, (bool, int, float, complex)
        ):
            converted[position] = torch.tensor(value, dtype=_wrapped_dtype(value, like))
    return converted


def _wrapped_dtype(value: Any, like: torch.Tensor | None) -> torch.dtype:
    if isinstance(value, bool):
        category, default = 0, torch.bool
    elif isinstance(value, int):
        category, default = 1, torch.int64
    elif isinstance(value, float):
        category, default = 2, torch.get_default_dtype()
    else:
        category, default = 3, torch.complex64
    if like is not None:
        dtype = like.dtype
        like_category = (
            3
            if dtype.is_complex
            else 2
            if dtype.is_floating_point
            else 0
            if dtype == torch.bool
            else 1
        )
        if like_category == category:
            return dtype
    return default


_plans: dict[Any, OpPlan] = {}
_plans_lock = threading.Lock()


def plan_for(op: torch._ops.OpOverload) -> OpPlan:
    plan = _plans.get(op)
    if plan is not None:
        return plan
    schema = op._schema
    name = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    arguments = schema.arguments
    kinds = tuple(_argument_kind(a) for a in arguments)
    mutated = tuple(
        i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write
    )
    return_aliases = []
    for ret in schema.returns:
        alias = None
        if ret.alias_info is not None:
            for i, a in enumerate(arguments):
                if (
                    a.alias_info is not None
                    and a.alias_info.before_set == ret.alias_info.before_set
                ):
                    alias = i
                    break
        return_aliases.append(alias)
    return_types = [str(r.type) for r in schema.returns]
    returns_tensors = all(t in ("Tensor", "List[Tensor]") for t in return_types)
    has_generator = GENERATOR in kinds
    if has_generator or schema.name in IMPLICIT_RANDOM_OPS:
        route = "random"
    elif schema.name in HOST_OPS or name in HOST_OPS or not returns_tensors:
        route = "host"
    else:
        route = "compiled"
    plan = OpPlan(
        op=op,
        name=name,
        packet_name=schema.name,
        names=tuple(a.name for a in arguments),
        kinds=kinds,
        defaults=tuple(a.default_value if a.has_default_value() else None for a in arguments),
        kwarg_only=tuple(a.kwarg_only for a in arguments),
        mutated=mutated,
        return_aliases=tuple(return_aliases),
        returns_tensors=returns_tensors,
        returns_list=return_types == ["List[Tensor]"],
        route=route,
        has_generator=has_generator,
    )
    if route == "compiled" and (SCALAR in kinds or SCALAR_LIST in kinds):
        from torchneuron.device.scalars import rewrite_for

        rewrite = rewrite_for(op)
        if rewrite is not None:
            plan.rewrite = rewrite
            plan.lifted = frozenset(rewrite.positions) | frozenset(rewrite.list_positions)
    with _plans_lock:
        _plans[op] = plan
    return plan


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def run_op(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run one ATen op call whose dispatch key is PrivateUse1."""
    plan = _plans.get(op) or plan_for(op)
    values = plan.normalize(args, kwargs)
    device = _device_of(plan, values)
    route = plan.route
    if route == "compiled":
        return _run_compiled(plan, values, device)
    if route == "random":
        return _run_random(plan, values, device)
    return run_on_host(plan, values, device)


def _boxed_fallback(op, *args, **kwargs):
    return run_op(op, args, kwargs)


def _direct_kernel(op: torch._ops.OpOverload) -> Callable:
    def kernel(*args, **kwargs):
        return run_op(op, args, kwargs)

    kernel.__name__ = f"neuron_{op.__name__}"
    return kernel


def _device_error(first: torch.device, second: torch.device) -> RuntimeError:
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {second}!"
    )


def _device_of(plan: OpPlan, values: list) -> int:
    """The neuron device index of the call; raises when tensors are on different devices."""
    found: torch.device | None = None
    kinds = plan.kinds
    for position, value in enumerate(values):
        kind = kinds[position]
        if kind == TENSOR or kind == OPTIONAL_TENSOR:
            tensors = (value,) if value is not None else ()
        elif kind == TENSOR_LIST or kind == OPTIONAL_TENSOR_LIST:
            tensors = value or ()
        elif kind == DEVICE and value is not None and found is None:
            device = torch.device(value)
            if device.type == DEVICE_TYPE:
                found = torch.device(
                    DEVICE_TYPE, device.index if device.index is not None else _C.current_device()
                )
            continue
        else:
            continue
        for tensor in tensors:
            if not isinstance(tensor, torch.Tensor):
                continue  # None, or a Python number standing for a wrapped scalar
            device = tensor.device
            if device.type == DEVICE_TYPE:
                if found is None:
                    found = device
                elif device != found:
                    raise _device_error(found, device)
            elif tensor.dim() != 0:  # CPU 0-d tensors act as scalars, as on CUDA
                raise _device_error(found or device, device if found else _NEURON)
    if found is None:
        return _C.current_device()
    return found.index


# ---------------------------------------------------------------------------
# Compiled route
# ---------------------------------------------------------------------------


class _HostOnly:
    """Cache entry for a call signature that runs on the CPU, with the reason.

    ``data_dependent`` calls (output shape depends on values, e.g. boolean-mask
    indexing) run on the host by design, without a fallback warning.
    """

    __slots__ = ("data_dependent", "reason", "unsupported")

    def __init__(self, reason: str, unsupported: bool, data_dependent: bool = False):
        self.reason = reason
        self.unsupported = unsupported
        self.data_dependent = data_dependent


@dataclass
class _Entry:
    """A compiled op call: its program and how to turn program outputs into results."""

    compiled: eager.CompiledOp
    scalar_dtypes: tuple[np.dtype, ...]
    # (shape, stride, dtype) of each new output tensor, in return order (None: an undefined return)
    fresh: tuple[tuple | None, ...]
    # shape of each mutated tensor after the call; empty ones are not program outputs
    mutated_shapes: tuple[tuple[int, ...], ...] = ()
    # ``fresh`` without the Nones and the empty tensors: what the program returns
    fresh_metas: tuple[tuple, ...] = ()

    def __post_init__(self) -> None:
        self.fresh_metas = tuple(meta for meta in self.fresh if _computed(meta))


def _computed(meta: tuple | None) -> bool:
    """True for a new output the program computes (not undefined, not empty)."""
    return meta is not None and 0 not in meta[0]


_compiled: collections.OrderedDict[tuple, _Entry | _HostOnly] = collections.OrderedDict()
_compiled_lock = threading.RLock()


def _signature(plan: OpPlan, values: list) -> tuple[tuple, list[torch.Tensor], list]:
    """(cache key, flat tensor inputs, lifted scalar values) of one call."""
    key: list = [plan.op]
    tensors: list[torch.Tensor] = []
    scalars: list = []
    kinds = plan.kinds
    for position, value in enumerate(values):
        kind = kinds[position]
        if kind == TENSOR or (kind == OPTIONAL_TENSOR and value is not None):
            if not isinstance(value, torch.Tensor):
                # A Python number where a tensor goes (a wrapped scalar): a 0-d program input.
                scalars.append(value)
                key.append(("scalar", type(value).__name__))
                continue
            tensors.append(value)
            key.append(
                (
                    value.dtype,
                    value.shape,
                    None if value.is_contiguous() else value.stride(),
                    value.device.type,
                )
            )
        elif kind == TENSOR_LIST or kind == OPTIONAL_TENSOR_LIST:
            parts = []
            for item in value:
                if item is None:
                    parts.append(None)
                else:
                    tensors.append(item)
                    parts.append(
                        (
                            item.dtype,
                            item.shape,
                            None if item.is_contiguous() else item.stride(),
                            item.device.type,
                        )
                    )
            key.append(tuple(parts))
        elif kind == SCALAR and value is not None and position in plan.lifted:
            if _is_default(plan, position, value):
                # The schema's default (add's alpha=1): a constant, one input fewer.
                key.append(("default",))
                continue
            scalars.append(value)
            # bool < int < float < complex decide type promotion; the value does not.
            key.append(("scalar", type(value).__name__))
        elif kind == SCALAR_LIST and position in plan.lifted:
            scalars.extend(value)
            key.append(("scalars", tuple(type(v).__name__ for v in value)))
        elif kind == SCALAR:
            key.append(("static", type(value).__name__, value))
        elif kind == DEVICE:
            key.append(None if value is None else torch.device(value).type)
        elif isinstance(value, list):
            key.append(tuple(value))
        else:
            key.append(value)
    return tuple(key), tensors, scalars


def _is_default(plan: OpPlan, position: int, value: Any) -> bool:
    default = plan.defaults[position]
    return default is not None and type(value) is type(default) and value == default


def _run_compiled(plan: OpPlan, values: list, device: int) -> Any:
    key, tensors, scalars = _signature(plan, values)
    entry = _compiled.get(key)
    if entry is None:
        try:
            entry = _compile(plan, values, key, tensors, scalars)
        except _MetaRejected as rejection:
            # The shape function refused the call: the CPU kernel decides. It raises
            # PyTorch's own error for a bad call; if it accepts, this signature runs on host.
            result = run_on_host(plan, values, device)
            _remember(key, _HostOnly(rejection.reason, unsupported=False))
            fallback.record_fallback(plan.name, rejection.reason)
            return result
    else:
        _compiled.move_to_end(key)
    if type(entry) is _HostOnly:
        if not entry.data_dependent:
            fallback.record_fallback(plan.name, entry.reason)
        return run_on_host(plan, values, device)
    inputs = _C.host_arrays(tensors)
    if scalars:
        for value, dtype in zip(scalars, entry.scalar_dtypes):
            inputs.append(np.asarray(value, dtype=dtype))
    outputs = entry.compiled.execute(device, inputs)
    return _assemble(plan, values, entry, outputs, device)


def _assemble(plan: OpPlan, values: list, entry: _Entry, outputs: list, device: int) -> Any:
    created = _C.device_tensors_from(outputs, entry.fresh_metas, device)
    position = len(created)
    if len(created) == len(entry.fresh):
        fresh_outputs = created
    else:  # undefined returns (None) or empty tensors among them
        made = iter(created)
        fresh_outputs = [
            next(made) if _computed(meta) else _empty_output(meta, device) for meta in entry.fresh
        ]
    shapes = iter(entry.mutated_shapes)
    for arg_position in plan.mutated:
        value = values[arg_position]
        targets = value if isinstance(value, (list, tuple)) else (value,)
        for target in targets:
            shape = next(shapes)
            if 0 in shape:  # nothing to write: only the shape can change
                if tuple(target.shape) != shape:
                    target.resize_(shape)
                continue
            array = outputs[position]
            position += 1
            if tuple(target.shape) != array.shape:
                target.resize_(array.shape)  # out= arguments take the result's shape
            _C.write_array(target, array)
    if not plan.return_aliases:
        return None
    if plan.returns_list:
        alias = plan.return_aliases[0]
        return values[alias] if alias is not None else fresh_outputs
    results = []
    fresh_iter = iter(fresh_outputs)
    for alias in plan.return_aliases:
        results.append(values[alias] if alias is not None else next(fresh_iter))
    return results[0] if len(results) == 1 else tuple(results)


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
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, complex):
        return np.dtype(np.complex128 if any(t.is_complex() for t in tensors) else np.complex64)
    if any(t.is_floating_point() or t.is_complex() for t in tensors):
        return np.dtype(np.float64)
    return _numpy_dtype(torch.get_default_dtype())


def _compile(plan: OpPlan, values: list, key: tuple, tensors: list, scalars: list):
    """Trace and compile one call signature; remember the result (or why it runs on host)."""
    _register_numpy_views()  # every compiled entry runs after this
    specs = [eager.TensorSpec(tuple(t.shape), tuple(t.stride()), t.dtype) for t in tensors]
    try:
        fresh, mutated_shapes = _fresh_output_metadata(plan, values)
    except _MetaUnavailable as error:
        entry: _Entry | _HostOnly = _HostOnly(str(error), True, error.data_dependent)
        _remember(key, entry)
        return entry
    scalar_dtypes = tuple(_scalar_dtype(v, tensors) for v in scalars)
    # Empty new outputs need no computing (and torch-mlir cannot lower some empty constants).
    computed = tuple(_computed(meta) for meta in fresh if meta is not None)
    mutated_computed = tuple(0 not in shape for shape in mutated_shapes)
    traced_fn = _traceable(plan, values, len(tensors), scalar_dtypes, computed, mutated_computed)
    output_count = sum(computed) + sum(mutated_computed)
    try:
        compiled = eager.compile_op(
            plan.name,
            _stable_key(key),
            specs + [eager.TensorSpec((), (), _torch_dtype_of_numpy(d)) for d in scalar_dtypes],
            traced_fn,
            output_count,
        )
        entry = _Entry(compiled, scalar_dtypes, fresh, mutated_shapes)
    except eager.OpCompileError as error:
        entry = _HostOnly(error.reason, error.unsupported)
    _remember(key, entry)
    return entry


def _remember(key: tuple, entry) -> None:
    with _compiled_lock:
        _compiled[key] = entry
        while len(_compiled) > COMPILED_CACHE_ENTRIES:
            _, evicted = _compiled.popitem(last=False)
            if isinstance(evicted, _Entry):
                eager.forget(evicted.compiled)


def _torch_dtype_of_numpy(dtype: np.dtype) -> torch.dtype:
    return {
        np.dtype(np.bool_): torch.bool,
        np.dtype(np.int64): torch.int64,
        np.dtype(np.float64): torch.float64,
        np.dtype(np.float32): torch.float32,
        np.dtype(np.float16): torch.float16,
        np.dtype(np.complex64): torch.complex64,
        np.dtype(np.complex128): torch.complex128,
    }[dtype]


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


class _MetaUnavailable(Exception):
    def __init__(self, reason: str, data_dependent: bool = False):
        super().__init__(reason)
        self.data_dependent = data_dependent


class _MetaRejected(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _fresh_output_metadata(
    plan: OpPlan, values: list
) -> tuple[tuple[tuple | None, ...], tuple[tuple[int, ...], ...]]:
    """Shape, strides and dtype of each new tensor the op returns, from a fake-tensor run.

    A fake run reproduces the CPU kernel's argument checks, so user errors surface
    here with PyTorch's own message.
    """
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
    )

    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def fake(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="cpu")
        if isinstance(value, (list, tuple)):
            return type(value)(fake(v) for v in value)
        if isinstance(value, torch.device) and value.type == DEVICE_TYPE:
            return _CPU
        return value

    with mode:
        fake_values = [fake(v) for v in values]
        try:
            result = plan.call(fake_values)
        except (DynamicOutputShapeException, DataDependentOutputException) as error:
            raise _MetaUnavailable(
                f"its output shape depends on the data ({type(error).__name__})", True
            ) from None
        except (RuntimeError, IndexError, ValueError, TypeError) as error:
            if _is_user_error(error):
                raise _MetaRejected(f"its shape function rejected the call ({error})") from None
            raise _MetaUnavailable(f"no shape function ({type(error).__name__}: {error})") from None
        except Exception as error:
            raise _MetaUnavailable(f"no shape function ({type(error).__name__}: {error})") from None
    returns = result if isinstance(result, (tuple, list)) and not plan.returns_list else [result]
    if plan.returns_list:
        returns = [result]
    fresh = []
    for alias, value in zip(plan.return_aliases, returns):
        if alias is not None:
            continue
        items = value if plan.returns_list else [value]
        for item in items:
            if item is None:
                fresh.append(None)
            else:
                fresh.append((tuple(item.shape), tuple(item.stride()), item.dtype))
    # the shape each mutated argument has after the call (out= arguments are resized)
    mutated_shapes = []
    for position in plan.mutated:
        value = fake_values[position]
        for item in value if isinstance(value, (list, tuple)) else (value,):
            mutated_shapes.append(tuple(item.shape))
    return tuple(fresh), tuple(mutated_shapes)


def _is_user_error(error: Exception) -> bool:
    """True for argument errors the CPU kernel raises too; False for gaps of fake tensors."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )

    if isinstance(
        error,
        (
            DataDependentOutputException,
            DynamicOutputShapeException,
            UnsupportedOperatorException,
            NotImplementedError,
        ),
    ):
        return False
    text = str(error)
    return not any(marker in text for marker in ("meta", "Meta", "fake", "Fake", "not implemented"))


def _traceable(
    plan: OpPlan,
    values: list,
    tensor_count: int,
    scalar_dtypes: tuple,
    computed: tuple,
    mutated_computed: tuple,
) -> Callable:
    """A function of flat tensors (then lifted scalars, as 0-d tensors) that performs the call.

    Mutated arguments are cloned first, and returned after the op's new outputs,
    so functionalization turns the op into its functional form.
    """
    kinds = plan.kinds
    mutated = set(plan.mutated)
    lifted = plan.lifted
    perform = plan.rewrite.call if plan.rewrite is not None else plan.call

    def traced(*flat):
        tensors = iter(flat[:tensor_count])
        scalars = iter(flat[tensor_count:])
        call_values = []
        for position, value in enumerate(values):
            kind = kinds[position]
            if kind == TENSOR or (kind == OPTIONAL_TENSOR and value is not None):
                if not isinstance(value, torch.Tensor):
                    call_values.append(next(scalars))
                    continue
                new = next(tensors)
                if position in mutated:
                    new = new.clone()
                call_values.append(new)
            elif kind == TENSOR_LIST or kind == OPTIONAL_TENSOR_LIST:
                items = []
                for item in value:
                    if item is None:
                        items.append(None)
                    else:
                        new = next(tensors)
                        items.append(new.clone() if position in mutated else new)
                call_values.append(items)
            elif kind == SCALAR and value is not None and position in lifted:
                call_values.append(value if _is_default(plan, position, value) else next(scalars))
            elif kind == SCALAR_LIST and position in lifted:
                call_values.append([next(scalars) for _ in value])
            elif kind == DEVICE and value is not None:
                call_values.append(_CPU)
            else:
                call_values.append(value)
        result = perform(call_values)
        outputs = []
        if plan.returns_list:
            if plan.return_aliases[0] is None:
                outputs.extend(result)
        else:
            returns = result if isinstance(result, tuple) else (result,)
            for alias, value in zip(plan.return_aliases, returns):
                if alias is None and value is not None:
                    outputs.append(value)
        outputs = [value for value, wanted in zip(outputs, computed) if wanted]
        written = []
        for position in plan.mutated:
            value = call_values[position]
            written.extend(value if isinstance(value, list) else [value])
        outputs.extend(value for value, wanted in zip(written, mutated_computed) if wanted)
        return tuple(outputs)

    return traced


# ---------------------------------------------------------------------------
# Host routes: random numbers, data-dependent ops, CPU fallback
# ---------------------------------------------------------------------------


def run_on_host(plan: OpPlan, values: list, device: int) -> Any:
    """Run the op's CPU kernel on host aliases of the device tensors; results go to ``device``."""
    kinds = plan.kinds
    pairs: list[
        tuple[torch.Tensor, torch.Tensor]
    ] = []  # (device tensor, host alias) of mutated args
    mutated = set(plan.mutated)
    host_values = []
    for position, value in enumerate(values):
        kind = kinds[position]
        if kind == TENSOR or kind == OPTIONAL_TENSOR:
            host = _host(value)
            if position in mutated and host is not value:
                pairs.append((value, host))
            host_values.append(host)
        elif kind == TENSOR_LIST or kind == OPTIONAL_TENSOR_LIST:
            items = []
            for item in value:
                host = _host(item)
                if position in mutated and host is not item:
                    pairs.append((item, host))
                items.append(host)
            host_values.append(items)
        elif kind == DEVICE and value is not None and torch.device(value).type == DEVICE_TYPE:
            host_values.append(_CPU)
        else:
            host_values.append(value)
    result = plan.call(host_values)
    for device_tensor, host in pairs:
        _write_back(device_tensor, host)
    if not plan.return_aliases:
        return None
    if not plan.returns_tensors:
        return result
    target = torch.device(DEVICE_TYPE, device)
    if plan.returns_list:
        alias = plan.return_aliases[0]
        return values[alias] if alias is not None else [_to_device(t, target) for t in result]
    returns = result if isinstance(result, tuple) else (result,)
    converted = []
    for alias, value in zip(plan.return_aliases, returns):
        converted.append(values[alias] if alias is not None else _to_device(value, target))
    return converted[0] if len(converted) == 1 else tuple(converted)


def _host(value):
    if not isinstance(value, torch.Tensor) or value.device.type != DEVICE_TYPE:
        return value
    return _C.host_alias(value, True)


def _to_device(value, target: torch.device):
    if value is None or not isinstance(value, torch.Tensor):
        return value
    return value.to(target)


def _write_back(device_tensor: torch.Tensor, host: torch.Tensor) -> None:
    """Make ``device_tensor`` hold what the CPU kernel left in its alias ``host``."""
    same_memory = host.untyped_storage().data_ptr() == device_tensor.untyped_storage().data_ptr()
    if host.shape != device_tensor.shape:
        device_tensor.resize_(host.shape)
    elif (
        same_memory
        and host.stride() == device_tensor.stride()
        and host.storage_offset() == device_tensor.storage_offset()
    ):
        return  # written in place
    _C.host_alias(device_tensor).copy_(host)


def _run_random(plan: OpPlan, values: list, device: int) -> Any:
    """Draw with the device generator: the CPU engine, run with that generator's state."""
    generator = None
    generator_position = None
    if plan.has_generator:
        generator_position = plan.kinds.index(GENERATOR)
        generator = values[generator_position]
    if generator is None:
        generator = _C.default_generator(device)
    elif generator.device.type != DEVICE_TYPE:
        raise RuntimeError(
            f"Expected a '{DEVICE_TYPE}' device type for generator but found '{generator.device.type}'"
        )
    if generator_position is not None:
        values = list(values)
        values[generator_position] = None
    engine = torch.default_generator
    saved = engine.get_state()
    engine.set_state(generator.get_state())
    try:
        return run_on_host(plan, values, device)
    finally:
        generator.set_state(engine.get_state())
        engine.set_state(saved)


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

_libraries: list = []


def install() -> None:
    """Register the fallback and the direct kernels for the PrivateUse1 key (once)."""
    if _libraries:
        return
    global_library = torch.library.Library("_", "IMPL")
    global_library.fallback(_boxed_fallback, "PrivateUse1")
    _libraries.append(global_library)
    aten_library = torch.library.Library("aten", "IMPL")
    _libraries.append(aten_library)
    for name in _direct_kernel_ops():
        base, _, overload = name.partition(".")
        packet = getattr(aten, base[len("aten::") :], None)
        if packet is None:
            continue
        op = getattr(packet, overload or "default", None)
        if op is None:
            continue
        aten_library.impl(op, _direct_kernel(op), "PrivateUse1")
    # native_batch_norm updates the running statistics without saying so in its schema;
    # _native_batch_norm_legit is the same op with the mutation declared.
    aten_library.impl(aten.native_batch_norm.default, _native_batch_norm_kernel, "PrivateUse1")
    # Their defaults raise for every backend but CPU/CUDA: compute them like any op.
    for op in (
        aten.convolution_overrideable.default,
        aten.convolution_backward_overrideable.default,
    ):
        aten_library.impl(op, _convolution_kernel(op), "PrivateUse1")


# Ops compiled whole rather than through their default (CompositeExplicitAutograd)
# kernel: cummax/cummin's calls a helper that mutates its arguments and cannot be
# traced; the norms' and logsumexp's run step by step, rounding every intermediate
# to bfloat16, where the whole op's lowering computes in float32 and rounds once
# (as PyTorch's CPU and CUDA kernels do).
_WHOLE_OPS = (
    "aten::cummax",
    "aten::cummin",
    "aten::native_group_norm",
    "aten::native_layer_norm",
    "aten::_native_batch_norm_legit_no_training",
    "aten::logsumexp",
)


def _direct_kernel_ops() -> list[str]:
    """Functional ops whose default kernel would otherwise call ``empty`` + their ``.out``."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = list(_WHOLE_OPS)
    for name in torch._C._dispatch_get_all_op_names():
        if (
            name.startswith("aten::")
            and has(name, "CompositeExplicitAutogradNonFunctional")
            and not has(name, "PrivateUse1")
        ):
            names.append(name)
    return names


def _native_batch_norm_kernel(
    input, weight, bias, running_mean, running_var, training, momentum, eps
):
    if running_mean is None or running_var is None:
        return run_op(
            aten._native_batch_norm_legit.no_stats,
            (input, weight, bias, training, momentum, eps),
            {},
        )
    return run_op(
        aten._native_batch_norm_legit.default,
        (input, weight, bias, running_mean, running_var, training, momentum, eps),
        {},
    )


def _convolution_kernel(op: torch._ops.OpOverload) -> Callable:
    target = {
        "convolution_overrideable": aten.convolution.default,
        "convolution_backward_overrideable": aten.convolution_backward.default,
    }[op._schema.name.split("::")[1]]

    def kernel(*args, **kwargs):
        if target is aten.convolution_backward.default:
            (
                grad_output,
                input,
                weight,
                stride,
                padding,
                dilation,
                transposed,
                output_padding,
                groups,
                output_mask,
            ) = args
            # The bias has one value per output channel (the gradient's channel dim).
            bias_sizes = [grad_output.shape[1]] if output_mask[2] else None
            return run_op(
                target,
                (
                    grad_output,
                    input,
                    weight,
                    bias_sizes,
                    stride,
                    padding,
                    dilation,
                    transposed,
                    output_padding,
                    groups,
                    output_mask,
                ),
                {},
            )
        return run_op(target, args, kwargs)

    return kernel


def compiled_cache_info() -> dict[str, int]:
    """How many call signatures are compiled, and how many run on the CPU."""
    with _compiled_lock:
        entries = list(_compiled.values())
    return {
        "compiled": sum(isinstance(e, _Entry) for e in entries),
        "host": sum(isinstance(e, _HostOnly) for e in entries),
    }


def clear_compiled_cache() -> None:
    """Forget every compiled call signature (the disk cache stays)."""
    with _compiled_lock:
        entries = list(_compiled.values())
        _compiled.clear()
    for entry in entries:
        if isinstance(entry, _Entry):
            eager.forget(entry.compiled)
