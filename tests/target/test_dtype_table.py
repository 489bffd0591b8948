"""The one dtype table: rows agree with numpy, torch and MLIR, and lookups fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchneuron.errors import TorchNeuronError
from torchneuron.target import dtypes


@pytest.mark.parametrize("row", dtypes.ROWS, ids=lambda row: row.name)
def test_row_is_consistent(row):
    assert dtypes.BY_NAME[row.name] is row
    assert dtypes.from_mlir(row.mlir) is row
    assert dtypes.from_numpy(row.numpy) is row
    assert row.numpy.name == row.name or (row.name == "bool" and row.numpy == np.bool_)
    if row.carrier is not None:
        carrier = dtypes.BY_NAME[row.carrier]
        assert carrier.itemsize == row.itemsize and not carrier.is_floating
    if row.in_neff:
        # every NEFF dtype is a torch dtype of the same width
        assert row.torch.itemsize == row.itemsize
        assert str(row.torch) == f"torch.{row.name}"


def test_carriers_are_exactly_the_types_numpy_cannot_hold_natively():
    for row in dtypes.ROWS:
        assert (row.carrier is None) == (not row.from_ml_dtypes), row.name


def test_signed_spellings_are_aliases():
    assert dtypes.from_mlir("si32") is dtypes.BY_NAME["int32"]
    assert dtypes.from_mlir("f128") is None


def test_lookup_errors_name_the_place():
    with pytest.raises(dtypes.UnsupportedDTypeError, match=r"'int4' \(weight w0\)") as caught:
        dtypes.lookup("int4", "weight w0")
    assert isinstance(caught.value, TorchNeuronError)
    assert dtypes.lookup("int4", neff=False).itemsize == 1

    class Custom(Exception):
        pass

    with pytest.raises(Custom):
        dtypes.numpy_dtype("complex32", error=Custom)
    assert dtypes.dtype_name(np.dtype("float32")) == "float32"
    assert dtypes.dtype_name(np.dtype("U3")) == "<U3"


def test_float_classification():
    assert dtypes.BY_NAME["bfloat16"].is_floating and not dtypes.BY_NAME["int8"].is_floating
    assert dtypes.BY_NAME["complex64"].is_complex and not dtypes.BY_NAME["complex64"].is_floating
    assert torch.bfloat16 is dtypes.BY_NAME["bfloat16"].torch
    assert np.dtype(np.float32) not in dtypes.ml_float_dtypes()
    assert dtypes.BY_NAME["float8_e5m2"].numpy in dtypes.ml_float_dtypes()


@pytest.mark.parametrize("row", dtypes.ROWS, ids=lambda row: row.name)
def test_engine_element_types_come_from_the_table(row):
    from torchneuron.target import engines

    for spelling in (row.mlir, *row.mlir_aliases):
        assert engines.element_type(spelling) == (row.name, row.itemsize)


def test_unknown_element_types_count_four_bytes():
    from torchneuron.target import engines

    assert engines.element_type("!stablehlo.token") == ("!stablehlo.token", 4)
    assert engines.element_type("f8E5M2") == ("float8_e5m2", 1)
