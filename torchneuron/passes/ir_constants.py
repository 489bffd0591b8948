"""Constant payloads: MLIR dense elements attributes <-> numpy arrays, with exact dtypes.

The MLIR Python bindings expose a buffer (``numpy.array(attr)``) only for the
element types numpy knows natively (bool, signed/unsigned integers of 8-64
bits, f16/f32/f64). Everything else -- bf16, the fp8 family, i4 --
is read back from the attribute's printed form, which MLIR writes either as
a hex dump of the raw little-endian storage (``dense<"0x...">``, for large
payloads) or as a list of literals that round-trip exactly (non-finite floats
are printed as hex bit patterns). Both are decoded here into numpy arrays of
the exact ml_dtypes type. Complex payloads are out of reach: the bindings
raise TypeError as soon as such an attribute is fetched (``constant_payload``
reports them as opaque).

``dense_resource<name>`` payloads (torch-mlir inlines module parameters that
way) live in the module's ``{-# dialect_resources #-}`` section, which the
bindings only expose through the printed module; ``read_resource_blobs``
decodes that section.
"""

from __future__ import annotations

import re

import numpy as np
from torch_mlir import ir

from torchneuron.errors import TorchNeuronError
from torchneuron.target import dtypes

# MLIR element type (printed form, with its aliases) -> numpy dtype holding it bit-exactly:
# every type of the dtype table but the complex ones, whose payloads the bindings cannot
# hand out (see the module docstring).
NUMPY_DTYPE_OF_ELEMENT_TYPE: dict[str, np.dtype] = {
    spelling: row.numpy for spelling, row in dtypes.BY_MLIR.items() if not row.is_complex
}

# Element types whose DenseElementsAttr supports the buffer protocol both ways: the
# dtypes numpy itself has, in their signless spelling.
_BUFFER_NATIVE_ELEMENT_TYPES = frozenset(
    row.mlir for row in dtypes.ROWS if not row.from_ml_dtypes and not row.is_complex
)

# One printed literal: bool, hex bit pattern, or decimal number.
_LITERAL_TOKEN = re.compile(r"true|false|0x[0-9A-Fa-f]+|[-+]?(?:inf|nan)|[-+0-9.eE]+")


class UnsupportedConstantError(TorchNeuronError, ValueError):
    """A constant whose element type or encoding this module cannot convert."""


def numpy_dtype_of(element_type: ir.Type) -> np.dtype:
    """The numpy dtype that holds ``element_type`` exactly, or UnsupportedConstantError."""
    key = str(element_type)
    try:
        return NUMPY_DTYPE_OF_ELEMENT_TYPE[key]
    except KeyError:
        raise UnsupportedConstantError(
            f"no numpy dtype for MLIR element type '{key}'; supported: "
            f"{', '.join(NUMPY_DTYPE_OF_ELEMENT_TYPE)}"
        ) from None


def payload_bytes(tensor_type: ir.Type) -> int:
    """Bytes the payload of a static tensor of this type takes in a weight file."""
    shaped = ir.RankedTensorType(tensor_type)
    return int(np.prod(shaped.shape, dtype=np.int64)) * numpy_dtype_of(shaped.element_type).itemsize


def is_dense_elements(attr: ir.Attribute) -> bool:
    """True for ``dense<...>`` attributes (not ``dense_resource``, not sparse)."""
    try:
        ir.DenseElementsAttr(attr)
    except (ValueError, TypeError):
        return False
    return True


def is_dense_resource(attr: ir.Attribute) -> bool:
    """True for ``dense_resource<name>`` attributes (payload in the module's resource section)."""
    return str(attr).startswith("dense_resource<")


def is_splat(attr: ir.Attribute) -> bool:
    """True when every element of a dense elements attribute has the same value."""
    return ir.DenseElementsAttr(attr).is_splat


def _dense_body_text(attr: ir.Attribute) -> str:
    text = str(attr)
    start = text.index("dense<") + len("dense<")
    end = text.rindex("> : ")
    return text[start:end]


def _decode_literals(body: str, dtype: np.dtype) -> np.ndarray:
    """Decode the printed element list (or single splat literal) into a flat array."""
    return _decode_scalars(_LITERAL_TOKEN.findall(body), dtype)


