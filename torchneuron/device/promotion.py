"""Ops whose shape function gives a call on mixed dtypes another result dtype than the CPU kernel.

The compiled route takes an op's output dtype from its fake-tensor run, and traces the
op through the same decompositions, so where PyTorch's shape function and its CPU
kernel disagree on type promotion the device returned the shape function's dtype:
``threshold_backward(int64 grad, float32 self)`` is float32 on the CPU (its
TensorIterator promotes both operands) and int64 in the shape function (``grad``'s).
For the ops below (found by comparing the CPU and meta result dtypes of every ATen op
with two tensor operands of different dtypes) a call whose operands' dtypes differ
runs again on operands cast to the dtype the CPU computes in, and its result is cast
to the CPU's result dtype. Calls on operands of one dtype are untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# (dtype the operands are cast to, dtype of the result), from the call's two operands.
DtypeRule = Callable[[torch.Tensor, torch.Tensor], tuple[torch.dtype, torch.dtype]]


def _promoted(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.dtype, torch.dtype]:
    common = torch.result_type(a, b)
    return common, common


def _first(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.dtype, torch.dtype]:
    return a.dtype, a.dtype


# op -> (positions of its two tensor operands, its CPU kernel's dtype rule). The meta
# dtype each gets wrong is in the comment.
RESULT_DTYPES: dict[str, tuple[tuple[int, int], DtypeRule]] = {
    # meta: grad_output's dtype; CPU: grad_output and self promoted
    "aten::threshold_backward": ((0, 1), _promoted),
    # meta: grad_output's dtype; CPU: grad_output and mask promoted
    "aten::native_dropout_backward": ((0, 1), _promoted),
    # meta: self and target promoted; CPU: self's dtype (target cast to it first)
    "aten::huber_loss": ((0, 1), _first),
    "aten::soft_margin_loss": ((0, 1), _first),
}


def dtype_rule_for(op: torch._ops.OpOverload) -> tuple[tuple[int, int], DtypeRule] | None:
    """The functional op's entry in ``RESULT_DTYPES`` (in-place and out= forms have none)."""
    if any(a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments):
        return None
    return RESULT_DTYPES.get(op._schema.name)


def run_promoted(op: torch._ops.OpOverload, rule: tuple, values: list) -> Any:
    """``op(*values)`` with the CPU kernel's dtypes, or None when its operands share one."""
    (first, second), dtypes = rule
    a, b = values[first], values[second]
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.dtype == b.dtype:
        return None
    operand_dtype, result_dtype = dtypes(a, b)
    cast = list(values)
    cast[first], cast[second] = a.to(operand_dtype), b.to(operand_dtype)
    return op(*cast).to(result_dtype)
