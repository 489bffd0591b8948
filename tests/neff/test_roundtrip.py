"""Writing then reading a NEFF gives back the same Neff: every dtype, odd shapes, files."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.neff import Neff, NeffError, read_neff, write_neff
from torchneuron.target.dtypes import NEFF_DTYPES

from .conftest import make_neff


def _example(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(1)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype_name", list(NEFF_DTYPES))
@pytest.mark.parametrize("shape", [(3, 5), (), (0,), (2, 0, 4), (7,)])
def test_every_dtype_and_shape_round_trips(program, dtype_name, shape):
    dtype = NEFF_DTYPES[dtype_name].numpy
    array = _example(dtype, shape)
    neff = make_neff(program, weights={"t": array}, definition={})
    back = read_neff(write_neff(neff))
    restored = back.weights["t"]
    assert restored.dtype == dtype
    assert restored.shape == shape
    assert restored.tobytes() == array.tobytes()
    assert back == neff


def test_required_dtypes_are_supported():
    required = {
        "float32",
        "float64",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "complex64",  # weights share the one dtype table with inputs and outputs
    }
    assert required <= set(NEFF_DTYPES)
    assert NEFF_DTYPES["bfloat16"].numpy == np.dtype(ml_dtypes.bfloat16)


def test_special_float_values_round_trip_bit_exactly(program):
    array = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45], dtype=np.float32)
    back = read_neff(write_neff(make_neff(program, weights={"f": array}, definition={})))
    assert back.weights["f"].tobytes() == array.tobytes()


def test_whole_neff_round_trips(sample_neff):
    data = write_neff(sample_neff)
    back = read_neff(data)
    assert back == sample_neff
    assert back.manifest == sample_neff.manifest
    assert back.definition == sample_neff.definition
    assert back.program == sample_neff.program
    assert back.name == "model" and back.num_tpb == 1 and back.lnc_size == 2
    assert back.build_version == "torchneuron 0.1.0"
    # Rewriting what was read reproduces the file exactly.
    assert write_neff(back) == data


def test_program_is_a_loadable_portable_artifact(sample_neff):
    back = read_neff(write_neff(sample_neff))
    module = _stablehlo.deserialize_portable_artifact_str(back.program)
    assert b"stablehlo" in module or b"dot_general" in module


def test_header_fields_are_exposed(sample_neff):
    neff = make_neff(
        sample_neff.program,
        num_tpb=4,
        lnc_size=1,
        feature_bits=0x5,
        build_version="torchneuron 9.9",
    )
    back = read_neff(write_neff(neff))
    header = back.header
    assert header is not None
    assert (header.pkg_version, header.header_size) == (1, 1024)
    assert header.neff_version == (1, 0)
    assert header.num_tpb == 4 and header.requested_tpb_count == 4
    assert header.lnc_size == 1 and header.feature_bits == 5
    assert header.build_version == "torchneuron 9.9"
    assert header.name == "model"
    assert len(header.hash) == 32 and len(header.uuid) == 16
    assert header.uuid_str.count("-") == 4
    assert back.num_tpb == 4 and back.lnc_size == 1 and back.feature_bits == 5


def test_weights_are_writable_views(sample_neff, tmp_path):
    path = tmp_path / "m.neff"
    write_neff(sample_neff, path)
    for source in (path, path.read_bytes()):
        back = read_neff(source)
        for array in back.weights.values():
            assert array.flags.writeable


def test_non_contiguous_and_big_endian_inputs_are_stored_little_endian(program):
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    transposed = base.T
    big = np.arange(5, dtype=">f8")
    back = read_neff(
        write_neff(make_neff(program, weights={"t": transposed, "b": big}, definition={}))
    )
    np.testing.assert_array_equal(back.weights["t"], transposed)
    np.testing.assert_array_equal(back.weights["b"], big)
    assert back.weights["b"].dtype == np.dtype("<f8")


def test_extra_files_round_trip(sample_neff):
    schedule = b'{"format": "torchneuron-schedule", "lnc": 2, "target": "trn2", "version": 1}'
    sample_neff.extra_files = {"sg00/schedule.json": schedule, "sg00/engines/pe.bin": b"\x00\x01"}
    back = read_neff(write_neff(sample_neff))
    assert back.extra_files == sample_neff.extra_files


def test_uncompressed_tarball_round_trips(sample_neff):
    sample_neff.compression = "none"
    data = write_neff(sample_neff)
    assert data[1024 + 257 : 1024 + 262] == b"ustar"  # a plain tar right after the header
    back = read_neff(data)
    assert back.compression == "none" and back == sample_neff
    assert write_neff(back) == data


def test_tuples_and_numpy_scalars_in_json_are_normalised(program):
    signature = {
        "inputs": [{"name": "x", "shape": (1, np.int64(10)), "dtype": "float32"}],
        "outputs": [{"name": "out0", "shape": (1, 1), "dtype": "float32"}],
    }
    manifest = {"signature": signature, "ok": np.bool_(True), "lnc": np.int64(2)}
    neff = make_neff(program, manifest=manifest)
    back = read_neff(write_neff(neff))
    assert back.manifest["signature"]["inputs"][0]["shape"] == [1, 10]
    assert back.manifest["ok"] is True and type(back.manifest["lnc"]) is int
    assert back == neff  # equality compares the stored JSON form


def test_long_name_is_truncated_at_a_character_boundary(program):
    name = "é" * 200  # 400 bytes of UTF-8
    back = read_neff(write_neff(make_neff(program, name=name)))
    assert len(back.name.encode()) <= 255
    assert back.name == "é" * 127
    assert name.startswith(back.name)


def test_write_to_path_is_atomic_and_returns_the_bytes(sample_neff, tmp_path):
    path = tmp_path / "model.neff"
    path.write_bytes(b"old contents")
    data = write_neff(sample_neff, path)
    assert path.read_bytes() == data
    assert os.listdir(tmp_path) == ["model.neff"]  # no temporary file left behind
    assert read_neff(str(path)) == sample_neff


def test_write_to_missing_folder_raises_neff_error(sample_neff, tmp_path):
    with pytest.raises(NeffError, match="cannot write NEFF file .*missing"):
        write_neff(sample_neff, tmp_path / "missing" / "m.neff")
    assert not (tmp_path / "missing").exists()


def test_equality_notices_differences(sample_neff):
    other = make_neff(sample_neff.program)
    assert other == sample_neff
    other.weights["w0"] = other.weights["w0"] + 1
    assert other != sample_neff
    other = make_neff(sample_neff.program, lnc_size=1)
    assert other != sample_neff
    assert sample_neff != "not a neff"


def test_empty_neff_round_trips():
    neff = Neff(name="", manifest={"signature": {"inputs": [], "outputs": []}})
    back = read_neff(write_neff(neff))
    assert back == neff and back.weights == {} and back.program == b""
