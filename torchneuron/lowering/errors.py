"""Errors raised while lowering FX graphs to StableHLO.

Every error names what could not be lowered and where it came from in the
user's program (the FX node's stack trace), so a user can find the line.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchneuron.errors import TorchNeuronError
from torchneuron.target import dtypes


class LoweringError(TorchNeuronError):
    """A graph could not be lowered to StableHLO."""


class UnsupportedOpError(LoweringError):
    """An ATen op has no lowering to StableHLO on this compiler.

    Attributes: ``op`` (e.g. ``"aten.foo.default"``), ``input_types`` (one
    ``"f32[2, 3]"``-style string per tensor operand) and ``source`` (the user's
    source line, when the FX node recorded one).
    """

    def __init__(
        self,
        op: str,
        input_types: Sequence[str] = (),
        source: str | None = None,
        detail: str | None = None,
    ):
        self.op = op
        self.input_types = list(input_types)
        self.source = source
        self.detail = detail
        message = f"no lowering to StableHLO for {op}"
        if self.input_types:
            message += f" with inputs ({', '.join(self.input_types)})"
        if source:
            message += f"\n  from user code:\n{_indent(source)}"
        if detail:
            message += f"\n  compiler said: {detail}"
        super().__init__(message)


class DynamicShapeError(LoweringError):
    """The graph has symbolic (dynamic) shapes, which the NEFF format cannot express."""


def describe_value(value: object) -> str:
    """Short type string for an FX value: ``f32[2, 3]`` for tensors, the type name otherwise."""
    if isinstance(value, torch.Tensor):
        dims = ", ".join(str(d) for d in value.shape)
        return f"{short_dtype(value.dtype)}[{dims}]"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(describe_value(v) for v in value) + ")"
    return type(value).__name__


def short_dtype(dtype: torch.dtype) -> str:
    """The dtype table's short name (``f32``, ``bf16``, ``u8``); torch's name for dtypes the
    table lacks."""
    name = str(dtype).removeprefix("torch.")
    row = dtypes.BY_NAME.get(name)
    return row.short if row is not None else name


def node_source(node: torch.fx.Node) -> str | None:
    """The last frame of the user's code that produced ``node``, if recorded."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    return "\n".join(lines[-2:])


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
