"""Constant payloads: numpy <-> MLIR dense attributes for every element type, exactly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from torch_mlir import ir

from torchneuron.passes import make_context, parse_module
from torchneuron.passes.ir_constants import (
    NUMPY_DTYPE_OF_ELEMENT_TYPE,
    UnsupportedConstantError,
    elements_attr_to_numpy,
    is_dense_elements,
    is_dense_resource,
    is_float_dtype,
    is_splat,
    numpy_dtype_of,
    numpy_to_elements_attr,
    payload_bytes,
    read_resource_blobs,
    resource_to_numpy,
    splat_scalar,
)

ELEMENT_TYPES = [
    "i1",
    "i4",
    "ui4",
    "i8",
    "i16",
    "i32",
    "i64",
    "ui8",
    "ui16",
    "ui32",
    "ui64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8E4M3FN",
    "f8E5M2",
    "f8E4M3FNUZ",
    "f8E5M2FNUZ",
]


def _random(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype == np.dtype(ml_dtypes.int4):
        return rng.integers(-8, 8, shape).astype(dtype)
    if dtype == np.dtype(ml_dtypes.uint4):
        return rng.integers(0, 16, shape).astype(dtype)
    if is_float_dtype(dtype):
        values = (rng.standard_normal(shape) * 3).astype(dtype)
        flat = values.reshape(-1)
        # Special values are printed as hex bit patterns by MLIR; types without them give NaN.
        flat[:3] = np.array([np.nan, np.inf, -0.0]).astype(dtype)
        return values
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _bits(array: np.ndarray) -> np.ndarray:
    return (
        array.view(np.uint8)
        if array.dtype.itemsize == 1
        else array.view(f"u{array.dtype.itemsize}")
    )


@pytest.fixture
def context():
    with make_context() as ctx, ir.Location.unknown(ctx):
        yield ctx


@pytest.mark.parametrize("element", ELEMENT_TYPES)
# 6 elements print as a literal list, 300 as a hex dump: both decoders are exercised.
@pytest.mark.parametrize("shape", [(2, 3), (300,)])
def test_round_trip_is_bit_exact(context, element: str, shape: tuple[int, ...]):
    dtype = NUMPY_DTYPE_OF_ELEMENT_TYPE[element]
    array = _random(dtype, shape, np.random.default_rng(0))
    attr = numpy_to_elements_attr(array, ir.Type.parse(element))
    assert str(attr.type) == f"tensor<{'x'.join(map(str, shape))}x{element}>"
    assert is_dense_elements(attr) and not is_dense_resource(attr)
    back = elements_attr_to_numpy(attr)
    assert back.dtype == dtype and back.shape == shape
    np.testing.assert_array_equal(_bits(back), _bits(array))


@pytest.mark.parametrize("element", ELEMENT_TYPES)
def test_equal_elements_become_a_splat(context, element: str):
    dtype = NUMPY_DTYPE_OF_ELEMENT_TYPE[element]
    value = _random(dtype, (5,), np.random.default_rng(1))[4]
    attr = numpy_to_elements_attr(np.full((64, 64), value, dtype=dtype), ir.Type.parse(element))
    assert is_splat(attr)
    scalar = splat_scalar(attr)
    assert scalar.shape == () and scalar.dtype == dtype
    assert _bits(scalar.reshape(1)) == _bits(np.array([value], dtype=dtype))
    assert elements_attr_to_numpy(attr).shape == (64, 64)
    assert payload_bytes(attr.type) == 64 * 64 * dtype.itemsize


def test_splat_to_a_given_shape_and_zero_d(context):
    attr = numpy_to_elements_attr(
        np.array(2.5, dtype=ml_dtypes.bfloat16), ir.BF16Type.get(), [3, 4]
    )
    assert str(attr) == "dense<2.500000e+00> : tensor<3x4xbf16>"
    zero_d = numpy_to_elements_attr(np.array(7, dtype=np.int64), ir.IntegerType.get_signless(64))
    assert str(zero_d) == "dense<7> : tensor<i64>"
    assert elements_attr_to_numpy(zero_d).shape == ()


def test_mismatched_dtype_and_unknown_types_are_errors(context):
    with pytest.raises(UnsupportedConstantError, match="cannot be stored as MLIR 'f32'"):
        numpy_to_elements_attr(np.zeros(3, dtype=np.float64), ir.F32Type.get())
    with pytest.raises(
        UnsupportedConstantError, match="no numpy dtype for MLIR element type 'index'"
    ):
        numpy_dtype_of(ir.IndexType.get())


def test_resource_blobs_are_read_from_the_module():
    module = parse_module(
        """
        func.func @main() -> (tensor<2xf32>, tensor<3xi1>) {
          %0 = stablehlo.constant dense_resource<weights.float32> : tensor<2xf32>
          %1 = stablehlo.constant dense_resource<mask> : tensor<3xi1>
          return %0, %1 : tensor<2xf32>, tensor<3xi1>
        }
        {-#
          dialect_resources: {
            builtin: {
              weights.float32: "0x040000000000803F000000C0",
              mask: "0x01000000010001"
            }
          }
        #-}"""
    )
    blobs = read_resource_blobs(module)
    assert blobs == {
        "weights.float32": bytes.fromhex("0000803F000000C0"),
        "mask": bytes.fromhex("010001"),
    }
    ops = list(module.body.operations[0].regions[0].blocks[0].operations)
    weights, mask = (op.operation.attributes["value"] for op in ops[:2])
    assert is_dense_resource(weights) and not is_dense_elements(weights)
    np.testing.assert_array_equal(
        resource_to_numpy(weights, blobs), np.array([1.0, -2.0], np.float32)
    )
    np.testing.assert_array_equal(resource_to_numpy(mask, blobs), np.array([True, False, True]))
    with pytest.raises(
        UnsupportedConstantError, match="holds 16 bytes, its type tensor<2xf32> needs 8"
    ):
        resource_to_numpy(weights, {"weights.float32": bytes(8 * 2)})
