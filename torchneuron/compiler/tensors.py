"""Conversions between torch tensors, numpy arrays and the dtype names NEFFs use.

bfloat16 and float8 have no numpy dtype of their own; ml_dtypes provides them,
and the bytes are reinterpreted (never converted) on the way through.
"""

from __future__ import annotations

import numpy as np
import torch

from torchneuron.target.dtypes import NEFF_DTYPES

# dtype name (as written in NEFF manifests) -> (torch dtype, numpy dtype); the names
# and numpy dtypes are the runtime's table, torch's dtypes carry the same names.
DTYPES: dict[str, tuple[torch.dtype, np.dtype]] = {
    name: (row.torch, row.numpy) for name, row in NEFF_DTYPES.items()
}
_NAME_OF_TORCH = {t: name for name, (t, _) in DTYPES.items()}
_NAME_OF_NUMPY = {n: name for name, (_, n) in DTYPES.items()}
# dtypes numpy cannot view from torch directly: reinterpret through a same-width integer.
_VIA_INT = {
    torch.bfloat16: torch.int16,
    torch.float8_e4m3fn: torch.int8,
    torch.float8_e5m2: torch.int8,
}


def dtype_name(dtype: torch.dtype | np.dtype) -> str:
    """The NEFF name of a torch or numpy dtype."""
    if isinstance(dtype, torch.dtype):
        name = _NAME_OF_TORCH.get(dtype)
    else:
        name = _NAME_OF_NUMPY.get(np.dtype(dtype))
    if name is None:
        raise TypeError(f"dtype {dtype} is not supported on neuron devices")
    return name


def torch_dtype(name: str) -> torch.dtype:
    return DTYPES[name][0]


def numpy_dtype(name: str) -> np.dtype:
    return DTYPES[name][1]


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A numpy view (no copy when already contiguous on the CPU) of ``tensor``'s data."""
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    via = _VIA_INT.get(tensor.dtype)
    if via is not None:
        return tensor.view(via).numpy().view(DTYPES[_NAME_OF_TORCH[tensor.dtype]][1])
    return tensor.numpy()


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor sharing ``array``'s memory (copied only when it is read-only)."""
    if not array.flags.writeable:
        array = array.copy()
    name = _NAME_OF_NUMPY.get(array.dtype)
    if name is None:
        raise TypeError(f"numpy dtype {array.dtype} has no torch counterpart")
    target = DTYPES[name][0]
    via = _VIA_INT.get(target)
    if via is not None:
        int_dtype = {torch.int16: np.int16, torch.int8: np.int8}[via]
        return torch.from_numpy(array.view(int_dtype)).view(target)
    return torch.from_numpy(array)
