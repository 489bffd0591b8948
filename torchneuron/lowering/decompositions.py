"""The decomposition table used before import: ATen op -> Python decomposition.

Reviewed like code: the base is torch-mlir's own table (without it batch-norm
and some loss ops arrive as opaque ``torch.operator``s), plus PyTorch's own
decompositions listed in ``EXTRA_DECOMPOSITIONS`` below, each with the reason
it is needed, plus our own lowering rules (``torchneuron.lowering.rules``),
which take precedence and hand the cases they decline to the entry beneath.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
from torch._decomp import get_decompositions
from torch_mlir.extras.fx_decomp_util import get_decomposition_table as _torch_mlir_table

aten = torch.ops.aten

# Ops torch-mlir's StableHLO lowering lacks but PyTorch can decompose into ops
# it has. One line each, with why; an entry is added only when a test fails
# without it (MLP, CNN and GPT-style training were checked entry by entry).
EXTRA_DECOMPOSITIONS = [
    # torch-mlir's StableHLO conversion leaves it (and a stray torch.constant.bool) illegal.
    aten.max_pool2d_with_indices_backward,
    # torch-mlir has no StableHLO lowering for these; PyTorch's decompositions use ops it has
    # (each checked against its OpInfo entry, which falls back to the CPU without it):
    aten.addmv,                    # -> mm/mv + add
    aten.diagonal,                 # -> as_strided view (also trace, linalg.diagonal, quantile)
    aten.as_strided_copy,          # -> as_strided + clone
    aten.narrow_copy, aten.view_copy, aten.permute_copy, aten.unbind_copy,  # -> the view + clone
    aten.adaptive_max_pool3d,      # -> max_pool3d over computed windows
    aten.max_pool3d_with_indices,  # -> the generic windowed-max decomposition
    # eager mode meets these directly (torch.compile sees the .vec forms, decomposed):
    aten.upsample_bilinear2d, aten.upsample_bicubic2d, aten.upsample_trilinear3d,  # -> gathers
]


@functools.lru_cache(maxsize=1)
def decomposition_table() -> dict[torch._ops.OperatorBase, Callable]:
    """The full table, built once per process."""
    from .rules import lowering_rules

    table = dict(_torch_mlir_table())
    table.update(get_decompositions(EXTRA_DECOMPOSITIONS))
    for op, rule in lowering_rules().items():
        table[op] = _rule_then(rule, table.get(op))
    return table


def _rule_then(rule: Callable, beneath: Callable | None) -> Callable:
    """``rule``, handing the calls it declines (``NotImplemented``) to ``beneath``."""
    if beneath is None:
        return rule

    @functools.wraps(rule)
    def rule_or_beneath(*args, **kwargs):
        result = rule(*args, **kwargs)
        if result is NotImplemented:
            return beneath(*args, **kwargs)
        return result

    return rule_or_beneath
