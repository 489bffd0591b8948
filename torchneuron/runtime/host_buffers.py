"""Reading an XLA output buffer as a numpy array over its memory, without jax.

``output_reader(dtype)`` picks, once per program output, how its buffers are read:

- through the buffer protocol (``memoryview``), for every dtype numpy's buffer formats
  name (bool, integers, float16/32/64, complex);
- through the buffer's DLPack export, read with ctypes, for bfloat16 and the float8
  types, which no buffer format names. The export is checked to be one dense CPU array
  of the expected DLPack type code and width before numpy sees its memory; an export
  that is not (none of jaxlib 0.10.2's are) is read through jaxlib's
  ``_single_device_array_to_np_array_did_copy`` instead, a copy, after one warning: it
  imports all of jax (~0.45 s) to make an aval.

Both first ways are zero-copy views, read-only as XLA exports them; each keeps what
owns the memory (the buffer, or the capsule that holds a reference to it) alive under
the array. ``owned_output`` turns such a view into the writable array a caller owns.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

Reader = Callable[[Any], np.ndarray]


def output_reader(dtype: np.dtype) -> Reader:
    """How to read the buffers of an output of ``dtype`` (a read-only view each)."""
    dtype = np.dtype(dtype)
    code = _DLPACK_CODES.get(dtype.name)
    if code is None:
        return _protocol_view
    from jaxlib import xla_client

    export = xla_client._xla.buffer_to_dlpack_managed_tensor
    return lambda buffer: _dlpack_view(buffer, dtype, code, export)


def host_arrays(outputs: list, readers: list[Reader], copy: bool) -> list[np.ndarray]:
    """Numpy arrays over one execution's output buffers: each the caller's own, writable
    (``owned_output``), or (``copy`` False) read-only views, for a caller that copies the
    values out at once."""
    if copy:
        return [owned_output(out, read) for out, read in zip(outputs, readers)]
    return [read(out) for out, read in zip(outputs, readers)]


def owned_output(buffer: Any, read: Reader) -> np.ndarray:
    """A writable numpy array over an XLA output buffer's memory, without a copy.

    Waits for the execution that produces ``buffer``. XLA allocated the buffer for that
    one execution and never writes it again (outputs alias no input: nothing is donated,
    and constants and parameters are copied into outputs); the caller holds its only
    reference, so the memory is the caller's to read and write. XLA exports it read-only
    because JAX arrays are immutable, which does not apply to a buffer nobody else sees.
    """
    view = read(buffer)
    if view.flags.writeable or view.size == 0:
        return view if view.flags.writeable else np.empty(view.shape, view.dtype)
    # The interface names the element only as raw bytes of its size: numpy cannot parse
    # every ml_dtypes type string back (float8_e5m2's is "<f1").
    return np.asarray(_OutputBuffer(view, buffer)).view(view.dtype)


def _protocol_view(buffer: Any) -> np.ndarray:
    try:
        return np.asarray(memoryview(buffer))
    except BufferError:
        # An execution that failed raises its own error here (XLA's status, with its
        # code: out-of-host-memory is told apart by it), not the buffer protocol's.
        buffer.block_until_ready()
        raise


class _OutputBuffer:
    """Keeps one XLA output buffer alive under the numpy array made over its memory."""

    __slots__ = ("__array_interface__", "buffer", "view")

    def __init__(self, view: np.ndarray, buffer: Any) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": view.shape,
            "typestr": f"|V{view.itemsize}",
            "data": (view.__array_interface__["data"][0], False),  # False: not read-only
        }
        self.view = view  # holds XLA's export of the buffer
        self.buffer = buffer


# DLPack's DLDataTypeCode of each NEFF dtype read through DLPack (dlpack.h: kDLBfloat
# = 4; the float8 codes came with DLPack 1.1); jaxlib 0.10.2 exports exactly these.
_DLPACK_CODES = {
    "bfloat16": 4,
    "float8_e3m4": 7,
    "float8_e4m3": 8,
    "float8_e4m3b11fnuz": 9,
    "float8_e4m3fn": 10,
    "float8_e4m3fnuz": 11,
    "float8_e5m2": 12,
    "float8_e5m2fnuz": 13,
    "float8_e8m0fnu": 14,
}
_DLPACK_CPU = 1  # kDLCPU


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    # DLPack's C struct (dlpack.h, the same since v0.2). jaxlib exports a capsule named
    # "dltensor" whose pointer is a DLManagedTensor, of which this is the first member.
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


# A prototype of our own: ctypes.pythonapi's function objects are shared by every
# library in the process, and their restype and argtypes with them.
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


class _DlpackMemory:
    """Holds a DLPack capsule (and so the buffer it references) under a numpy array."""

    __slots__ = ("__array_interface__", "capsule")

    def __init__(self, capsule: Any, interface: dict) -> None:
        self.capsule = capsule
        self.__array_interface__ = interface


def _dlpack_view(
    buffer: Any, dtype: np.dtype, code: int, export: Callable[[Any], Any]
) -> np.ndarray:
    """``buffer``'s memory as a read-only array of ``dtype``, through the DLPack capsule
    ``export`` makes of it; where that is not one dense CPU array of ``dtype``, a copy
    through jaxlib."""
    buffer.block_until_ready()  # an execution that failed raises its own error here
    capsule = export(buffer)
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = tuple(tensor.shape[k] for k in range(tensor.ndim))
    if not _dense_cpu_array(tensor, shape, dtype, code):
        warnings.warn(
            f"torchneuron: a {dtype.name} output's DLPack export is not one dense CPU array "
            "of that type; it is copied out through jaxlib instead (importing jax)",
            stacklevel=2,
        )
        return buffer._single_device_array_to_np_array_did_copy()[0]
    interface = {
        "version": 3,
        "shape": shape,
        "typestr": f"|V{dtype.itemsize}",
        "data": ((tensor.data or 0) + tensor.byte_offset, True),  # True: read-only
    }
    return np.asarray(_DlpackMemory(capsule, interface)).view(dtype)


def _dense_cpu_array(tensor: _DLTensor, shape: tuple[int, ...], dtype: np.dtype, code: int) -> bool:
    element = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    if tensor.device.device_type != _DLPACK_CPU or element != (code, 8 * dtype.itemsize, 1):
        return False
    if not tensor.strides or 0 in shape:
        return True  # no strides: row-major by DLPack's definition; empty: no memory read
    expected = 1
    for k in reversed(range(tensor.ndim)):
        if shape[k] > 1 and tensor.strides[k] != expected:
            return False
        expected *= shape[k]
    return True
