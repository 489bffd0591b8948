"""Output shapes of an op call before it is compiled: a fake-tensor run of the call.

The compiled route needs the shape, strides and dtype of each new tensor an op
returns, and the shape each mutated argument has afterwards (``out=`` arguments
are resized). A run under ``FakeTensorMode`` gives them without computing, and
reproduces the CPU kernel's argument checks, so a user's error surfaces with
PyTorch's own message.

How a failed fake run is read, by exception type:

- ``DynamicOutputShapeException``/``DataDependentOutputException``: the output
  shape depends on the data (``MetaUnavailable``, data-dependent: the call runs on
  the host by design, without a fallback warning);
- a gap of the shape functions (``NotImplementedError``, which is also what a
  missing Meta kernel raises, and fake tensors' own "unsupported" exceptions):
  ``MetaUnavailable``, the call falls back to the CPU;
- another error of the kinds PyTorch's argument checks raise (``RuntimeError``,
  ``IndexError``, ``ValueError``, ``TypeError``) is the shape function refusing the
  arguments (``MetaRejected``): the CPU kernel decides, raising PyTorch's error for
  a bad call, or running the call if it accepts it;
- any other exception: ``MetaUnavailable``.
"""

from __future__ import annotations

import logging
import math
import threading

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    MissingOpProfile,
    UnsupportedFakeTensorException,
    UnsupportedMutationAliasingException,
    UnsupportedOperatorException,
)

from torchneuron.device.plan import CPU, DEVICE_TYPE, OpPlan, new_returns

DATA_DEPENDENT_ERRORS = (DynamicOutputShapeException, DataDependentOutputException)
# What fake tensors raise where they have no shape function for a call.
SHAPE_FUNCTION_GAPS = (
    NotImplementedError,
    UnsupportedOperatorException,
    UnsupportedFakeTensorException,
    UnsupportedMutationAliasingException,
    MissingOpProfile,
)
# What PyTorch's argument checks raise (TORCH_CHECK and its kinds, torch._check_*).
ARGUMENT_ERRORS = (RuntimeError, IndexError, ValueError, TypeError)

# (shape, strides, dtype) of a new output, None for an undefined one
OutputMeta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


class _QuietWhileProbing(logging.Filter):
    """Drops the fake-tensor module's log of a failed shape function while we probe.

    It logs every failure of a shape function with its traceback at ERROR level; here
    a failure is an answer (the call is rejected, or runs elsewhere), and a user's bad
    argument already surfaces as PyTorch's own exception.
    """

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.local, "probing", False)


_quiet = _QuietWhileProbing()
logging.getLogger("torch._subclasses.fake_tensor").addFilter(_quiet)


