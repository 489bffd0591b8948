"""The header sits at the documented offsets, packed little-endian, 1024 bytes."""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

from torchneuron.neff import HEADER_FIELDS, HEADER_SIZE, NEFF_VERSION, PKG_VERSION, write_neff

from .conftest import make_neff

DOC = Path(__file__).resolve().parents[2] / "docs" / "neff-format.md"

# The layout from design.md / the public neff_header_t, written out independently of
# the implementation's table so a change there cannot go unnoticed.
EXPECTED_LAYOUT = [
    ("pkg_version", 0, 8),
    ("header_size", 8, 8),
    ("data_size", 16, 8),
    ("neff_version_major", 24, 8),
    ("neff_version_minor", 32, 8),
    ("neff_build_version", 40, 128),
    ("num_tpb", 168, 4),
    ("hash", 172, 32),
    ("uuid", 204, 16),
    ("name", 220, 256),
    ("requested_tpb_count", 476, 4),
    ("tpb_per_node", 480, 64),
    ("feature_bits", 544, 8),
    ("lnc_size", 552, 4),
    ("padding", 556, 468),
]


def test_field_table_matches_the_public_layout():
    assert [(f.name, f.offset, f.size) for f in HEADER_FIELDS] == EXPECTED_LAYOUT
    assert HEADER_SIZE == 1024 == sum(size for _, _, size in EXPECTED_LAYOUT)


def test_raw_bytes_at_documented_offsets(program):
    neff = make_neff(
        program,
        name="my-model",
        num_tpb=2,
        lnc_size=1,
        feature_bits=0x1234,
        build_version="torchneuron 0.1.0+test",
    )
    data = write_neff(neff)
    u64 = lambda offset: struct.unpack_from("<Q", data, offset)[0]
    u32 = lambda offset: struct.unpack_from("<I", data, offset)[0]
    assert u64(0) == PKG_VERSION
    assert u64(8) == 1024
    assert u64(16) == len(data) - 1024
    assert (u64(24), u64(32)) == NEFF_VERSION
    assert data[40:168] == b"torchneuron 0.1.0+test".ljust(128, b"\0")
    assert u32(168) == 2
    assert data[172:204] == hashlib.sha256(data[1024:]).digest()
    assert data[204:220] != bytes(16)
    assert data[220:476] == b"my-model".ljust(256, b"\0")
    assert u32(476) == 2  # requested_tpb_count = num_tpb
    assert data[480:544] == bytes(64)
    assert u64(544) == 0x1234
    assert u32(552) == 1
    assert data[556:1024] == bytes(468)
    assert data[1024:1026] == b"\x1f\x8b"  # gzip tarball follows the header


def test_uuid_is_a_version_8_digest_of_the_header(program):
    data = write_neff(make_neff(program))
    uuid_field = data[204:220]
    zeroed = data[:204] + bytes(16) + data[220:1024]
    digest = bytearray(hashlib.sha256(zeroed).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    assert uuid_field == bytes(digest)
    assert uuid_field[6] >> 4 == 8


def test_format_document_lists_every_field_at_its_offset():
    text = DOC.read_text()
    for name, offset, size in EXPECTED_LAYOUT:
        row = re.search(rf"^\|\s*{offset}\s*\|\s*{size}\s*\|[^\n]*`{name}`", text, re.MULTILINE)
        assert row, f"docs/neff-format.md has no table row for {name} at offset {offset}"
