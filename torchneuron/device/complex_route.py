"""The complex route: an op call on complex values run as real ops on their real pairs.

A call that touches a complex tensor (an input, a complex dtype or number argument,
or an op that makes complex values from real ones) never reaches the per-op
compiler, whose torch-mlir import has no complex lowering. Its rule in
``torchneuron.lowering.complex_pairs`` is called on ``Pair``s of ``view_as_real``
views of the device tensors; every op of the rule is an ordinary real op on the
device (compiled, fused, asynchronous). A complex result is returned as
``view_as_complex`` of its stacked pair. In-place and ``out=`` forms compute the
functional op and copy the result into the written argument.

A call without a rule runs on the CPU, listed by ``get_fallback_ops``, or raises
under ``TORCHNEURON_NO_FALLBACK=1``.
"""

from __future__ import annotations

from typing import Any

import torch

from torchneuron.device import fallback
from torchneuron.device.host import run_on_host
from torchneuron.device.plan import DEVICE_TYPE, OpPlan

aten = torch.ops.aten

# Ops that make complex values from real operands.
_MAKES_COMPLEX = frozenset(
    {
        "aten::polar",
        "aten::complex",
        "aten::_fft_r2c",
        "aten::view_as_complex",
    }
)


def touches_complex(plan: OpPlan, values: list) -> bool:
    """Whether the call has a complex tensor, dtype or number among its arguments."""
    if plan.op._schema.name in _MAKES_COMPLEX:
        return True
    for value in values:
        if isinstance(value, torch.Tensor):
            if value.dtype.is_complex:
                return True
        elif isinstance(value, (list, tuple)):
            if any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in value):
                return True
        elif isinstance(value, complex) or (isinstance(value, torch.dtype) and value.is_complex):
            return True
    return False


def _pairs():
    """``lowering.complex_pairs``, imported at the first complex call: importing the
    lowering package loads torch-mlir, which ``import torch`` must not (the device's
    cheap-import rule)."""
    from torchneuron.lowering import complex_pairs

    return complex_pairs


def _as_pair(value: Any) -> Any:
    Pair = _pairs().Pair
    if isinstance(value, torch.Tensor) and value.dtype.is_complex:
        return Pair.of_stacked(torch.view_as_real(value.resolve_conj().resolve_neg()))
    if isinstance(value, (list, tuple)):
        return type(value)(_as_pair(v) for v in value)
    return value


def _as_complex(value: Any) -> Any:
    if isinstance(value, _pairs().Pair):
        return torch.view_as_complex(value.stacked())
    if isinstance(value, (list, tuple)):
        return type(value)(_as_complex(v) for v in value)
    return value


def _functional(plan: OpPlan):
    """The functional overload of an in-place or out= op, and the written argument's
    position (``mul_.Tensor`` -> ``mul.Tensor``, 0; ``abs.out`` -> ``abs.default``, 1)."""
    base = plan.op._schema.name.split("::")[1]
    overload = plan.op._overloadname
    if base.endswith("_") and plan.mutated == (0,):
        packet = getattr(aten, base[:-1], None)
        op = getattr(packet, overload, None) if packet is not None else None
        return op, 0
    if overload == "out" and len(plan.mutated) == 1 and plan.names[plan.mutated[0]] == "out":
        # the functional overload taking the same arguments but ``out``
        packet = getattr(aten, base, None)
        names = [n for n in plan.names if n != "out"]
        for name in packet.overloads() if packet is not None else ():
            op = getattr(packet, name)
            if [a.name for a in op._schema.arguments] == names and not any(
                a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments
            ):
                return op, plan.mutated[0]
    return None, None


def run_complex(plan: OpPlan, values: list, tensors: list, device: int) -> Any:
    """Run a call that touches complex values (see the module's docstring)."""
    complex_pairs = _pairs()
    op = plan.op
    target = None
    if plan.mutated:
        functional, written = _functional(plan)
        if functional is not None and complex_pairs.has_rule(functional):
            op, target = functional, values[written]
        else:
            return _on_host(plan, values, tensors, device, "an in-place or out= form")
    if not complex_pairs.has_rule(op):
        return _on_host(plan, values, tensors, device, "no real-pair rule")
    args, kwargs = [], {}
    for position, value in enumerate(values[: len(op._schema.arguments)]):
        if plan.kwarg_only[position]:
            kwargs[plan.names[position]] = _as_pair(value)
        else:
            args.append(_as_pair(value))
    result = complex_pairs.apply(op, tuple(args), kwargs)
    if result is NotImplemented:
        return _on_host(plan, values, tensors, device, "the real-pair rule declines this call")
    result = _as_complex(result)
    if target is not None:
        if isinstance(result, torch.Tensor) and result.dtype != target.dtype:
            result = result.to(target.dtype)
        if tuple(target.shape) != tuple(result.shape):
            target.resize_(result.shape)  # out= arguments take the result's shape
        if target.dtype.is_complex:
            torch.view_as_real(target).copy_(torch.view_as_real(result))
        else:
            target.copy_(result)
        return target
    return result


def _on_host(plan: OpPlan, values: list, tensors: list, device: int, why: str) -> Any:
    # recorded first: under TORCHNEURON_NO_FALLBACK=1 nothing runs
    fallback.record_fallback(plan.name, f"complex values: {why} on the {DEVICE_TYPE} device")
    return run_on_host(plan, values, tensors, device)
