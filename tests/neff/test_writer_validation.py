"""Bad input to the writer raises NeffError naming the problem, before any bytes are made."""

from __future__ import annotations

import numpy as np
import pytest

from torchneuron.neff import Neff, NeffError, weight_file_path, write_neff

from .conftest import make_neff


@pytest.mark.parametrize(
    "name", ["../escape", "a/b", "", ".hidden", "..", "x" * 129, "sp ace", "a\\b", "w\0", 3]
)
def test_unsafe_weight_names_are_rejected(program, name):
    neff = make_neff(program, weights={name: np.zeros(2, np.float32)}, definition={})
    with pytest.raises(NeffError, match="is not a safe file name"):
        write_neff(neff)


@pytest.mark.parametrize("name", ["w0", "layers.0.weight", "a-b_c", "X" * 128, "0"])
def test_safe_weight_names_are_accepted(program, name):
    neff = make_neff(program, weights={name: np.zeros(2, np.float32)}, definition={})
    write_neff(neff)
    assert weight_file_path(name) == f"sg00/weights/{name}.bin"


@pytest.mark.parametrize(
    "array, fragment",
    [
        (np.zeros(2, np.complex128), "has dtype complex128, which a NEFF cannot store"),
        (np.array(["a"]), "has dtype <U1, which a NEFF cannot store"),
        (np.array([object()]), "has dtype object"),
        ([1.0, 2.0], "must be a numpy array, got list"),
    ],
)
def test_unsupported_weights_are_rejected(program, array, fragment):
    with pytest.raises(NeffError, match=fragment):
        write_neff(make_neff(program, weights={"w": array}, definition={}))


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"lnc_size": 3}, "lnc_size is 3, must be 1 or 2"),
        ({"lnc_size": True}, "lnc_size is True, must be 1 or 2"),
        ({"num_tpb": 0}, "num_tpb is 0, must be between 1 and"),
        ({"num_tpb": 1.5}, "num_tpb must be an integer, got float"),
        ({"feature_bits": -1}, "feature_bits is -1, must be between 0 and"),
        ({"name": None}, "name must be a str, got NoneType"),
        ({"build_version": 7}, "build_version must be a str"),
        ({"program": "text"}, "program must be bytes, got str"),
        ({"manifest": [1]}, "manifest must be a dict, got list"),
        ({"manifest": {"x": object()}}, "manifest is not JSON-serialisable"),
        ({"manifest": {"x": float("nan")}}, "manifest is not JSON-serialisable"),
        ({"definition": {"variables": {}}}, "variables is an object with 0 keys, expected a list"),
        ({"compression": "zstd"}, "compression 'zstd' is not one of gzip, none"),
        ({"weights": [np.zeros(1)]}, "weights must be a dict"),
    ],
)
def test_bad_fields_are_rejected(program, overrides, fragment):
    with pytest.raises(NeffError, match=fragment):
        write_neff(make_neff(program, **overrides))


@pytest.mark.parametrize(
    "path, fragment",
    [
        ("../x", "is not a safe relative path"),
        ("/abs", "is not a safe relative path"),
        ("sg00//x", "is not a safe relative path"),
        ("sg00/.x", "is not a safe relative path"),
        ("manifest.json", "is reserved for the NEFF writer"),
        ("sg00/weights/w9.bin", "is reserved for the NEFF writer"),
    ],
)
def test_bad_extra_file_paths_are_rejected(program, path, fragment):
    with pytest.raises(NeffError, match=fragment):
        write_neff(make_neff(program, extra_files={path: b"x"}))


def test_extra_file_must_be_bytes(program):
    with pytest.raises(NeffError, match="extra file 'sg00/a.json' must be bytes, got str"):
        write_neff(make_neff(program, extra_files={"sg00/a.json": "{}"}))


def test_definition_must_agree_with_weights(program):
    definition = {
        "variables": [
            {
                "name": "w0",
                "kind": "weight",
                "file": weight_file_path("w0"),
                "shape": [5],
                "dtype": "float32",
            }
        ]
    }
    with pytest.raises(
        NeffError, match=r"weight variable 'w0' has shape \[5\], but its file holds \[10, 1\]"
    ):
        write_neff(make_neff(program, definition=definition))
    definition["variables"][0]["file"] = weight_file_path("nope")
    with pytest.raises(
        NeffError, match="names file 'sg00/weights/nope.bin', which holds no weight"
    ):
        write_neff(make_neff(program, definition=definition))


def test_not_a_neff():
    with pytest.raises(NeffError, match="write_neff expects a Neff, got dict"):
        write_neff({"name": "x"})


def test_defaults_follow_the_contract():
    neff = Neff(name="m")
    assert (neff.num_tpb, neff.lnc_size, neff.feature_bits) == (1, 2, 0)
    assert neff.build_version == "torchneuron 0.1.0"
    assert neff.compression == "gzip"