def _functional_form(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``aten.mul.Tensor`` for ``aten.mul_.Tensor``; None when there is none."""
    name = op._schema.name.split("::")[-1]
    if not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    functional = getattr(packet, op._overloadname, None) if packet is not None else None
    if functional is None:
        return None
    # the same arguments (pow_.Scalar is pow.Tensor_Scalar, not pow.Scalar)
    ours = [(a.name, str(a.type)) for a in op._schema.arguments]
    theirs = [(a.name, str(a.type)) for a in functional._schema.arguments]
    return functional if ours == theirs else None


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


def _check_fill_value(plan: OpPlan, fake_values: list) -> None:
    if plan.op._schema.name not in _FILL_OPS or "value" not in plan.names:
        return
    target = fake_values[0]
    value = fake_values[plan.names.index("value")]
    if not isinstance(target, torch.Tensor) or isinstance(value, torch.Tensor):
        return
    if target.dtype.is_floating_point or target.dtype.is_complex or target.dtype == torch.bool:
        return
    info = torch.iinfo(target.dtype)
    fits = not isinstance(value, complex) and (not isinstance(value, float) or math.isfinite(value))
    if not (fits and info.min <= int(value) <= info.max):
        raise MetaRejected(
            f"value {value!r} cannot be converted to {target.dtype} without overflow"
        )


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
_MOMENTS = frozenset({"aten::var", "aten::std", "aten::var_mean", "aten::std_mean"})


def _check_bool_and_exponent(plan: OpPlan, fake_values: list) -> None:
    """Refusals of PyTorch's CPU kernels that their shape functions do not make.

    ``max()``/``min()`` of an empty tensor; ``argmax``/``argmin`` of a bool; ``std``/``var``
    of an integer; ``relu`` of a bool ("Boolean inputs not supported"); a bool clamped by Python
    scalars (no kernel: NotImplementedError); an integer raised to a Python integer
    exponent its dtype cannot hold ("value cannot be converted ... without overflow").
    """
    name = plan.op._schema.name
    self = fake_values[0] if fake_values else None
    if not isinstance(self, torch.Tensor):
        return
    if self.dim() == 0 and "dim" in plan.names:
        dim = fake_values[plan.names.index("dim")]
        if type(dim) is int and dim not in (-1, 0):
            # a 0-d tensor has dims -1 and 0 (sort's shape function lets dim=1 through)
            raise MetaRejected(f"dim {dim} is out of range for a 0-d tensor")
    if name in ("aten::max", "aten::min") and len(plan.names) == 1 and self.numel() == 0:
        raise MetaRejected(f"{name}() of an empty tensor needs a dim")
    if name in ("aten::argmax", "aten::argmin") and self.dtype == torch.bool:
        raise MetaRejected(f"{name}() does not support bool input")
    if name in _MOMENTS and not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise MetaRejected("std and var only support floating point and complex dtypes")
    if name in _BOOL_REFUSED and self.dtype == torch.bool:
        raise MetaRejected("relu of a bool tensor is not supported")
    if name in _BOOL_SCALAR_CLAMPS and self.dtype == torch.bool:
        bounds = [v for v in fake_values[1:3] if v is not None]
        if bounds and all(isinstance(v, (bool, int, float)) for v in bounds):
            raise MetaRejected("clamp of a bool tensor by Python scalars has no kernel")
    if name in _INTEGER_POWERS and "exponent" in plan.names:
        exponent = fake_values[plan.names.index("exponent")]
        integral = not (self.dtype.is_floating_point or self.dtype.is_complex)
        if integral and self.dtype != torch.bool and type(exponent) is int:
            info = torch.iinfo(self.dtype)
            if not info.min <= exponent <= info.max:
                raise MetaRejected(f"exponent {exponent} does not fit {self.dtype}")


def _check_inplace_result_type(plan: OpPlan, fake_values: list) -> None:
    """Refuse an in-place pointwise op whose result type cannot be cast to ``self``'s.

    The CPU kernel checks it (``tensor([1]).mul_(2.5)``: "result type Float can't be
    cast to the desired output type Long"; ``sub_`` of a bool), the shape function
    does not; a refused call goes to the CPU kernel, which raises PyTorch's error.
    """
    if plan.op._schema.name in ("aten::sub", "aten::sub_", "aten::rsub") and any(
        isinstance(v, bool) or (isinstance(v, torch.Tensor) and v.dtype == torch.bool)
        for v in fake_values[:2]
    ):
        # sub_check of the CPU kernel: the shape function lets bool through
        raise MetaRejected("subtraction with a bool tensor is not supported")
    _check_fill_value(plan, fake_values)
    _check_bool_and_exponent(plan, fake_values)
    if plan.mutated != (0,) or torch.Tag.pointwise not in plan.op.tags:
        return
    functional = _functional_form(plan.op)
    if functional is None:
        return
    args, kwargs = [], {}
    for argument, value in zip(functional._schema.arguments, fake_values):
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            args.append(value)
    try:
        result = functional(*args, **kwargs)
    except Exception as error:  # the functional form refuses the arguments outright
        raise MetaRejected(f"its functional form rejected the call ({error})") from None
    target = fake_values[0]
    if isinstance(result, torch.Tensor) and not torch.can_cast(result.dtype, target.dtype):
        raise MetaRejected(
            f"result type {result.dtype} can't be cast to the desired output type {target.dtype}"
        )


class MetaUnavailable(Exception):
    """The call has no shape function (or its shape depends on the data)."""

    def __init__(self, reason: str, data_dependent: bool = False):
        super().__init__(reason)
        self.data_dependent = data_dependent


class MetaRejected(Exception):
    """The shape function refused the call's arguments."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _fake(value):
    """A CPU stand-in of ``value`` for the fake run (device tensors and devices become CPU)."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_fake(v) for v in value)
    if isinstance(value, torch.device) and value.type == DEVICE_TYPE:
        return CPU
    return value


def output_metadata(
    plan: OpPlan, values: list
) -> tuple[tuple[OutputMeta | None, ...], tuple[tuple[int, ...], ...]]:
    """(meta of each new tensor the op returns, shape of each mutated tensor after the call).

    Raises ``MetaUnavailable`` or ``MetaRejected`` (see the module docstring).
    """
    with FakeTensorMode(allow_non_fake_inputs=True):
        fake_values = [_fake(v) for v in values]
        _quiet.local.probing = True
        try:
            result = plan.call(fake_values)
        except DATA_DEPENDENT_ERRORS as error:
            raise MetaUnavailable(
                f"its output shape depends on the data ({type(error).__name__})", True
            ) from None
        except SHAPE_FUNCTION_GAPS as error:
            raise MetaUnavailable(f"no shape function ({type(error).__name__}: {error})") from None
        except ARGUMENT_ERRORS as error:
            raise MetaRejected(f"its shape function rejected the call ({error})") from None
        except Exception as error:
            raise MetaUnavailable(f"no shape function ({type(error).__name__}: {error})") from None
        finally:
            _quiet.local.probing = False
        _check_inplace_result_type(plan, fake_values)
    fresh = tuple(
        None if item is None else (tuple(item.shape), tuple(item.stride()), item.dtype)
        for item in new_returns(plan, result)
    )
    mutated_shapes = []
    for position in plan.mutated:
        value = fake_values[position]
        for item in value if isinstance(value, (list, tuple)) else (value,):
            mutated_shapes.append(tuple(item.shape))
    return fresh, tuple(mutated_shapes)
