"""describe() prints what `neuronc inspect` shows: header, sections, signature, weights."""

from __future__ import annotations

import re

from torchneuron.neff import describe, read_neff, write_neff


def test_describe_read_neff(sample_neff):
    data = write_neff(sample_neff)
    neff = read_neff(data)
    text = describe(neff)
    assert text.startswith("NEFF 'model'\n")
    assert f"data_size            {len(data) - 1024} " in text
    assert "neff_version         1.0" in text
    assert "lnc_size             2" in text
    assert neff.header.hash_hex in text and neff.header.uuid_str in text
    assert "target: trn2  lnc: 2" in text
    assert "torch 2.13.0" in text and "torch_mlir 20261001" in text
    assert "inputs:  x: float32[1x10]" in text
    assert "outputs: out0: float32[1x1]" in text
    assert re.search(r"sg00/program.mlirbc\s+\d+ B  \(MLIR bytecode\)", text)
    assert re.search(r"sg00/weights/w0.bin\s+40 B", text)
    assert re.search(r"^  w0\s+float32\s+10x1\s+40$", text, re.MULTILINE)
    assert re.search(r"^  scale\s+bfloat16\s+scalar\s+2$", text, re.MULTILINE)
    assert "weights: 2 (42 B)" in text


def test_describe_unwritten_neff_matches_read_back(sample_neff):
    assert describe(sample_neff) == describe(read_neff(write_neff(sample_neff)))
