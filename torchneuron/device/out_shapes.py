"""Sequence ops whose CPU kernel keeps an ``out=`` tensor's shape when its numel fits.

``arange``, ``range``, ``linspace`` and ``logspace`` with ``out=`` resize ``out`` to
1-d only when its numel differs from the sequence's length (``arange(12., out=t)`` on
a 3 x 4 ``t`` fills it and keeps [3, 4]); their shape functions always resize, so the
compiled route resized the device tensor to [12]. A call whose ``out`` is not 1-d
computes the sequence into a fresh 1-d tensor; if the numels match it is copied into
``out`` in its shape (and strides), otherwise the call takes its ordinary path, which
resizes (and warns) as the CPU does.
"""

from __future__ import annotations

from typing import Any

import torch

SEQUENCE_OUT_OPS = frozenset({"aten::arange", "aten::range", "aten::linspace", "aten::logspace"})


def out_position(op: torch._ops.OpOverload) -> int | None:
    """The position of ``out`` for the out= overloads of the sequence ops, else None."""
    if op._schema.name not in SEQUENCE_OUT_OPS:
        return None
    names = [argument.name for argument in op._schema.arguments]
    return names.index("out") if "out" in names else None


def run_keeping_shape(op: torch._ops.OpOverload, names: tuple, position: int, values: list) -> Any:
    """``op`` with ``out`` kept in its shape where its numel fits; None to run it as usual."""
    out = values[position]
    if not isinstance(out, torch.Tensor) or out.dim() == 1:
        return None
    flat = torch.empty(0, dtype=out.dtype, device=out.device)
    args = list(values[:position])
    kwargs = {name: value for name, value in zip(names[position + 1 :], values[position + 1 :])}
    op(*args, out=flat, **kwargs)
    if flat.numel() != out.numel():
        return None
    out.copy_(flat.reshape(out.shape))
    return out
