"""Truncated, corrupted, foreign and malicious files all raise NeffError with a clear message."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchneuron.neff import NeffError, read_neff, write_neff
from torchneuron.neff import tarball as tarball_module
from torchneuron.neff.header import pack_header, unpack_header_fields
from torchneuron.neff.writer import build_members, pack_tarball

from .conftest import seal, tar_bytes


@pytest.fixture
def neff_bytes(sample_neff) -> bytes:
    return write_neff(sample_neff)


def _repack_header(data: bytes, **changes) -> bytes:
    """The same file with some header fields changed and the uuid recomputed."""
    fields = unpack_header_fields(data[:1024])
    fields.update(changes)
    return pack_header(fields) + data[1024:]


def _members(sample_neff, **replace) -> list[tuple[str, bytes]]:
    members = build_members(sample_neff)
    members.update(replace)
    return [(path, data) for path, data in members.items() if data is not None]


# --- truncation -----------------------------------------------------------------------


def test_empty_file():
    with pytest.raises(NeffError, match="empty file: not a NEFF"):
        read_neff(b"")


@pytest.mark.parametrize("keep", [1, 8, 500, 1023])
def test_truncated_inside_header(neff_bytes, keep):
    with pytest.raises(NeffError, match=f"the file is {keep} bytes, shorter than the 1024-byte"):
        read_neff(neff_bytes[:keep])


@pytest.mark.parametrize("cut", [0, 1, 100, -1])
def test_truncated_inside_tarball(neff_bytes, cut):
    data = neff_bytes[: 1024 + cut] if cut >= 0 else neff_bytes[:cut]
    present = len(data) - 1024
    with pytest.raises(
        NeffError,
        match=f"truncated NEFF: header says {len(neff_bytes) - 1024} data bytes, "
        f"file has {present}",
    ):
        read_neff(data)


def test_trailing_bytes(neff_bytes):
    with pytest.raises(NeffError, match="trailing bytes after NEFF data: header says"):
        read_neff(neff_bytes + b"\0")


def test_truncated_file_on_disk_names_the_path(neff_bytes, tmp_path):
    path = tmp_path / "cut.neff"
    path.write_bytes(neff_bytes[:2000])
    with pytest.raises(
        NeffError, match=rf"{path}: truncated NEFF: header says \d+ data bytes, file has 976"
    ):
        read_neff(path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(NeffError, match="cannot read NEFF file .*nope.neff: No such file"):
        read_neff(tmp_path / "nope.neff")


def test_wrong_source_type():
    with pytest.raises(NeffError, match="expects bytes or a file path, got int"):
        read_neff(42)


# --- header fields --------------------------------------------------------------------


def test_wrong_header_size(neff_bytes):
    data = neff_bytes[:8] + struct.pack("<Q", 512) + neff_bytes[16:]
    with pytest.raises(
        NeffError, match=r"not a NEFF file \(header_size field is 512, expected 1024\)"
    ):
        read_neff(data)


def test_unknown_major_version(neff_bytes):
    data = _repack_header(neff_bytes, neff_version_major=7, neff_version_minor=3)
    with pytest.raises(
        NeffError, match=r"unsupported NEFF major version 7 \(file says version 7\.3"
    ):
        read_neff(data)


def test_newer_minor_version_is_accepted(neff_bytes, sample_neff):
    back = read_neff(_repack_header(neff_bytes, neff_version_minor=9))
    assert back.header.neff_version == (1, 9) and back == sample_neff


def test_unknown_package_version(neff_bytes):
    with pytest.raises(NeffError, match="unsupported NEFF package version 99 .*knows 1"):
        read_neff(_repack_header(neff_bytes, pkg_version=99))


def test_bad_lnc_size_in_header(neff_bytes):
    with pytest.raises(NeffError, match="lnc_size is 3, expected 1 or 2"):
        read_neff(_repack_header(neff_bytes, lnc_size=3))


def test_hash_mismatch(neff_bytes):
    data = _repack_header(neff_bytes, hash=bytes(32))
    with pytest.raises(
        NeffError, match="corrupted NEFF: sha256 of the .*-byte tarball is .*header hash says 0000"
    ):
        read_neff(data)


def test_header_edit_without_new_uuid_is_caught(neff_bytes):
    data = bytearray(neff_bytes)
    data[168] ^= 0x02  # num_tpb 1 -> 3, uuid left as it was
    with pytest.raises(NeffError, match="corrupted NEFF header: uuid field is"):
        read_neff(bytes(data))


# --- flipped bytes (fuzzing) ------------------------------------------------------------

_FLIP_MESSAGES = (
    "not a NEFF file",
    "unsupported NEFF package version",
    "unsupported NEFF major version",
    "truncated NEFF",
    "trailing bytes",
    "corrupted NEFF",
    "invalid NEFF header",
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_flipped_header_bytes_are_detected(neff_bytes, data):
    position = data.draw(st.integers(0, 1023), label="position")
    mask = data.draw(st.integers(1, 255), label="mask")
    corrupted = bytearray(neff_bytes)
    corrupted[position] ^= mask
    with pytest.raises(NeffError) as caught:
        read_neff(bytes(corrupted))
    assert any(fragment in str(caught.value) for fragment in _FLIP_MESSAGES), str(caught.value)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_flipped_tarball_bytes_are_detected(neff_bytes, data):
    positions = data.draw(
        st.lists(st.integers(1024, len(neff_bytes) - 1), min_size=1, max_size=4, unique=True),
        label="positions",
    )
    mask = data.draw(st.integers(1, 255), label="mask")
    corrupted = bytearray(neff_bytes)
    for position in positions:
        corrupted[position] ^= mask
    with pytest.raises(NeffError, match="corrupted NEFF: sha256 of the"):
        read_neff(bytes(corrupted))


# --- foreign files ----------------------------------------------------------------------


def test_zip_file():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model.bin", np.arange(1000, dtype=np.float32).tobytes())
    with pytest.raises(
        NeffError, match=r"not a NEFF file \(header_size field is \d+, expected 1024\)"
    ):
        read_neff(buffer.getvalue())


def test_small_zip_file():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "hello")
    with pytest.raises(NeffError, match="shorter than the 1024-byte NEFF header"):
        read_neff(buffer.getvalue())


def test_random_bytes():
    data = np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    with pytest.raises(NeffError, match="not a NEFF file"):
        read_neff(data)


def test_text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello " * 500)
    with pytest.raises(NeffError, match=rf"{path}: not a NEFF file \(header_size field is"):
        read_neff(path)


def test_valid_header_around_garbage():
    with pytest.raises(NeffError, match="tarball is not a valid tar archive"):
        read_neff(seal(b"this is not a tarball" * 40))


def test_valid_header_around_bad_gzip():
    with pytest.raises(NeffError, match="tarball is not valid gzip data"):
        read_neff(seal(b"\x1f\x8b\x08\x00" + b"\xff" * 100))


def test_valid_header_around_truncated_gzip(sample_neff):
    tarball = pack_tarball(build_members(sample_neff), "gzip")
    with pytest.raises(NeffError, match="gzip stream of the tarball ends early"):
        read_neff(seal(tarball[:-20]))


# --- malicious tarballs (valid header and hash) ------------------------------------------


@pytest.mark.parametrize(
    "path", ["../evil.txt", "/etc/passwd", "sg00/../../x", "sg00//x", "./manifest.json"]
)
def test_path_traversal_member(sample_neff, path):
    tarball = tar_bytes([*_members(sample_neff), (path, b"boom")])
    with pytest.raises(NeffError, match="unsafe path in tarball: member"):
        read_neff(seal(tarball))


@pytest.mark.parametrize(
    "kind, fragment",
    [
        (tarfile.SYMTYPE, "a symbolic link"),
        (tarfile.DIRTYPE, "a directory"),
        (tarfile.LNKTYPE, "a hard link"),
        (tarfile.CHRTYPE, "a device"),
        (tarfile.FIFOTYPE, "a FIFO"),
    ],
)
def test_non_regular_member(sample_neff, kind, fragment):
    info = tarfile.TarInfo("sg00/link")
    info.type = kind
    info.linkname = "/etc/passwd"
    tarball = tar_bytes([*_members(sample_neff), info])
    with pytest.raises(NeffError, match=f"member 'sg00/link' is {fragment}; only regular files"):
        read_neff(seal(tarball))


def test_duplicate_member(sample_neff):
    members = _members(sample_neff)
    tarball = tar_bytes([*members, members[0]])
    with pytest.raises(NeffError, match="tarball has member 'manifest.json' twice"):
        read_neff(seal(tarball))


@pytest.mark.parametrize(
    "missing", ["manifest.json", "sg00/def.json", "sg00/program.mlirbc", "sg00/weights.json"]
)
def test_missing_required_member(sample_neff, missing):
    tarball = tar_bytes(_members(sample_neff, **{missing: None}))
    with pytest.raises(NeffError, match=f"tarball lacks the required member {missing}"):
        read_neff(seal(tarball))


def test_manifest_not_json(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"manifest.json": b"{not json"}))
    with pytest.raises(NeffError, match="manifest.json is not valid JSON"):
        read_neff(seal(tarball))


def test_definition_not_an_object(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"sg00/def.json": b"[1, 2]"}))
    with pytest.raises(
        NeffError, match="sg00/def.json must hold a JSON object, found a list of 2 items"
    ):
        read_neff(seal(tarball))


def test_weight_file_size_mismatch(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"sg00/weights/w0.bin": b"\0" * 12}))
    with pytest.raises(
        NeffError,
        match=r"weight file sg00/weights/w0.bin is 12 bytes, "
        r"but sg00/weights.json says 40 \(float32\[10, 1\]\)",
    ):
        read_neff(seal(tarball))


def test_weight_file_content_mismatch(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"sg00/weights/w0.bin": b"\0" * 40}))
    with pytest.raises(NeffError, match="weight file sg00/weights/w0.bin is corrupted: sha256 is"):
        read_neff(seal(tarball))


def test_weight_file_missing(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"sg00/weights/w0.bin": None}))
    with pytest.raises(
        NeffError, match="lists weight 'w0', but the tarball has no sg00/weights/w0.bin"
    ):
        read_neff(seal(tarball))


def test_unlisted_weight_file(sample_neff):
    tarball = tar_bytes(_members(sample_neff, **{"sg00/weights/extra.bin": b"1234"}))
    with pytest.raises(
        NeffError, match="member sg00/weights/extra.bin is not listed in sg00/weights.json"
    ):
        read_neff(seal(tarball))


def _index(**entry_changes) -> bytes:
    import json

    entry = {
        "name": "w",
        "dtype": "float32",
        "shape": [2],
        "size_bytes": 8,
        "sha256": "0" * 64,
        "file": "sg00/weights/w.bin",
    }
    entry.update(entry_changes)
    return json.dumps({"weights": [entry]}).encode()


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"dtype": "object"}, r"weights\[0\]\.dtype is 'object', not one of float64, "),
        (
            {"dtype": "complex128"},
            r"weights\[0\]\.dtype is 'complex128', not one of",
        ),  # not in a NEFF
        ({"shape": [-1]}, r"weights\[0\]\.shape\[0\] is -1, less than 0"),
        ({"shape": "2"}, r"weights\[0\]\.shape is '2', expected a list"),
        ({"size_bytes": 9}, r"weights\[0\]\.size_bytes is 9, but float32\[2\] takes 8 bytes"),
        ({"name": "../w"}, r"weights\[0\]\.name is '\.\./w', not a safe file name"),
        (
            {"file": "sg00/weights/other.bin"},
            r"weights\[0\]\.file is 'sg00/weights/other.bin', expected 'sg00/weights/w.bin'",
        ),
        ({"extra": 1}, r"weights\[0\] has the unknown key 'extra'"),
    ],
)
def test_bad_weight_index_entry(sample_neff, changes, fragment):
    members = _members(
        sample_neff, **{"sg00/weights.json": _index(**changes), "sg00/weights/w.bin": b"\0" * 8}
    )
    with pytest.raises(NeffError, match="^sg00/weights.json: " + fragment):
        read_neff(seal(tar_bytes(members)))


def test_definition_names_missing_weight_file(sample_neff):
    import json

    definition = {
        "variables": [
            {"name": "q", "kind": "weight", "shape": [2], "dtype": "float32"},
            *sample_neff.definition["variables"],
        ]
    }
    definition["variables"][0]["file"] = "sg00/weights/q.bin"
    tarball = tar_bytes(_members(sample_neff, **{"sg00/def.json": json.dumps(definition).encode()}))
    with pytest.raises(
        NeffError,
        match="sg00/def.json: weight variable 'q' names file 'sg00/weights/q.bin', "
        "which holds no weight",
    ):
        read_neff(seal(tarball))


def test_decompression_cap(sample_neff):
    sample_neff.weights["zeros"] = np.zeros(1 << 20, dtype=np.uint8)  # compresses to ~1 KiB
    data = write_neff(sample_neff)
    assert len(data) < 10_000
    with pytest.raises(
        NeffError, match="tarball expands beyond max_total_bytes=1000 bytes; refusing"
    ):
        read_neff(data, max_total_bytes=1000)


def test_uncompressed_size_cap(sample_neff):
    sample_neff.compression = "none"
    data = write_neff(sample_neff)
    with pytest.raises(
        NeffError, match=rf"tarball is {len(data) - 1024} bytes, more than max_total_bytes=3000"
    ):
        read_neff(data, max_total_bytes=3000)


def test_member_count_cap(sample_neff, monkeypatch):
    monkeypatch.setattr(tarball_module, "MAX_MEMBERS", 5)
    with pytest.raises(NeffError, match="tarball has more than 5 members"):
        read_neff(write_neff(sample_neff))


def test_member_cut_short(sample_neff):
    # A plain tar whose last member's data is cut off, resealed with a valid hash.
    tarball = tar_bytes(_members(sample_neff, **{"sg00/zz.bin": b"x" * 5000}))
    end = tarball.rindex(b"x" * 100) + 100
    with pytest.raises(
        NeffError, match="tarball member 'sg00/zz.bin' is cut short: its 5000 bytes end at offset"
    ):
        read_neff(seal(tarball[: end - 3000]))


def test_gzip_with_trailing_garbage(sample_neff):
    tarball = gzip.compress(tar_bytes(_members(sample_neff)), mtime=0) + b"junk"
    with pytest.raises(
        NeffError, match="unexpected bytes after the end of the gzip-compressed tarball"
    ):
        read_neff(seal(tarball))


def test_reader_never_unpickles(sample_neff, monkeypatch):
    import pickle

    def refuse(*args, **kwargs):
        raise AssertionError("the NEFF reader must not unpickle")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(np, "load", refuse)
    assert read_neff(write_neff(sample_neff)) == sample_neff
