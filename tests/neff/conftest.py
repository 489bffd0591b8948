"""Shared fixtures for the NEFF tests: a real StableHLO portable artifact and a sample Neff."""

from __future__ import annotations

import io
import tarfile

import ml_dtypes
import numpy as np
import pytest
from torch_mlir._mlir_libs import _stablehlo

from torchneuron.neff import Neff, weight_file_path
from torchneuron.neff.writer import assemble_neff

PROGRAM_TEXT = """
func.func @main(%x: tensor<1x10xf32>, %w: tensor<10x1xf32>) -> tensor<1x1xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<1x10xf32>, tensor<10x1xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}
"""


@pytest.fixture(scope="session")
def program() -> bytes:
    """A real StableHLO portable artifact, as the compiler stores it."""
    return _stablehlo.serialize_portable_artifact_str(
        PROGRAM_TEXT, _stablehlo.get_current_version()
    )


def make_neff(program_bytes: bytes, **overrides) -> Neff:
    rng = np.random.default_rng(0)
    weights = {
        "w0": rng.standard_normal((10, 1)).astype(np.float32),
        "scale": np.array(0.5, dtype=ml_dtypes.bfloat16),
    }
    fields = dict(
        name="model",
        manifest={
            "format": "torchneuron-neff",
            "name": "model",
            "signature": {
                "inputs": [{"name": "x", "shape": [1, 10], "dtype": "float32"}],
                "outputs": [{"name": "out0", "shape": [1, 1], "dtype": "float32"}],
            },
            "target": "trn2",
            "lnc": 2,
            "versions": {
                "torchneuron": "0.1.0",
                "torch": "2.13.0",
                "torch_mlir": "20261001",
                "jaxlib": "0.10.2",
                "stablehlo": "1.19.0",
            },
            "pipeline": "canonicalize,cse",
            "source_hash": "ab" * 32,
            "estimates": {"latency_us": 1.5},
        },
        definition={
            "variables": [
                {
                    "name": "x",
                    "kind": "input",
                    "shape": [1, 10],
                    "dtype": "float32",
                    "size_bytes": 40,
                },
                {
                    "name": "out0",
                    "kind": "output",
                    "shape": [1, 1],
                    "dtype": "float32",
                    "size_bytes": 4,
                },
                {
                    "name": "w0",
                    "kind": "weight",
                    "shape": [10, 1],
                    "dtype": "float32",
                    "size_bytes": 40,
                    "file": weight_file_path("w0"),
                },
            ],
            "dma_queues": [],
        },
        program=program_bytes,
        weights=weights,
    )
    fields.update(overrides)
    return Neff(**fields)


@pytest.fixture
def sample_neff(program: bytes) -> Neff:
    return make_neff(program)


def tar_bytes(members: list[tuple[str, bytes]] | list[tarfile.TarInfo | tuple], **_) -> bytes:
    """A plain tarball with the given (path, data) members, in the given order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            path, data = member
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def seal(tarball: bytes, **header) -> bytes:
    """A NEFF around a hand-made tarball, with a valid header, hash and uuid."""
    fields = dict(name="crafted", build_version="test", num_tpb=1, lnc_size=1, feature_bits=0)
    fields.update(header)
    return assemble_neff(tarball, **fields)
