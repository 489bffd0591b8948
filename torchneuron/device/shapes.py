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


def _check_inplace_result_type(plan: OpPlan, fake_values: list) -> None:
    """Refuse a call PyTorch's CPU kernel refuses (``lowering.refusals``), and an in-place
    pointwise op whose result type cannot be cast to ``self``'s.

    The CPU kernel checks it (``tensor([1]).mul_(2.5)``: "result type Float can't be
    cast to the desired output type Long"; ``sub_`` of a bool), the shape function
    does not; a refused call goes to the CPU kernel, which raises PyTorch's error, but
    one whose refusal carries an ``eager_error`` (the CPU kernel would crash or fail
    with an internal error) raises that at once.
    """
    from torchneuron.lowering.refusals import refusal  # (the lowering loads torch-mlir)

    reason = refusal(plan.op, fake_values)
    exponent = fake_values[plan.names.index("exponent")] if "exponent" in plan.names else None
    if plan.op._schema.name in ("aten::pow", "aten::pow_") and type(exponent) is int:
        self = fake_values[0]
        integral = isinstance(self, torch.Tensor) and not self.dtype.is_floating_point
        if integral and not self.dtype.is_complex and exponent < 0:
            # (compile mode's rule raises NegativeIntegerPowerError for the same call)
            reason = "Integers to negative integer powers are not allowed"
    if getattr(reason, "eager_error", None) is not None:
        raise reason.eager_error(f"{plan.name}: {reason}")
    if reason is not None:
        raise MetaRejected(reason)
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