def _decode_scalars(tokens: list[str], dtype: np.dtype) -> np.ndarray:
    is_float = dtype.kind == "f" or dtype in ML_FLOAT_DTYPES
    if dtype == np.bool_:
        return np.array([tok == "true" or tok == "1" for tok in tokens], dtype=np.bool_)
    if is_float:
        bits_dtype = np.dtype(f"u{dtype.itemsize}")
        out = np.empty(len(tokens), dtype=dtype)
        for i, tok in enumerate(tokens):
            if tok.startswith("0x"):
                # Non-finite (and NaN-payload) values are printed as their bit pattern.
                out[i] = np.array(int(tok, 16), dtype=bits_dtype).view(dtype)
            else:
                # The printed decimal round-trips to the stored value, so rounding
                # its nearest double to `dtype` recovers that value exactly.
                out[i] = float(tok)
        return out
    return np.array([int(tok, 0) for tok in tokens], dtype=dtype)


# Float types numpy lacks (ml_dtypes provides them), all narrower than float32.
ML_FLOAT_DTYPES = dtypes.ml_float_dtypes()


def is_float_dtype(dtype: np.dtype) -> bool:
    """True for numpy and ml_dtypes floating-point dtypes (not complex)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in ML_FLOAT_DTYPES


# Integers narrower than a byte (ml_dtypes int4/int2, uint4/uint2): stored one per byte,
# and they travel as the byte-wide integer of their signedness (their carrier).
_SUB_BYTE_SIGNED = frozenset(
    row.numpy for row in dtypes.ROWS if row.carrier == "int8" and not row.is_floating
)
_SUB_BYTE_UNSIGNED = frozenset(
    row.numpy for row in dtypes.ROWS if row.carrier == "uint8" and not row.is_floating
)


def _from_hex(hex_digits: str, dtype: np.dtype, shape: list[int]) -> np.ndarray:
    raw = bytes.fromhex(hex_digits)
    # i1 and sub-byte integers are stored one element per byte.
    storage = np.dtype(np.uint8) if dtype.itemsize == 1 else np.dtype(f"u{dtype.itemsize}")
    flat = np.frombuffer(raw, dtype=storage)
    if dtype == np.bool_ or dtype in _SUB_BYTE_UNSIGNED:
        flat = flat.astype(dtype)
    elif dtype in _SUB_BYTE_SIGNED:
        flat = flat.view(np.int8).astype(dtype)
    else:
        flat = flat.view(dtype)
    return _shape_elements(flat, shape)


def _shape_elements(flat: np.ndarray, shape: list[int]) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == count:
        return flat.reshape(shape).copy()
    if flat.size == 1:
        return np.full(shape, flat[0], dtype=flat.dtype)
    raise UnsupportedConstantError(
        f"constant holds {flat.size} elements but its type has shape {shape} ({count} elements)"
    )


def elements_attr_to_numpy(attr: ir.Attribute) -> np.ndarray:
    """The full contents of a ``dense<...>`` attribute as a numpy array of exact dtype."""
    tensor_type = ir.RankedTensorType(attr.type)
    element_text = str(tensor_type.element_type)
    dtype = numpy_dtype_of(tensor_type.element_type)
    shape = list(tensor_type.shape)
    dense = ir.DenseElementsAttr(attr)
    if element_text in _BUFFER_NATIVE_ELEMENT_TYPES and not dense.is_splat:
        return np.array(dense, copy=True).astype(dtype, copy=False).reshape(shape)
    body = _dense_body_text(attr)
    if body.startswith('"0x'):
        return _from_hex(body[3:-1], dtype, shape)
    return _shape_elements(_decode_literals(body, dtype), shape)


def splat_scalar(attr: ir.Attribute) -> np.ndarray:
    """The one value of a splat attribute, as a 0-d numpy array of exact dtype."""
    dtype = numpy_dtype_of(ir.RankedTensorType(attr.type).element_type)
    body = _dense_body_text(attr)
    if body.startswith('"0x'):
        return _from_hex(body[3:-1], dtype, [])
    return _shape_elements(_decode_literals(body, dtype), [])


def numpy_to_elements_attr(
    array: np.ndarray, element_type: ir.Type, shape: list[int] | None = None
) -> ir.DenseElementsAttr:
    """A ``dense<...>`` attribute of ``element_type`` holding ``array`` (needs an active Context).

    Arrays whose elements are all equal become splats, so broadcast constants
    stay one element in the IR. With ``shape``, a one-element ``array`` is
    splatted to that shape.
    """
    dtype = numpy_dtype_of(element_type)
    array = np.asarray(array)
    if array.dtype != dtype:
        raise UnsupportedConstantError(
            f"array of dtype {array.dtype} cannot be stored as MLIR '{element_type}' ({dtype})"
        )
    if shape is None:
        shape = list(array.shape)
    elif array.size != 1 and list(array.shape) != list(shape):
        raise UnsupportedConstantError(f"array of shape {array.shape} cannot fill shape {shape}")
    tensor_type = ir.RankedTensorType.get(list(shape), element_type)
    flat = array.reshape(-1)
    if flat.size > 0 and _all_equal(flat):
        flat = flat[:1]
    if str(element_type) not in _BUFFER_NATIVE_ELEMENT_TYPES:
        # The bindings take sub-byte integers one per byte, floats as their bit patterns.
        if dtype in _SUB_BYTE_SIGNED:
            storage = flat.astype(np.int8)
        elif dtype in _SUB_BYTE_UNSIGNED:
            storage = flat.astype(np.uint8)
        else:
            storage = flat.view(np.dtype(f"u{dtype.itemsize}"))
        return ir.DenseElementsAttr.get(np.ascontiguousarray(storage), type=tensor_type)
    return ir.DenseElementsAttr.get(np.ascontiguousarray(flat), type=tensor_type)


def splat_elements_attr(
    value: np.ndarray, tensor_type: ir.RankedTensorType
) -> ir.DenseElementsAttr:
    """A splat ``dense<value> : tensor_type`` (``value``: one element of the exact dtype)."""
    return numpy_to_elements_attr(
        np.asarray(value).reshape(()), tensor_type.element_type, tensor_type.shape
    )


def _all_equal(flat: np.ndarray) -> bool:
    # Compare bit patterns so that NaN payloads and signed zeros are kept apart.
    if flat.dtype == np.bool_:
        bits = flat
    else:
        bits = (
            flat.view(np.dtype(f"u{flat.dtype.itemsize}"))
            if flat.dtype.itemsize in (1, 2, 4, 8)
            else flat
        )
    return bool(np.all(bits == bits[0]))


_RESOURCE_ENTRY = re.compile(r'(?:"([^"]+)"|([\w.\-$]+))\s*:\s*"0x([0-9A-Fa-f]*)"')


def resource_key(attr: ir.Attribute) -> str:
    """The blob name of a ``dense_resource<name>`` attribute."""
    text = str(attr)
    start = text.index("dense_resource<") + len("dense_resource<")
    return text[start : text.index(">", start)].strip('"')


def read_resource_blobs(module: ir.Module) -> dict[str, bytes]:
    """Raw payload bytes of every builtin dialect resource blob the module references."""
    text = module.operation.get_asm(assume_verified=True)
    section_start = text.rfind("{-#")
    if section_start < 0:
        return {}
    blobs: dict[str, bytes] = {}
    for quoted, bare, hex_digits in _RESOURCE_ENTRY.findall(text[section_start:]):
        raw = bytes.fromhex(hex_digits)
        # A blob's printed form starts with its 4-byte little-endian alignment.
        blobs[quoted or bare] = raw[4:]
    return blobs


def resource_to_numpy(attr: ir.Attribute, blobs: dict[str, bytes]) -> np.ndarray:
    """The contents of a ``dense_resource<name>`` attribute, given the module's blobs."""
    key = resource_key(attr)
    if key not in blobs:
        raise UnsupportedConstantError(
            f"dense_resource '{key}' has no blob in the module's dialect_resources section"
        )
    tensor_type = ir.RankedTensorType(attr.type)
    dtype = numpy_dtype_of(tensor_type.element_type)
    shape = list(tensor_type.shape)
    raw = blobs[key]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise UnsupportedConstantError(
            f"dense_resource '{key}' holds {len(raw)} bytes, its type {tensor_type} needs {expected}"
        )
    if dtype == np.bool_:
        return np.frombuffer(raw, dtype=np.uint8).astype(np.bool_).reshape(shape)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
