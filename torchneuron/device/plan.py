"""The plan of an ATen op for the device, built once from its schema, and the walks over a call.

``plan_for(op)`` reads the op's schema once: how each argument is handled (``ArgKind``),
which arguments the op writes, which returns alias an argument, and the route its
calls take (``Route``). Every walk over a call's arguments or returns goes through
the four functions here:

- ``flatten(plan, values)``: the call's device, its compiled-cache key, its tensors
  in order and its lifted Python scalars (one pass; the per-op hot path);
- ``unflatten(plan, values, tensors, scalars)``: the inverse, the argument values
  with other tensors (host aliases, traced inputs) and scalars put in their places;
- ``new_returns(plan, result)``: the tensors an op call created (not the aliased
  arguments it returns), in return order;
- ``pack_returns(plan, values, new)``: the op's return value built from new tensors
  and the aliased arguments.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Any

import torch

from torchneuron.device import _C
from torchneuron.device.out_shapes import out_position
from torchneuron.device.promotion import dtype_rule_for
from torchneuron.target.topology import DEVICE_TYPE

NEURON = torch.device(DEVICE_TYPE)
CPU = torch.device("cpu")

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


class ArgKind(enum.IntEnum):
    """How a schema argument is handled."""

    TENSOR = enum.auto()
    OPTIONAL_TENSOR = enum.auto()
    TENSOR_LIST = enum.auto()
    OPTIONAL_TENSOR_LIST = enum.auto()
    SCALAR = enum.auto()  # a number: a program input where the plan lifts it, else static
    SCALAR_LIST = enum.auto()
    GENERATOR = enum.auto()
    DEVICE = enum.auto()
    STATIC = enum.auto()  # anything else: part of the cache key, baked into the program


class Route(enum.StrEnum):
    """Where a call runs: the one enum of the eager routes.

    ``plan_for`` picks an op's route from its schema (``COMPILED``, ``RANDOM`` or
    ``HOST``; ``torchneuron.device.dispatch``); a ``COMPILED`` op's call signature then
    gets a cache entry whose route is the rest of the decision, made once per signature
    (``torchneuron.device.compiled``).
    """

    COMPILED = "compiled"  # a program compiled for the call signature, on the NeuronCore
    PADDED = "padded"  # the signature's shape class's program, at the next bucket (``padded``)
    RANDOM = "random"  # the CPU kernel with the device generator's state
    HOST = "host"  # the CPU kernel by design: data-dependent shapes, host values
    COMPLEX = "complex"  # complex values as real ops on real pairs (``complex_route``)
    FALLBACK = "fallback"  # no program: the CPU kernel, recorded as a CPU fallback
    # the shape function refused the call: the CPU kernel decides (never cached as such)
    REJECTED = "rejected"


# Module-level names: the walks below compare kinds by identity on every call.
TENSOR = ArgKind.TENSOR
OPTIONAL_TENSOR = ArgKind.OPTIONAL_TENSOR
TENSOR_LIST = ArgKind.TENSOR_LIST
OPTIONAL_TENSOR_LIST = ArgKind.OPTIONAL_TENSOR_LIST
SCALAR = ArgKind.SCALAR
SCALAR_LIST = ArgKind.SCALAR_LIST
GENERATOR = ArgKind.GENERATOR
DEVICE = ArgKind.DEVICE
STATIC = ArgKind.STATIC

_KIND_OF_TYPE = {
    "Tensor": TENSOR,
    "Optional[Tensor]": OPTIONAL_TENSOR,
    "List[Tensor]": TENSOR_LIST,
    "List[Optional[Tensor]]": OPTIONAL_TENSOR_LIST,
    "number": SCALAR,
    "Optional[number]": SCALAR,
    "List[number]": SCALAR_LIST,
    "Optional[Generator]": GENERATOR,
    "Device": DEVICE,
    "Optional[Device]": DEVICE,
}


def argument_kind(argument: torch._C.Argument) -> ArgKind:
    return _KIND_OF_TYPE.get(str(argument.type), STATIC)


def binding_takes_numbers_as_tensors(op: torch._ops.OpOverload) -> bool:
    """Whether ``op``'s Python binding accepts a Python number where its schema has a Tensor.

    The binding converts arguments with the JIT's ``toIValue``, which takes numbers
    for Tensors only for prims and for the few ATen ops PyTorch lists
    (``add``, ``mul``, ``div``, ``sub``, ... : ``torch._C._should_allow_numbers_as_tensors``).
    """
    namespace, _, name = op._schema.name.partition("::")
    if namespace in ("prims", "nvprims"):
        return True
    return namespace == "aten" and torch._C._should_allow_numbers_as_tensors(name)


@dataclass
class OpPlan:
    op: torch._ops.OpOverload
    name: str  # aten::add.Tensor
    names: tuple[str, ...]
    kinds: tuple[ArgKind, ...]
    defaults: tuple[Any, ...]
    kwarg_only: tuple[bool, ...]
    mutated: tuple[int, ...]  # argument positions written by the op
    # per return: position of the argument it is (an in-place/out= result), or None for a new tensor
    return_aliases: tuple[int | None, ...]
    returns_tensors: bool
    returns_list: bool
    route: Route
    has_generator: bool
    # positions of Tensor and Optional[Tensor] arguments
    tensor_positions: tuple[int, ...]
    # A Python number in a Tensor position (a wrapped scalar) must become a 0-d tensor
    # before the op's Python binding is called (see ``binding_takes_numbers_as_tensors``).
    numbers_need_tensors: bool
    # Scalar arguments that are program inputs, and how to call the op with tensors there
    lifted: frozenset = frozenset()
    rewrite: Any = None
    # position of the index list of an advanced-indexing op, whose index tensors may
    # live on the CPU (PyTorch moves them to the indexed tensor's device)
    host_indices: int | None = None
    # the CPU kernel's type promotion where the shape function's differs (``promotion``)
    dtype_rule: tuple | None = None
    # position of the out= argument a sequence op keeps the shape of (``out_shapes``)
    kept_out: int | None = None

    def normalize(self, args: tuple, kwargs: dict) -> list:
        values = list(args)
        if len(values) < len(self.names):
            names, defaults = self.names, self.defaults
            for position in range(len(values), len(names)):
                values.append(kwargs.get(names[position], defaults[position]))
        return values

    def call(self, values: list) -> Any:
        """Call the op with ``values`` in schema order (keyword-only ones by name)."""
        if self.numbers_need_tensors:
            values = _numbers_as_tensors(self, values)
        args = []
        kwargs = {}
        for position, value in enumerate(values):
            if self.kwarg_only[position]:
                kwargs[self.names[position]] = value
            else:
                args.append(value)
        return self.op(*args, **kwargs)


_NUMBER_TYPES = (bool, int, float, complex)


def _numbers_as_tensors(plan: OpPlan, values: list) -> list:
    """``values`` with numbers in Tensor positions as 0-d tensors that promote like them.

    A wrapped number does not take part in type promotion unless its category
    (bool < integer < float < complex) is higher than the tensors', so it becomes a
    tensor of the first tensor operand's dtype when that is of the same category, and
    of the default dtype of its category otherwise.
    """
    converted = None
    for position in plan.tensor_positions:
        value = values[position]
        if isinstance(value, _NUMBER_TYPES):
            if converted is None:
                converted = list(values)
                like = next((v for v in values if isinstance(v, torch.Tensor)), None)
            dtype = _wrapped_dtype(value, like)
            if isinstance(value, int) and not dtype.is_floating_point and dtype != torch.bool:
                bits = torch.iinfo(dtype).bits  # PyTorch casts the scalar, wrapping it
                value = (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
                if dtype == torch.uint8:
                    value %= 256
            converted[position] = torch.tensor(value, dtype=dtype)
    return values if converted is None else converted


def _category(dtype: torch.dtype) -> int:
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype == torch.bool else 1


def _wrapped_dtype(value: Any, like: torch.Tensor | None) -> torch.dtype:
    if isinstance(value, bool):
        category, default = 0, torch.bool
    elif isinstance(value, int):
        category, default = 1, torch.int64
    elif isinstance(value, float):
        category, default = 2, torch.get_default_dtype()
    else:
        category, default = 3, torch.complex64
    if like is not None and _category(like.dtype) == category:
        return like.dtype
    return default


# op -> its plan (run_op reads it directly: a dict lookup per call)
plans_by_op: dict[Any, OpPlan] = {}
_plans_lock = threading.Lock()


def plan_for(op: torch._ops.OpOverload) -> OpPlan:
    plan = plans_by_op.get(op)
    if plan is not None:
        return plan
    schema = op._schema
    name = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    arguments = schema.arguments
    kinds = tuple(argument_kind(a) for a in arguments)
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
        route = Route.RANDOM
    elif schema.name in HOST_OPS or name in HOST_OPS or not returns_tensors:
        route = Route.HOST
    else:
        route = Route.COMPILED
    plan = OpPlan(
        op=op,
        name=name,
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
        tensor_positions=tuple(
            i for i, kind in enumerate(kinds) if kind is TENSOR or kind is OPTIONAL_TENSOR
        ),
        numbers_need_tensors=not binding_takes_numbers_as_tensors(op),
        host_indices=_index_list_position(schema.name, arguments),
        dtype_rule=dtype_rule_for(op) if route is Route.COMPILED else None,
        kept_out=out_position(op),
    )
    if route is Route.COMPILED and (SCALAR in kinds or SCALAR_LIST in kinds):
        from torchneuron.device.scalars import rewrite_for

        rewrite = rewrite_for(op)
        if rewrite is not None:
            plan.rewrite = rewrite
            plan.lifted = frozenset(rewrite.positions) | frozenset(rewrite.list_positions)
    with _plans_lock:
        plans_by_op[op] = plan
    return plan


# Advanced indexing takes index tensors from the CPU for a tensor on a device
# (``t[cpu_index]``, ``t[cpu_mask] = v``, ``index_put_``), as PyTorch does on CUDA.
_INDEXING_OPS = frozenset(
    {
        "aten::index",
        "aten::index_put",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::_unsafe_index",
        "aten::_unsafe_index_put",
    }
)


def _index_list_position(name: str, arguments) -> int | None:
    if name not in _INDEXING_OPS:
        return None
    for position, argument in enumerate(arguments):
        if argument.name == "indices" and argument_kind(argument) is OPTIONAL_TENSOR_LIST:
            return position
    return None


# ---------------------------------------------------------------------------
# Arguments: flatten and unflatten
# ---------------------------------------------------------------------------


def _device_error(first: torch.device, second: torch.device) -> RuntimeError:
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {second}!"
    )


def flatten(plan: OpPlan, values: list) -> tuple[int, tuple, list, list]:
    """(device index, cache key, tensors, lifted scalars) of one call, in one pass.

    The device is the neuron device of the tensors (or of a ``device=`` argument),
    the current device when there is none; tensors on two devices raise. CPU 0-d
    tensors act as scalars, as on CUDA. The key holds what a compiled program depends
    on: each tensor's dtype, shape and strides (when not contiguous), the types (not
    values) of lifted scalars, and every other argument's value. ``tensors`` lists the
    call's tensors in argument order; ``scalars`` the Python numbers that are program
    inputs (numbers in Tensor positions, lifted Scalar arguments not at their default).
    """
    # the default dtype decides the result type of factory ops and of int / int
    key: list = [plan.op, torch.get_default_dtype()]
    tensors: list[torch.Tensor] = []
    scalars: list = []
    found: torch.device | None = None
    kinds = plan.kinds
    lifted = plan.lifted
    for position, value in enumerate(values):
        kind = kinds[position]
        if kind is TENSOR or kind is OPTIONAL_TENSOR:
            if isinstance(value, torch.Tensor):
                device = value.device
                if device.type == DEVICE_TYPE:
                    if found is None:
                        found = device
                    elif device != found:
                        raise _device_error(found, device)
                elif value.dim() != 0:
                    raise _device_error(found or device, device if found else NEURON)
                tensors.append(value)
                key.append(
                    (
                        value.dtype,
                        value.shape,
                        None if value.is_contiguous() else value.stride(),
                        device.type,
                    )
                )
            elif value is None and kind is OPTIONAL_TENSOR:
                key.append(None)
            else:
                # A Python number where a tensor goes (a wrapped scalar): a 0-d program input.
                scalars.append(value)
                key.append(("scalar", type(value).__name__))
        elif kind is TENSOR_LIST or kind is OPTIONAL_TENSOR_LIST:
            parts = []
            for item in value:
                if isinstance(item, torch.Tensor):
                    device = item.device
                    if device.type == DEVICE_TYPE:
                        if found is None:
                            found = device
                        elif device != found:
                            raise _device_error(found, device)
                    elif item.dim() != 0:
                        raise _device_error(found or device, device if found else NEURON)
                    tensors.append(item)
                    parts.append(
                        (
                            item.dtype,
                            item.shape,
                            None if item.is_contiguous() else item.stride(),
                            device.type,
                        )
                    )
                elif item is None:
                    parts.append(None)
                else:  # a number: it stays as it is
                    parts.append(("static", item))
            key.append(tuple(parts))
        elif kind is SCALAR and value is not None and position in lifted:
            default = plan.defaults[position]
            if default is not None and type(value) is type(default) and value == default:
                # The schema's default (add's alpha=1): a constant, one input fewer.
                key.append(("default",))
                continue
            scalars.append(value)
            # bool < int < float < complex decide type promotion; the value does not.
            key.append(("scalar", type(value).__name__))
        elif kind is SCALAR_LIST and position in lifted:
            scalars.extend(value)
            key.append(("scalars", tuple(type(v).__name__ for v in value)))
        elif kind is SCALAR:
            key.append(("static", type(value).__name__, value))
        elif kind is DEVICE:
            if value is None:
                key.append(None)
                continue
            device = torch.device(value)
            key.append(device.type)
            if found is None and device.type == DEVICE_TYPE:
                found = torch.device(
                    DEVICE_TYPE, device.index if device.index is not None else _C.current_device()
                )
        elif isinstance(value, list):
            key.append(tuple(value))
        else:
            key.append(value)
    return (
        _C.current_device() if found is None else found.index,
        tuple(key),
        tensors,
        scalars,
    )


def is_default(plan: OpPlan, position: int, value: Any) -> bool:
    """True when a lifted Scalar argument holds the schema's default (``flatten`` keeps it)."""
    default = plan.defaults[position]
    return default is not None and type(value) is type(default) and value == default


