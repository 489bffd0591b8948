"""Lowering stage: ATen FX graphs -> torch dialect -> StableHLO (through torch-mlir)."""

from .decompositions import EXTRA_DECOMPOSITIONS, decomposition_table
from .errors import DynamicShapeError, LoweringError, UnsupportedOpError
from .fx_to_torch import ArgumentInfo, PreparedGraph, import_graph, prepare_graph
from .torch_to_stablehlo import lower_to_stablehlo, lower_to_torch_backend

__all__ = [
    "EXTRA_DECOMPOSITIONS",
    "ArgumentInfo",
    "DynamicShapeError",
    "LoweringError",
    "PreparedGraph",
    "UnsupportedOpError",
    "decomposition_table",
    "import_graph",
    "lower_to_stablehlo",
    "lower_to_torch_backend",
    "prepare_graph",
]
