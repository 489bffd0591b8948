"""Conversions between torch tensors, numpy arrays and the dtype names NEFFs use.

Everything here derives from the dtype table (``torchneuron.target.dtypes``). Types
numpy lacks (bfloat16, float8) come from ml_dtypes; torch cannot view them as numpy,
so their bytes travel as the row's *carrier* integer dtype and are reinterpreted
(never converted) on the other side.
"""

from __future__ import annotations

import numpy as np
import torch

from torchneuron.target import dtypes


def dtype_name(dtype: torch.dtype | np.dtype) -> str:
    """The NEFF name of a torch or numpy dtype."""
    if isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
        row = dtypes.NEFF_DTYPES.get(name)
    else:
        row = dtypes.from_numpy(dtype)
        row = row if row is not None and row.in_neff else None
    if row is None:
        raise dtypes.UnsupportedDTypeError(f"dtype {dtype} is not supported on neuron devices")
    return row.name


# The numpy (or ml_dtypes) dtype of a NEFF dtype name: the dtype table's, named here
# for the compiler's callers.
numpy_dtype = dtypes.numpy_dtype


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A numpy view (no copy when already contiguous on the CPU) of ``tensor``'s data."""
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    row = dtypes.NEFF_DTYPES.get(str(tensor.dtype).removeprefix("torch."))
    if row is not None and row.from_ml_dtypes:
        carrier = getattr(torch, row.carrier)
        return tensor.view(carrier).numpy().view(row.numpy)
    return tensor.numpy()


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor sharing ``array``'s memory (copied only when it is read-only)."""
    if not array.flags.writeable:
        array = array.copy()
    row = dtypes.from_numpy(array.dtype)
    if row is None or not row.in_neff:
        raise dtypes.UnsupportedDTypeError(f"numpy dtype {array.dtype} has no torch counterpart")
    if row.from_ml_dtypes:
        carrier = np.dtype(getattr(np, row.carrier))
        return torch.from_numpy(array.view(carrier)).view(row.torch)
    return torch.from_numpy(array)
