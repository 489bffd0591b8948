"""Lowering stage: ATen FX graphs -> torch dialect -> StableHLO (through torch-mlir)."""

from torchneuron.lazy import lazy_names

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


__getattr__ = lazy_names(__name__, _LAZY)


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
