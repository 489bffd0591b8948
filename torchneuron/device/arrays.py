"""Numpy arrays over device tensors, and the dtype facts the device needs, from the dtype table.

Compiled programs read and write numpy arrays; a neuron tensor's memory is host
memory, so the native layer (``_C.host_arrays``) hands a dense tensor's bytes to
numpy without a copy. Dtypes numpy lacks (bfloat16, the float8 formats) travel as
their *carrier* integers (``torchneuron.target.dtypes``: ``row.carrier``) viewed as
ml_dtypes; ``register_numpy_views`` tells the native layer which, once, before the
first program runs (importing ml_dtypes takes a while, so not at device registration).
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from torchneuron.device import _C
from torchneuron.target import dtypes


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy (or ml_dtypes) dtype holding ``dtype``'s values bit-exactly: the dtype
    table's row of the same name (torch's names are the table's)."""
    return dtypes.numpy_dtype(str(dtype).removeprefix("torch."), "neuron device", neff=False)


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    """The torch dtype of a numpy (or ml_dtypes) dtype."""
    row = dtypes.from_numpy(dtype)
    if row is None:
        raise dtypes.UnsupportedDTypeError(f"numpy dtype {dtype} has no torch counterpart")
    return row.torch


def carried_rows() -> list[dtypes.DType]:
    """The table's rows whose bytes travel as their carrier between torch and numpy.

    Floating formats only: torch's sub-byte integer dtypes (int4, uint2, ...) are
    shells without element access, so there is nothing to carry.
    """
    rows = []
    for row in dtypes.ROWS:
        torch_has = isinstance(getattr(torch, row.name, None), torch.dtype)
        if row.carrier is not None and row.is_floating and torch_has:
            rows.append(row)
    return rows


_views_lock = threading.Lock()
_views_registered = False


def register_numpy_views() -> None:
    """Tell the native layer how each carried dtype travels (once per process).

    The flag is set only after every view is registered, so a failure leaves it
    unset and the next call tries again (the native layer skips views it has).
    """
    global _views_registered
    if _views_registered:
        return
    with _views_lock:
        if _views_registered:
            return
        for row in carried_rows():
            carrier = dtypes.BY_NAME[row.carrier]
            _C.register_numpy_view(row.torch, carrier.torch, row.numpy, carrier.numpy_name)
        _views_registered = True


def host_array(tensor: torch.Tensor) -> np.ndarray:
    """A numpy array over ``tensor``'s data, as a compiled program reads it.

    Copy semantics: for a dense, plain neuron tensor the array *shares* the tensor's
    memory (no copy: writing one changes the other, and the array is valid only while
    the tensor's storage lives). A non-contiguous tensor, or one with a conjugate or
    negative bit, gives a new contiguous copy with those applied. Dtypes numpy lacks
    come back as ml_dtypes arrays (bfloat16, float8 formats).
    (``torchneuron.compiler.tensors.to_numpy`` is a different function: it always
    converts a CPU tensor into an array of its own.)
    """
    if not _views_registered:
        register_numpy_views()
    return _C.host_arrays([tensor])[0]
