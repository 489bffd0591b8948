"""A dynamic program stored once in one NEFF (neff/dynamic.py): the manifest's ``dynamic``
entry round-trips, the program runs at several shapes after the round trip, and every
corrupted signature or program field is one ``NeffError`` line, never a crash."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.neff.conftest import seal, tar_bytes
from torchneuron.compiler import dynamic
from torchneuron.compiler.dynamic import DynamicProgram, ShapeConstraintError, SymbolicSignature
from torchneuron.neff import NeffError, describe, read_neff
from torchneuron.neff.container import MANIFEST_PATH, PROGRAM_PATH, canonical_json
from torchneuron.neff.writer import build_members


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


# y = x @ w.T with a symbolic batch: what compile_dynamic_graph stores, written by hand.
TEXT = """module {
  func.func @main(%w: tensor<4x16xf32> {neuron.weight = "w"}, %x: tensor<?x16xf32> {neuron.input = "x"}) -> tensor<?x4xf32> {
    %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %y = stablehlo.dot_general %x, %t, contracting_dims = [1] x [0] : (tensor<?x16xf32>, tensor<16x4xf32>) -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
"""
WEIGHT = np.arange(64, dtype=np.float32).reshape(4, 16) / 64


def _program(text: str = TEXT, guards: tuple[str, ...] = ("b != 3",)) -> DynamicProgram:
    signature = SymbolicSignature(
        ({"name": "x", "dtype": "float32", "shape": ["b", 16]},), {"b": (2, 64)}, guards
    )
    return DynamicProgram(
        name="matmul",
        target="trn2",
        pipeline=None,
        text=text,
        signature=signature,
        weights={"w": WEIGHT},
        weight_sources={"w": "linear.weight"},
        output_names=["y"],
        output_count=1,
        none_outputs=(),
        constant_outputs={},
    )


@pytest.fixture(scope="module")
def dynamic_neff() -> bytes:
    return _program().to_neff()


def test_manifest_round_trip_and_runs_at_several_shapes(dynamic_neff, monkeypatch, tmp_path):
    # specializations are counted: none from an earlier run's disk cache
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    neff = read_neff(dynamic_neff)
    assert neff.header.neff_version == (1, 1)
    entry = neff.manifest["dynamic"]
    assert entry["signature"] == {
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["b", 16]}],
        "symbols": {"b": {"min": 2, "max": 64}},
    }
    assert entry["guards"] == ["b != 3"]
    assert neff.manifest["signature"] == {"inputs": [], "outputs": []}
    assert neff.program.decode() == TEXT
    text = describe(neff)
    assert "input  x: float32[b, 16]" in text and "symbol b in [2, 64]" in text
    assert "guard  b != 3" in text and "StableHLO text" in text

    program = DynamicProgram.from_neff(dynamic_neff)
    assert program.signature == _program().signature
    assert program.text == TEXT and program.weight_sources == {"w": "linear.weight"}
    np.testing.assert_array_equal(program.weights["w"], WEIGHT)
    dynamic.reset_stats()
    rng = np.random.default_rng(0)
    for n in (2, 5, 64, 5):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        (y,) = program.run([x])
        np.testing.assert_allclose(y, x @ WEIGHT.T, rtol=1e-5, atol=1e-5)
    assert _settled()["specializations"] == 3
    assert _settled()["specialization_hits"] == 1
    with pytest.raises(ShapeConstraintError, match=r"input 'x' dimension 0 is 65.*\[2, 64\]"):
        program.run([np.zeros((65, 16), np.float32)])
    with pytest.raises(ShapeConstraintError, match="guard b != 3 fails for b = 3"):
        program.run([np.zeros((3, 16), np.float32)])
    # the same bytes again: the writer is deterministic
    assert program.to_neff() == dynamic_neff


def test_static_loader_refuses_a_dynamic_neff(dynamic_neff):
    from torchneuron.runtime import load_neff
    from torchneuron.runtime.errors import InvalidNeffError

    with pytest.raises(InvalidNeffError, match="dynamic program"):
        load_neff(dynamic_neff)


def test_static_neffs_keep_version_1_0(neff_bytes_static):
    assert read_neff(neff_bytes_static).header.neff_version == (1, 0)


@pytest.fixture
def neff_bytes_static(sample_neff) -> bytes:
    from torchneuron.neff import write_neff

    return write_neff(sample_neff)


def _crafted(dynamic_neff: bytes, manifest=None, program=None, version=(1, 1)) -> bytes:
    """The dynamic NEFF with its manifest or program replaced, sealed with a valid hash
    (so only the reader's field checks can refuse it)."""
    members = build_members(read_neff(dynamic_neff))
    if manifest is not None:
        members[MANIFEST_PATH] = canonical_json(manifest, "manifest")
    if program is not None:
        members[PROGRAM_PATH] = program
    return seal(tar_bytes(sorted(members.items())), neff_version=version)


def _edit(change):
    def edit(manifest):
        change(manifest["dynamic"])
        return manifest

    return edit


MANIFEST_CORRUPTIONS = {
    "min > max": _edit(lambda d: d["signature"]["symbols"]["b"].update(min=9, max=4)),
    "negative min": _edit(lambda d: d["signature"]["symbols"]["b"].update(min=-1)),
    "python in a size": _edit(
        lambda d: d["signature"]["inputs"][0].update(shape=["__import__('os').getcwd()", 16])
    ),
    "power": _edit(lambda d: d["signature"]["inputs"][0].update(shape=["b ** 99", 16])),
    "undeclared symbol": _edit(lambda d: d["signature"]["inputs"][0].update(shape=["b", "c"])),
    "unknown dtype": _edit(lambda d: d["signature"]["inputs"][0].update(dtype="float7")),
    "input name a path": _edit(lambda d: d["signature"]["inputs"][0].update(name="../x")),
    "guard not a comparison": _edit(lambda d: d.update(guards=["b + 1"])),
    "guard with a call": _edit(lambda d: d.update(guards=["len(b) > 1"])),
    "guard of unknown symbol": _edit(lambda d: d.update(guards=["c != 3"])),
    "output count negative": _edit(lambda d: d["outputs"].update(count=-1)),
    "size output of unknown symbol": _edit(
        lambda d: d["outputs"].update(count=2, sizes={"1": "z"})
    ),
    "output given twice": _edit(
        lambda d: d["outputs"].update(count=2, none=[1], constants={"1": 2.0})
    ),
    "huge range": _edit(lambda d: d["signature"]["symbols"]["b"].update(max=2**80)),
    "wrong format": _edit(lambda d: d.update(format="xla-hlo")),
    "unknown key": _edit(lambda d: d.update(extra=1)),
    "not an object": lambda m: {**m, "dynamic": [1, 2]},
    "static signature too": lambda m: {
        **m,
        "signature": {
            "inputs": [{"name": "x", "shape": [2, 16], "dtype": "float32"}],
            "outputs": [],
        },
    },
}


@pytest.mark.parametrize("case", sorted(MANIFEST_CORRUPTIONS))
def test_corrupted_manifest_field_is_one_neff_error(dynamic_neff, case):
    manifest = json.loads(json.dumps(read_neff(dynamic_neff).manifest))
    data = _crafted(dynamic_neff, manifest=MANIFEST_CORRUPTIONS[case](manifest))
    with pytest.raises(NeffError) as error:
        read_neff(data)
    message = str(error.value)
    assert "\n" not in message and MANIFEST_PATH in message, message
    assert "dynamic" in message or "signature" in message, message


PROGRAM_CORRUPTIONS = {
    "not utf-8": (b"\xff\xfe module", "not UTF-8"),
    "a NUL": (b"module {\x00}", "NUL"),
    "not a module": (b"print('hi')", "not an MLIR module"),
    "unparsable": (b"module { func.func @main( {{{ }", "not StableHLO text"),
    "input renamed": (TEXT.replace('neuron.input = "x"', 'neuron.input = "z"').encode(), "'z'"),
    "wrong static size": (
        TEXT.replace("?x16xf32>, tensor<16x4", "?x16xf32>, tensor<16x4")
        .replace("%x: tensor<?x16xf32>", "%x: tensor<?x15xf32>")
        .encode(),
        "stablehlo|15",
    ),
    "foreign op": (
        TEXT.replace(
            "return %y",
            "%c = stablehlo.custom_call @evil(%y) : (tensor<?x4xf32>) -> tensor<?x4xf32>\n    return %y",
        ).encode(),
        "custom_call",
    ),
    "weight missing": (TEXT.replace('neuron.weight = "w"', 'neuron.weight = "v"').encode(), "'v'"),
    "no main": (TEXT.replace("@main", "@other").encode(), "@main"),
    # the MLIR parser recurses per level: 100,000 levels overflow its stack (a crash)
    "nested 100000 deep": (
        TEXT.replace(
            "return %y",
            "%c = stablehlo.constant dense<"
            + "[" * 100_000
            + "1.0"
            + "]" * 100_000
            + "> : tensor<f32>\n    return %y",
        ).encode(),
        "nests brackets 100003 deep, more than 256",
    ),
}


@pytest.mark.parametrize("case", sorted(PROGRAM_CORRUPTIONS))
def test_corrupted_program_is_one_neff_error(dynamic_neff, case):
    program, expected = PROGRAM_CORRUPTIONS[case]
    data = _crafted(dynamic_neff, program=program)
    with pytest.raises(NeffError) as error:
        DynamicProgram.from_neff(data)  # the reader, then the program's own checks
    message = str(error.value)
    assert "\n" not in message and PROGRAM_PATH in message, message
    import re

    assert re.search(expected, message), message


def test_dynamic_entry_in_a_version_1_0_file_is_refused(dynamic_neff):
    data = _crafted(dynamic_neff, manifest=read_neff(dynamic_neff).manifest, version=(1, 0))
    with pytest.raises(NeffError, match="needs 1.1"):
        read_neff(data)


def test_writer_refuses_what_the_reader_would(dynamic_neff):
    from torchneuron.neff import write_neff

    neff = read_neff(dynamic_neff)
    neff.manifest["dynamic"]["guards"] = ["__import__('os')"]
    with pytest.raises(NeffError, match="guard"):
        write_neff(neff)
    neff = read_neff(dynamic_neff)
    neff.program = b"\x00"
    with pytest.raises(NeffError, match=PROGRAM_PATH):
        write_neff(neff)
