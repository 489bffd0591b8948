"""The dtypes a NEFF may declare: torch-style names, numpy dtypes and MLIR element types."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from torchneuron.runtime.errors import NeuronRuntimeError

# torch-style name -> numpy dtype (low-precision floats come from ml_dtypes).
NUMPY_DTYPES: dict[str, np.dtype] = {
    "float64": np.dtype(np.float64),
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int64": np.dtype(np.int64),
    "int32": np.dtype(np.int32),
    "int16": np.dtype(np.int16),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    "complex64": np.dtype(np.complex64),
}

# MLIR element type (as printed) -> torch-style name. StableHLO integers are signless
# except unsigned ones, which print with a "ui" prefix.
MLIR_ELEMENT_TYPES: dict[str, str] = {
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f8E4M3FN": "float8_e4m3fn",
    "f8E5M2": "float8_e5m2",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "i1": "bool",
    "complex<f32>": "complex64",
}

TORCH_NAMES: dict[np.dtype, str] = {dtype: name for name, dtype in NUMPY_DTYPES.items()}


def numpy_dtype(name: str, where: str = "") -> np.dtype:
    """The numpy dtype for a torch-style dtype name; NeuronRuntimeError if unsupported."""
    try:
        return NUMPY_DTYPES[name]
    except (KeyError, TypeError):
        place = f" ({where})" if where else ""
        raise NeuronRuntimeError(
            f"unsupported dtype {name!r}{place}; the runtime supports {sorted(NUMPY_DTYPES)}"
        ) from None


def dtype_name(dtype: np.dtype) -> str:
    """The torch-style name of a numpy dtype, or its numpy name if we do not support it."""
    return TORCH_NAMES.get(np.dtype(dtype), str(dtype))
