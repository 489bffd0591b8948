"""Calls PyTorch's CPU kernels refuse but its shape functions let through.

Both modes trace ops through shape functions (fake tensors), which skip some of
the checks the CPU kernels make; such a call would then compile and return a
plausible value where PyTorch raises. ``refusal(op, values)`` names the problem
(or returns None) from the call's arguments in schema order, tensors given as
fake or real tensors. Eager mode then runs the call on the CPU kernel, which
raises PyTorch's own error; compile mode refuses the graph (``RefusedCallError``),
so it runs eagerly and raises there, or fails clearly with fallback disabled.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .errors import LoweringError


class RefusedCallError(LoweringError):
    """A graph holds a call PyTorch refuses (``refusal`` says why)."""


class NoKernelError(RefusedCallError, NotImplementedError):
    """A graph holds a call PyTorch's CPU has no kernel for (it raises NotImplementedError)."""


class Refusal(str):
    """Why a call is refused; ``error`` is the exception class compile mode raises.

    ``eager_error``, where set, is what eager mode raises at once instead of running
    the CPU kernel (whose own error would be unclear, or a crash).
    """

    error: type[RefusedCallError] = RefusedCallError
    eager_error: type[Exception] | None = None


class NoKernel(Refusal):
    error = NoKernelError


class Malformed(Refusal):
    """PyTorch's CPU kernel fails on the call with an internal error (``index_put`` with
    no index tensor: "sym_strides() called on an undefined Tensor", an INTERNAL ASSERT)."""

    eager_error = RuntimeError


def refused(op, reason: Refusal) -> RefusedCallError:
    """The exception for ``op`` refused for ``reason``."""
    return reason.error(f"{op}: {reason} (PyTorch raises for this call)")


# Ops that write a Scalar ``value`` into ``self``'s dtype; the CPU kernel refuses a value
# that overflows it ("value cannot be converted to type int8_t without overflow").
_FILL_OPS = frozenset(
    {
        "aten::fill",
        "aten::fill_",
        "aten::masked_fill",
        "aten::masked_fill_",
        "aten::index_fill",
        "aten::index_fill_",
    }
)
_SUBTRACTIONS = frozenset({"aten::sub", "aten::sub_", "aten::rsub"})
_BOOL_REFUSED = frozenset({"aten::relu", "aten::relu_"})
_BOOL_SCALAR_CLAMPS = frozenset(
    {
        "aten::clamp",
        "aten::clamp_",
        "aten::clamp_min",
        "aten::clamp_min_",
        "aten::clamp_max",
        "aten::clamp_max_",
    }
)
_INTEGER_POWERS = frozenset({"aten::pow", "aten::pow_"})
_SORTS = frozenset({"aten::sort", "aten::argsort"})
_MOMENTS = frozenset({"aten::var", "aten::std", "aten::var_mean", "aten::std_mean"})
# Advanced indexing: ``indices`` (the second argument) lists one optional tensor per dim.
# Their shape functions let a list with no tensor, or more entries than dims, through;
# torch-mlir's index_put decomposition then crashes in native code.
_ADVANCED_INDEXING = frozenset(
    {
        "aten::index",
        "aten::_unsafe_index",
        "aten::index_put",
        "aten::index_put_",
        "aten::_index_put_impl",
        "aten::_index_put_impl_",
        "aten::_unsafe_index_put",
    }
)


def refusal(op: torch._ops.OpOverload, values: list) -> Refusal | None:
    reason = _reason(op, values)
    if reason is None or isinstance(reason, Refusal):
        return reason
    return Refusal(reason)


