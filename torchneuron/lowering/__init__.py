"""Lowering stage: ATen FX graphs -> torch dialect -> StableHLO (through torch-mlir)."""

import importlib

from .errors import DynamicShapeError, LoweringError, UnsupportedOpError

# The importer and the lowerings pull in torch-mlir's FX importer, ml_dtypes and sympy
# (about two seconds); what only needs the errors (``neuronc --help``, the compiler's
# program checks) must not pay for them, so these load on first use.
_LAZY = {
    "EXTRA_DECOMPOSITIONS": "decompositions",
    "decomposition_table": "decompositions",
    "ArgumentInfo": "fx_to_torch",
    "PreparedGraph": "fx_to_torch",
    "import_graph": "fx_to_torch",
    "prepare_graph": "fx_to_torch",
    "lower_to_stablehlo": "torch_to_stablehlo",
    "lower_to_torch_backend": "torch_to_stablehlo",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchneuron.lowering' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"torchneuron.lowering.{module}"), name)
    globals()[name] = value
    return value


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
