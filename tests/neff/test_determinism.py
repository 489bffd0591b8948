"""The same Neff always gives the same bytes; different content gives a different file."""

from __future__ import annotations

import gzip
import io
import tarfile

import numpy as np

from torchneuron.neff import read_neff, write_neff

from .conftest import make_neff

# The smallest schedule the format allows (docs/neff-format.md 4.2).
SCHEDULE = b'{"format": "torchneuron-schedule", "lnc": 2, "target": "trn2", "version": 1}'


def test_same_neff_gives_identical_bytes(program):
    assert write_neff(make_neff(program)) == write_neff(make_neff(program))


def test_insertion_order_does_not_matter(program):
    first = make_neff(program)
    second = make_neff(program)
    second.weights = dict(reversed(list(second.weights.items())))
    second.manifest = dict(reversed(list(second.manifest.items())))
    assert write_neff(first) == write_neff(second)


def test_written_file_matches_returned_bytes_each_time(program, tmp_path):
    one = write_neff(make_neff(program), tmp_path / "a.neff")
    two = write_neff(make_neff(program), tmp_path / "b.neff")
    assert (tmp_path / "a.neff").read_bytes() == (tmp_path / "b.neff").read_bytes() == one == two


def test_different_weights_change_hash_and_uuid(program):
    base = make_neff(program)
    changed = make_neff(program)
    changed.weights["w0"] = changed.weights["w0"].copy()
    changed.weights["w0"][0, 0] += 1
    a, b = read_neff(write_neff(base)).header, read_neff(write_neff(changed)).header
    assert a.hash != b.hash
    assert a.uuid != b.uuid


def test_name_changes_uuid_but_not_tarball_hash(program):
    a = read_neff(write_neff(make_neff(program, name="a"))).header
    b = read_neff(write_neff(make_neff(program, name="b"))).header
    assert a.hash == b.hash
    assert a.uuid != b.uuid


def test_gzip_header_has_no_time_or_file_name(program):
    data = write_neff(make_neff(program))
    gz = data[1024:]
    assert gz[:3] == b"\x1f\x8b\x08"
    assert gz[3] & 0x08 == 0  # FNAME flag clear
    assert gz[4:8] == bytes(4)  # mtime 0


def test_tar_members_are_sorted_with_fixed_metadata(program):
    neff = make_neff(program, extra_files={"sg00/schedule.json": SCHEDULE})
    tar_bytes = gzip.decompress(write_neff(neff)[1024:])
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        members = tar.getmembers()
    names = [member.name for member in members]
    assert names == sorted(names)
    assert names == [
        "manifest.json",
        "sg00/def.json",
        "sg00/program.mlirbc",
        "sg00/schedule.json",
        "sg00/weights.json",
        "sg00/weights/scale.bin",
        "sg00/weights/w0.bin",
    ]
    for member in members:
        assert member.isreg()
        assert (member.mtime, member.uid, member.gid) == (0, 0, 0)
        assert (member.uname, member.gname, member.mode) == ("root", "root", 0o644)


def test_weight_files_are_raw_little_endian_bytes(program):
    weights = {"w": np.arange(6, dtype=np.int32).reshape(2, 3)}
    tar_bytes = gzip.decompress(
        write_neff(make_neff(program, weights=weights, definition={}))[1024:]
    )
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        raw = tar.extractfile("sg00/weights/w.bin").read()
    assert raw == np.arange(6, dtype="<i4").tobytes()
