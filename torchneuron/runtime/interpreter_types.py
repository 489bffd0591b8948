"""What the interpreter's modules share: its refusal and its element types."""

from __future__ import annotations

import numpy as np

from torchneuron.errors import TorchNeuronError


class Uninterpretable(TorchNeuronError):
    """The interpreter does not run this program (an op or form it lacks) or this call
    (a value whose meaning numpy does not give exactly): the compiled program runs it."""


# The element types the interpreter computes in: those numpy computes exactly as
# StableHLO specifies. 16-bit and 8-bit floats are left to the compiled program (XLA
# computes them in float32 inside a fusion and rounds once; numpy rounds every op).
_ELEMENTS = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
}


def element_dtype(element_type) -> np.dtype:
    """The numpy dtype of an MLIR element type, ``Uninterpretable`` for any other."""
    dtype = _ELEMENTS.get(str(element_type))
    if dtype is None:
        raise Uninterpretable(f"element type {element_type}")
    return dtype
