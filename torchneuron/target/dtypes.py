"""The one dtype table: every element type the compiler, the NEFF and the runtime know.

One row per dtype: its name (torch's attribute name where torch has the dtype, which
is also the name NEFF manifests and weight indexes write), the numpy or ml_dtypes
dtype that holds it bit-exactly, the MLIR element type as printed, a short name for
messages, and the *carrier*: the same-width integer dtype its bytes travel as between
torch and numpy, which cannot view ml_dtypes types directly. ``in_neff`` marks the
dtypes a NEFF may declare for inputs, outputs and weights; the others appear only
inside programs (constants, intermediate values).

Every other dtype mapping in the package is derived from ``ROWS``; nothing else lists
dtypes. This module imports no torch: ``DType.torch`` looks the torch dtype up by name
(for the layers that already use torch).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchneuron.errors import TorchNeuronError

if TYPE_CHECKING:  # numpy loads on the first lookup that needs it: `neuronc --help` does not
    import numpy as np


class UnsupportedDTypeError(TorchNeuronError, TypeError):
    """A dtype name, numpy dtype or MLIR element type that the table does not hold."""


@dataclass(frozen=True)
class DType:
    name: str  # torch's name (torch.<name>); what NEFF manifests write
    numpy_name: str  # numpy's or ml_dtypes' name of the dtype that holds it bit-exactly
    mlir: str  # MLIR element type, as printed
    short: str  # for messages: f32, bf16, i64, ...
    carrier: str | None = None  # same-width integer dtype the bytes travel as (torch <-> numpy)
    in_neff: bool = True  # a NEFF may declare it for inputs, outputs and weights
    mlir_aliases: tuple[str, ...] = field(default=())  # other spellings of the MLIR type

    @functools.cached_property
    def numpy(self) -> np.dtype:
        """The numpy dtype (ml_dtypes, which takes most of a second to import, loads on
        the first row that needs it)."""
        import numpy as np

        if not self.from_ml_dtypes:
            return np.dtype(getattr(np, self.numpy_name))
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, self.numpy_name))

    @property
    def from_ml_dtypes(self) -> bool:
        """numpy itself lacks the dtype (ml_dtypes adds it; torch cannot view it as numpy)."""
        import numpy as np

        return not hasattr(np, self.numpy_name)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_floating(self) -> bool:
        """Real floating point, including the ml_dtypes formats numpy files as kind 'V'."""
        return self.mlir.startswith(("f", "bf"))

    @property
    def is_complex(self) -> bool:
        return self.mlir.startswith("complex")

    @property
    def torch(self):
        """The torch dtype of this row (imports torch: only for layers that use it)."""
        import torch

        found = getattr(torch, self.name, None)
        if not isinstance(found, torch.dtype):
            raise UnsupportedDTypeError(f"dtype {self.name} has no torch counterpart")
        return found


def _row(name, mlir, short, carrier=None, in_neff=True, aliases=()):
    # numpy and ml_dtypes name every dtype here as torch does
    return DType(name, name, mlir, short, carrier, in_neff, tuple(aliases))


ROWS: tuple[DType, ...] = (
    _row("float64", "f64", "f64"),
    _row("float32", "f32", "f32"),
    _row("float16", "f16", "f16"),
    _row("bfloat16", "bf16", "bf16", carrier="int16"),
    _row("float8_e4m3fn", "f8E4M3FN", "f8e4m3fn", carrier="int8"),
    _row("float8_e5m2", "f8E5M2", "f8e5m2", carrier="int8"),
    # Formats that appear only inside programs (torch or MLIR have them; NEFFs do not).
    _row("float8_e4m3fnuz", "f8E4M3FNUZ", "f8e4m3fnuz", "int8", False),
    _row("float8_e5m2fnuz", "f8E5M2FNUZ", "f8e5m2fnuz", "int8", False),
    _row("float8_e8m0fnu", "f8E8M0FNU", "f8e8m0fnu", "int8", False),
    _row("float8_e4m3b11fnuz", "f8E4M3B11FNUZ", "f8e4m3b11fnuz", "int8", False),
    _row("float8_e4m3", "f8E4M3", "f8e4m3", "int8", False),
    _row("float8_e3m4", "f8E3M4", "f8e3m4", "int8", False),
    _row("float4_e2m1fn", "f4E2M1FN", "f4e2m1fn", "int8", False),
    # StableHLO integers are signless ("i8"); signed and unsigned ones print with a prefix.
    _row("int64", "i64", "i64", aliases=["si64"]),
    _row("int32", "i32", "i32", aliases=["si32"]),
    _row("int16", "i16", "i16", aliases=["si16"]),
    _row("int8", "i8", "i8", aliases=["si8"]),
    _row("int4", "i4", "i4", "int8", False),
    _row("int2", "i2", "i2", "int8", False),
    _row("uint64", "ui64", "u64"),
    _row("uint32", "ui32", "u32"),
    _row("uint16", "ui16", "u16"),
    _row("uint8", "ui8", "u8"),
    _row("uint4", "ui4", "u4", "uint8", False),
    _row("uint2", "ui2", "u2", "uint8", False),
    _row("bool", "i1", "bool"),
    _row("complex64", "complex<f32>", "c64"),
    _row("complex128", "complex<f64>", "c128", in_neff=False),
)

BY_NAME: dict[str, DType] = {row.name: row for row in ROWS}
BY_MLIR: dict[str, DType] = {
    spelling: row for row in ROWS for spelling in (row.mlir, *row.mlir_aliases)
}
# The dtypes a NEFF may declare, by name.
NEFF_DTYPES: dict[str, DType] = {row.name: row for row in ROWS if row.in_neff}


@functools.cache
def _by_numpy() -> dict[np.dtype, DType]:
    return {row.numpy: row for row in ROWS}


@functools.cache
def ml_float_dtypes() -> frozenset[np.dtype]:
    """The floating formats numpy lacks: ml_dtypes adds them (numpy's kind is 'V' or 'f')."""
    return frozenset(row.numpy for row in ROWS if row.is_floating and row.from_ml_dtypes)


def lookup(
    name: str, where: str = "", *, neff: bool = True, error: type[Exception] | None = None
) -> DType:
    """The row named ``name`` (only NEFF dtypes unless ``neff=False``).

    Unknown names raise ``error`` (default ``UnsupportedDTypeError``) naming ``where``
    and the supported names.
    """
    table = NEFF_DTYPES if neff else BY_NAME
    row = table.get(name) if isinstance(name, str) else None
    if row is None:
        place = f" ({where})" if where else ""
        raise (error or UnsupportedDTypeError)(
            f"unsupported dtype {name!r}{place}; supported: {', '.join(table)}"
        )
    return row


def from_mlir(element_type: str) -> DType | None:
    """The row of an MLIR element type as printed (``"bf16"``), None if unknown."""
    return BY_MLIR.get(element_type)


def from_numpy(dtype) -> DType | None:
    """The row of a numpy (or ml_dtypes) dtype, None if unknown."""
    import numpy as np

    try:
        return _by_numpy().get(np.dtype(dtype))
    except TypeError:
        return None


def numpy_dtype(
    name: str, where: str = "", *, neff: bool = True, error: type[Exception] | None = None
) -> np.dtype:
    """The numpy (or ml_dtypes) dtype of a dtype name: only NEFF dtypes unless
    ``neff=False`` (``error`` for unknown names, as ``lookup``)."""
    return lookup(name, where, neff=neff, error=error).numpy


def dtype_name(dtype) -> str:
    """The table's name of a numpy dtype, or numpy's own name if the table lacks it."""
    import numpy as np

    row = from_numpy(dtype)
    return row.name if row is not None else str(np.dtype(dtype))
