"""Weight tensors as raw little-endian files plus a JSON index.

Each weight is stored as ``sg00/weights/<name>.bin`` holding exactly the array's
elements in C order, little-endian, with no header. The index ``sg00/weights.json``
records, per weight, its dtype name, shape, byte size and sha256, so a reader can check
every file before use and rebuild arrays with ``np.frombuffer`` (never pickle).
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from typing import Any

import numpy as np

from torchneuron.neff.errors import NeffError
from torchneuron.target.dtypes import NEFF_DTYPES, from_numpy

WEIGHTS_DIR = "sg00/weights/"
WEIGHT_FILE_SUFFIX = ".bin"

# A weight name becomes a file name inside the tarball: letters, digits, '_', '.', '-',
# not starting with '.', so it can never be a path, '..' or a hidden file.
WEIGHT_NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")


def check_weight_name(name: object) -> str:
    if not isinstance(name, str) or not WEIGHT_NAME_PATTERN.fullmatch(name):
        raise NeffError(
            f"weight name {name!r} is not a safe file name: use 1-128 characters from "
            "[A-Za-z0-9_.-], not starting with '.'"
        )
    return name


def weight_file_path(name: str) -> str:
    """The tarball member that holds weight ``name`` (what def.json's ``file`` names)."""
    return WEIGHTS_DIR + check_weight_name(name) + WEIGHT_FILE_SUFFIX


def weight_dtype_name(dtype: np.dtype) -> str | None:
    """The index name of ``dtype`` (any byte order), or None if a NEFF cannot hold it.

    Names and dtypes come from the one dtype table (``target.dtypes.NEFF_DTYPES``).
    """
    if dtype.byteorder in "<>" and not dtype.isnative:
        dtype = dtype.newbyteorder("=")
    row = from_numpy(dtype)
    return row.name if row is not None and row.in_neff else None


def encode_weight(name: str, array: Any) -> tuple[dict[str, Any], bytes]:
    """Index entry and raw little-endian bytes for one weight."""
    check_weight_name(name)
    if not isinstance(array, (np.ndarray, np.generic)):
        raise NeffError(
            f"weight {name!r} must be a numpy array, got {type(array).__name__} "
            "(convert a torch tensor with .detach().cpu().numpy())"
        )
    dtype_name = weight_dtype_name(array.dtype)
    if dtype_name is None:
        raise NeffError(
            f"weight {name!r} has dtype {array.dtype}, which a NEFF cannot store; "
            f"supported: {', '.join(NEFF_DTYPES)}"
        )
    # np.asarray, not np.ascontiguousarray: the latter turns 0-d arrays into 1-d ones.
    native = np.asarray(array, dtype=NEFF_DTYPES[dtype_name].numpy, order="C")
    if sys.byteorder != "little":
        native = native.byteswap()
    data = native.tobytes()
    entry = {
        "name": name,
        "dtype": dtype_name,
        "shape": [int(dim) for dim in native.shape],
        "size_bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "file": weight_file_path(name),
    }
    return entry, data


def decode_weight(
    buffer: bytearray | memoryview, offset: int, dtype: np.dtype, shape: tuple[int, ...]
) -> np.ndarray:
    """The array stored at ``buffer[offset:]`` (a view: no copy on little-endian hosts)."""
    count = math.prod(shape)
    if count == 0:
        return np.empty(shape, dtype=dtype)
    array = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).reshape(shape)
    if sys.byteorder != "little":
        array = array.byteswap()
    return array
