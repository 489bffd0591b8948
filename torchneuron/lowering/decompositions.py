"""The decomposition table used before import: ATen op -> Python decomposition.

Reviewed like code: the base is torch-mlir's own table (without it batch-norm
and some loss ops arrive as opaque ``torch.operator``s), plus the entries
listed in ``EXTRA_DECOMPOSITIONS`` below, each with the reason it is needed.
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
]


@functools.lru_cache(maxsize=1)
def decomposition_table() -> dict[torch._ops.OperatorBase, Callable]:
    """The full table, built once per process."""
    table = dict(_torch_mlir_table())
    table.update(get_decompositions(EXTRA_DECOMPOSITIONS))
    return table