def unflatten(plan: OpPlan, values: list, tensors, scalars=None) -> list:
    """``values`` with ``tensors`` (an iterator, in ``flatten``'s order) in the tensors' places.

    With ``scalars`` (an iterator in ``flatten``'s order), the lifted scalars and the
    numbers in Tensor positions are taken from it too; without, they stay as they are.
    Neuron ``device=`` arguments become the CPU: the result is a call of the CPU kernel
    (on host aliases) or of the op being traced.
    """
    kinds = plan.kinds
    lifted = plan.lifted
    unflattened = []
    for position, value in enumerate(values):
        kind = kinds[position]
        if kind is TENSOR or kind is OPTIONAL_TENSOR:
            if isinstance(value, torch.Tensor):
                value = next(tensors)
            elif scalars is not None and not (value is None and kind is OPTIONAL_TENSOR):
                value = next(scalars)
        elif kind is TENSOR_LIST or kind is OPTIONAL_TENSOR_LIST:
            value = [next(tensors) if isinstance(item, torch.Tensor) else item for item in value]
        elif kind is DEVICE:
            if value is not None and torch.device(value).type == DEVICE_TYPE:
                value = CPU
        elif scalars is not None and position in lifted:
            if kind is SCALAR_LIST:
                value = [next(scalars) for _ in value]
            elif value is not None and not is_default(plan, position, value):
                value = next(scalars)
        unflattened.append(value)
    return unflattened


# ---------------------------------------------------------------------------
# Returns: the new tensors of a call, and the return value built from them
# ---------------------------------------------------------------------------


def new_returns(plan: OpPlan, result: Any) -> list:
    """The tensors the call created, in return order (a list return expanded; None kept)."""
    if plan.returns_list:
        return list(result) if plan.return_aliases[0] is None else []
    returns = result if isinstance(result, (tuple, list)) else (result,)
    return [value for alias, value in zip(plan.return_aliases, returns) if alias is None]


def pack_returns(plan: OpPlan, values: list, new: list) -> Any:
    """The op's return value: ``new`` tensors (in return order) and the aliased arguments."""
    aliases = plan.return_aliases
    if not aliases:
        return None
    if plan.returns_list:
        alias = aliases[0]
        return values[alias] if alias is not None else new
    if len(aliases) == 1:
        alias = aliases[0]
        return values[alias] if alias is not None else new[0]
    made = iter(new)
    return tuple(values[alias] if alias is not None else next(made) for alias in aliases)