def _reason(op: torch._ops.OpOverload, values: list) -> str | None:
    """Why PyTorch's CPU kernel refuses ``op(*values)`` when its shape function does not."""
    name = op._schema.name
    names = [argument.name for argument in op._schema.arguments]
    self = values[0] if values else None
    if name in _SUBTRACTIONS and any(_is_bool(v) for v in values[:2]):
        return "subtraction with a bool tensor is not supported"
    if not isinstance(self, torch.Tensor):
        return None
    if name in _ADVANCED_INDEXING and isinstance(values[1], (list, tuple)):
        return _indices_reason(self, values[1])
    if self.dim() == 0 and "dim" in names:
        dim = values[names.index("dim")]
        if type(dim) is int and dim not in (-1, 0):
            # a 0-d tensor has dims -1 and 0 (sort's shape function lets dim=1 through)
            return f"dim {dim} is out of range for a 0-d tensor"
    if name in _SORTS and type(values[names.index("dim")]) is int:
        dim, rank = values[names.index("dim")], max(self.dim(), 1)
        if not -rank <= dim < rank:  # sort's shape function skips the check on empty input
            return f"dim {dim} is out of range for a {self.dim()}-d tensor"
    if name in ("aten::heaviside", "aten::heaviside_") and isinstance(values[1], torch.Tensor):
        if values[1].dtype != self.dtype:
            return "heaviside is not yet implemented for tensors with different dtypes"
    if name in ("aten::max", "aten::min") and len(names) == 1 and self.numel() == 0:
        return f"{name}() of an empty tensor needs a dim"
    if name in ("aten::argmax", "aten::argmin") and self.dtype == torch.bool:
        return f"{name}() does not support bool input"
    if name in _MOMENTS and not (self.dtype.is_floating_point or self.dtype.is_complex):
        return "std and var only support floating point and complex dtypes"
    if name in _BOOL_REFUSED and self.dtype == torch.bool:
        return "relu of a bool tensor is not supported"
    if name in _BOOL_SCALAR_CLAMPS and self.dtype == torch.bool:
        bounds = [v for v in values[1:3] if v is not None]
        if bounds and all(isinstance(v, (bool, int, float)) for v in bounds):
            return NoKernel("clamp of a bool tensor by Python scalars has no kernel")
    if name in _INTEGER_POWERS and "exponent" in names:
        exponent = values[names.index("exponent")]
        if _integral(self) and type(exponent) is int and not _fits(exponent, self.dtype):
            return f"exponent {exponent} does not fit {self.dtype}"
    if name in _FILL_OPS and "value" in names and _integral(self):
        value = values[names.index("value")]
        if not isinstance(value, torch.Tensor) and not _fits(value, self.dtype):
            return f"value {value!r} cannot be converted to {self.dtype} without overflow"
    return None


def _indices_reason(self: torch.Tensor, indices: list | tuple) -> str | None:
    if len(indices) > self.dim():
        return f"too many indices for tensor of dimension {self.dim()} (got {len(indices)})"
    if all(index is None for index in indices):  # (an index is a tensor, or its graph node)
        return Malformed(f"indexing needs at least one index tensor, got indices={list(indices)!r}")
    return None


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and value.dtype == torch.bool
    )


def _integral(tensor: torch.Tensor) -> bool:
    dtype = tensor.dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def _fits(value: Any, dtype: torch.dtype) -> bool:
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        return False
    info = torch.iinfo(dtype)
    return info.min <= int(value) <= info.max


def refuse_graph_calls(graph: torch.fx.Graph) -> None:
    """Raise ``RefusedCallError`` for the first call in ``graph`` PyTorch would refuse."""
    for node in graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        values = _schema_values(node)
        reason = refusal(node.target, values) if values is not None else None
        if reason is not None:
            raise refused(node.target, reason)


def _schema_values(node: torch.fx.Node) -> list | None:
    arguments = node.target._schema.arguments
    values = []
    for position, argument in enumerate(arguments):
        if position < len(node.args):
            value = node.args[position]
        elif argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        elif argument.has_default_value():
            value = argument.default_value
        else:
            return None
        if isinstance(value, torch.fx.Node):
            value = value.meta.get("val")
        values.append(value)
    return values
