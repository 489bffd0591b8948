"""dce: erase operations whose results nobody uses and that have no side effects.

Requires: nothing. Guarantees: no operation without side effects is left
with all its results unused (in one sweep: users are visited before the
values they use). The bindings do not expose MLIR's memory-effect interface,
so purity is decided by name: ops of the value-semantics dialects are pure,
except communication, host transfer, custom calls and calls; an op with
regions is pure when everything inside is.

Rewrite: ``%r = op(..)`` with ``%r`` unused and ``op`` pure -> (nothing)
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.ir_utils import defining_op, is_unused, ops_in_program_order
from torchneuron.passes.registry import Pass, register_pass

_PURE_DIALECT_PREFIXES = ("stablehlo.", "chlo.", "arith.", "tensor.", "shape.", "math.")

# Ops of those dialects that act on the world beyond their results.
_SIDE_EFFECTING_OPS = frozenset(
    [
        "stablehlo.custom_call",
        "stablehlo.composite",
        "stablehlo.send",
        "stablehlo.recv",
        "stablehlo.infeed",
        "stablehlo.outfeed",
        "stablehlo.all_reduce",
        "stablehlo.all_gather",
        "stablehlo.all_to_all",
        "stablehlo.reduce_scatter",
        "stablehlo.collective_permute",
        "stablehlo.collective_broadcast",
        "stablehlo.optimization_barrier",
    ]
)


def is_pure(op: ir.Operation) -> bool:
    """True when erasing ``op`` (if its results are unused) cannot change the program."""
    name = op.name
    if name in _SIDE_EFFECTING_OPS or not name.startswith(_PURE_DIALECT_PREFIXES):
        return False
    for region in op.regions:
        for block in region.blocks:
            for nested in block.operations:
                if not is_pure(nested.operation):
                    return False
    return True


def erase_if_dead(op: ir.Operation) -> int:
    """Erase ``op`` if it is pure and unused, then its producers that became dead; returns the count."""
    if not is_unused(op) or not is_pure(op):
        return 0
    producers = {p for p in (defining_op(v) for v in op.operands) if p is not None}
    op.erase()
    return 1 + sum(erase_if_dead(p) for p in producers)


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Erase operations with unused results and no side effects."""

    name = "dce"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        # Reverse program order visits every user before what it uses, and nested
        # ops before the op holding them, so one sweep suffices and nothing
        # visited later has been erased already.
        for op in reversed(ops_in_program_order(module.operation)):
            if is_unused(op) and is_pure(op):
                op.erase()
                ctx.count("dead-op")
