"""A golden dump of a small NEFF pins the format byte for byte.

The golden file is ``describe()`` of an uncompressed NEFF (so zlib's version cannot
matter); it includes the tarball sha256 and the uuid, so any change to the bytes shows
up as a readable diff. Refresh deliberately with ``NEFF_UPDATE_GOLDEN=1 pytest tests/neff``.
"""

from __future__ import annotations

import os
from pathlib import Path

import ml_dtypes
import numpy as np

from torchneuron.neff import Neff, describe, read_neff, weight_file_path, write_neff

GOLDEN = Path(__file__).parent / "golden" / "small_model.txt"


def _small_model() -> Neff:
    return Neff(
        name="linear",
        manifest={
            "format": "torchneuron-neff",
            "name": "linear",
            "signature": {
                "inputs": [{"name": "x", "shape": [1, 2], "dtype": "float32"}],
                "outputs": [{"name": "y", "shape": [1, 1], "dtype": "float32"}],
            },
            "target": "trn2",
            "lnc": 2,
            "versions": {"torchneuron": "0.1.0"},
            "pipeline": "canonicalize",
            "source_hash": "0" * 64,
            "estimates": {},
        },
        definition={
            "variables": [
                {
                    "name": "x",
                    "kind": "input",
                    "shape": [1, 2],
                    "dtype": "float32",
                    "size_bytes": 8,
                },
                {
                    "name": "y",
                    "kind": "output",
                    "shape": [1, 1],
                    "dtype": "float32",
                    "size_bytes": 4,
                },
                {
                    "name": "weight",
                    "kind": "weight",
                    "shape": [1, 2],
                    "dtype": "bfloat16",
                    "size_bytes": 4,
                    "file": weight_file_path("weight"),
                },
            ],
            "dma_queues": [],
        },
        program=b"ML\xefR golden program bytes",
        weights={
            "weight": np.array([[1.5, -2.0]], dtype=ml_dtypes.bfloat16),
            "bias": np.array([7], dtype=np.int64),
        },
        build_version="torchneuron golden",
        compression="none",
    )


def test_small_model_matches_golden_dump():
    data = write_neff(_small_model())
    text = describe(read_neff(data))
    if os.environ.get("NEFF_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), (
        "NEFF bytes changed; if intended, refresh with NEFF_UPDATE_GOLDEN=1 and bump the "
        "format version when old readers would misread the new files"
    )
