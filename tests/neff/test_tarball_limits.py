"""Resource limits on a NEFF's tarball: refused while streaming, never after, never a
MemoryError.

Hostile tarballs are built as real NEFFs (``build_members`` and the writer's header via
``seal``); the big ones are gzip streams of mostly zeros, made quickly by repeating one
compressed run of zeros. Peak memory is measured in a child process.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import tarfile
import textwrap
import tracemalloc
import zlib

import numpy as np
import pytest

from torchneuron.neff import NeffError, read_neff, write_neff
from torchneuron.neff import tarball as tarball_module
from torchneuron.neff.header import HEADER_SIZE
from torchneuron.neff.tarball import (
    LARGEST_CORE_HBM_BYTES,
    MAX_HEADER_BYTES,
    MAX_JSON_MEMBER_BYTES,
    MAX_PROGRAM_BYTES,
    decompress,
    list_members,
    member_limit,
    open_tarball,
)
from torchneuron.neff.writer import build_members, pack_tarball
from torchneuron.target.hardware import CHIPS, GiB, MiB

from .conftest import seal

_ZERO_RUN = 16 * MiB


def _header(path: str, size: int, **pax: str) -> bytes:
    """The tar header(s) of a regular file, as the writer makes them (pax format)."""
    info = tarfile.TarInfo(path)
    info.size = size
    info.pax_headers = pax
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _records(members: list[tuple[str, bytes]]) -> bytes:
    """Tar records of ``members`` (header, data, zero padding), without the end marker."""
    out = []
    for path, data in members:
        out += [_header(path, len(data)), data, bytes(-len(data) % tarfile.BLOCKSIZE)]
    return b"".join(out)


def _end_of_archive(length: int) -> bytes:
    """The two zero blocks and record padding that follow an archive of ``length`` bytes."""
    end = length + 2 * tarfile.BLOCKSIZE
    return bytes(2 * tarfile.BLOCKSIZE + -end % tarfile.RECORDSIZE)


def _gzip_with_zeros(head: bytes, zero_count: int) -> bytes:
    """A valid gzip stream (CRC and length included) of ``head`` then ``zero_count`` zero
    bytes: runs of zeros compressed once, after a full flush, so they can be repeated."""
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = [raw.compress(head) + raw.flush(zlib.Z_FULL_FLUSH)]
    crc = zlib.crc32(head)
    runs, rest = divmod(zero_count, _ZERO_RUN)
    for count, times in ((_ZERO_RUN, runs), (rest, 1)):
        if count and times:
            zeros = bytes(count)
            run = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            body.append((run.compress(zeros) + run.flush(zlib.Z_FULL_FLUSH)) * times)
            for _ in range(times):
                crc = zlib.crc32(zeros, crc)
    gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    final_block = b"\x03\x00"  # an empty last block
    trailer = struct.pack("<II", crc, (len(head) + zero_count) & 0xFFFFFFFF)
    return gzip_header + b"".join(body) + final_block + trailer


_READ_IN_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from torchneuron.neff import NeffError, read_neff

    headroom = int(sys.argv[2])
    if headroom:
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
        limit = size * 1024 + headroom
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        neff = read_neff(sys.argv[1])
        outcome = ["read", {name: int(array.nbytes) for name, array in neff.weights.items()}]
        del neff
    except NeffError as error:
        outcome = ["NeffError", str(error)]
    except BaseException as error:
        outcome = [type(error).__name__, str(error)]
    seconds = time.perf_counter() - start
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    freed = bytearray(headroom // 2) is not None  # the failed read's buffer was let go
    print(json.dumps([*outcome, growth * 1024, seconds, freed]))
    """
)


def _read_in_child(path, headroom: int = 0) -> tuple[str, object, int, float]:
    """(outcome, message or weight sizes, peak RSS growth in bytes, seconds) of reading
    ``path`` in a fresh process, its address space limited to ``headroom`` more bytes."""
    result = subprocess.run(
        [sys.executable, "-c", _READ_IN_CHILD, str(path), str(headroom)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    outcome, detail, growth, seconds, freed = json.loads(result.stdout)
    assert freed
    return outcome, detail, growth, seconds


def _peak_traced_bytes(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- the caps ---------------------------------------------------------------------------


def test_default_cap_is_the_largest_logical_core_hbm():
    largest = max(chip.hbm_bytes_per_logical_core(lnc) for chip in CHIPS.values() for lnc in (1, 2))
    assert LARGEST_CORE_HBM_BYTES == largest == CHIPS["trn3"].hbm_bytes_per_chip // 4
    assert tarball_module.DEFAULT_MAX_TOTAL_BYTES == LARGEST_CORE_HBM_BYTES < 64 * GiB


@pytest.mark.parametrize(
    "path, kind, limit",
    [
        ("manifest.json", "a JSON member", MAX_JSON_MEMBER_BYTES),
        ("sg00/schedule.json", "a JSON member", MAX_JSON_MEMBER_BYTES),
        ("sg00/program.mlirbc", "the program", MAX_PROGRAM_BYTES),
        ("sg00/notes.bin", "an extra file", tarball_module.MAX_EXTRA_FILE_BYTES),
        ("sg00/weights/w.bin", "a weight file", LARGEST_CORE_HBM_BYTES),
    ],
)
def test_member_limit_by_kind(path, kind, limit):
    assert member_limit(path) == (kind, limit)


# --- a bomb after the archive -----------------------------------------------------------


@pytest.fixture(scope="module")
def bomb_path(tmp_path_factory, program):
    """A 1 MB NEFF: a valid tarball, then 1 GiB of zeros inside the same gzip stream."""
    from .conftest import make_neff

    tar = pack_tarball(build_members(make_neff(program)), "none")
    path = tmp_path_factory.mktemp("bomb") / "bomb.neff"
    path.write_bytes(seal(_gzip_with_zeros(tar, 1 * GiB)))
    return path


def test_gzip_bomb_after_the_archive_is_refused_within_a_few_kilobytes(bomb_path):
    assert bomb_path.stat().st_size < 2 * MiB
    outcome, message, growth, seconds = _read_in_child(bomb_path)
    assert outcome == "NeffError"
    assert "tarball continues after the end of its tar archive at offset" in message
    assert "only zero padding up to offset 10240" in message
    assert growth < 64 * MiB, f"reading the bomb grew the process by {growth} bytes"


def test_gzip_bomb_refusal_decompresses_almost_nothing(bomb_path):
    stored = memoryview(bomb_path.read_bytes())[HEADER_SIZE:]
    with pytest.raises(NeffError, match="continues after the end of its tar archive"):
        open_tarball(stored)
    assert _peak_traced_bytes(lambda: pytest.raises(NeffError, open_tarball, stored)) < 1 * MiB


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_zero_blocks_past_the_tar_record_are_refused(sample_neff, compression):
    tar = pack_tarball(build_members(sample_neff), "none") + bytes(tarfile.RECORDSIZE)
    stored = tar if compression == "none" else zlib.compress(tar, wbits=31)
    with pytest.raises(NeffError, match="tarball continues after the end of its tar archive"):
        read_neff(seal(stored))


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_data_after_the_end_of_archive_is_refused(sample_neff, compression):
    tar = bytearray(pack_tarball(build_members(sample_neff), "none"))
    tar[-1] = 1  # inside the record padding
    stored = bytes(tar) if compression == "none" else zlib.compress(bytes(tar), wbits=31)
    with pytest.raises(NeffError, match="tarball has data after the end of its tar archive"):
        read_neff(seal(stored))


def test_a_second_archive_after_the_first_is_refused(sample_neff):
    tar = pack_tarball(build_members(sample_neff), "none")
    second = pack_tarball({"sg00/late.json": b"{}"}, "none")
    with pytest.raises(NeffError, match="tarball continues after the end of its tar archive"):
        read_neff(seal(tar + second))


def test_archive_without_record_padding_is_read(sample_neff):
    members = list(build_members(sample_neff).items())
    body = _records(members)
    tar = body + bytes(2 * tarfile.BLOCKSIZE)  # end marker, no padding to the record
    assert len(tar) % tarfile.RECORDSIZE
    back = read_neff(seal(zlib.compress(tar, wbits=31)))
    assert back.manifest == sample_neff.manifest and back.program == sample_neff.program
    assert back.weights["w0"].tobytes() == sample_neff.weights["w0"].tobytes()


# --- members that claim too much ---------------------------------------------------------


@pytest.mark.parametrize(
    "path, limit",
    [
        ("manifest.json", MAX_JSON_MEMBER_BYTES),
        ("sg00/schedule.json", MAX_JSON_MEMBER_BYTES),
        ("sg00/program.mlirbc", MAX_PROGRAM_BYTES),
        ("sg00/notes.bin", tarball_module.MAX_EXTRA_FILE_BYTES),
    ],
)
def test_member_claiming_more_than_its_kind_allows_is_refused(path, limit):
    tar = _header(path, limit + 1) + bytes(2 * tarfile.BLOCKSIZE)
    with pytest.raises(
        NeffError,
        match=rf"tarball member '{path}' is {limit + 1} bytes, more than the {limit}-byte limit",
    ):
        read_neff(seal(zlib.compress(tar, wbits=31)))


def test_oversized_json_member_is_refused_before_its_data_is_decompressed():
    size = MAX_JSON_MEMBER_BYTES + tarfile.BLOCKSIZE  # zeros: compresses to ~32 KiB
    tar = _header("manifest.json", size) + bytes(size) + _end_of_archive(512 + size)
    stored = memoryview(zlib.compress(tar, 1, wbits=31))
    del tar
    with pytest.raises(NeffError, match="'manifest.json' is 33554944 bytes, more than the"):
        open_tarball(stored)
    assert _peak_traced_bytes(lambda: pytest.raises(NeffError, open_tarball, stored)) < 1 * MiB


def test_weight_claiming_more_than_the_stream_can_hold_is_refused_at_once(sample_neff):
    members = list(build_members(sample_neff).items())
    head = _records(members) + _header("sg00/weights/zz.bin", 20 * GiB)
    stored = memoryview(zlib.compress(head + bytes(100_000), wbits=31))
    with pytest.raises(
        NeffError,
        match=r"member 'sg00/weights/zz.bin' is cut short: its 21474836480 bytes end at offset "
        r"\d+, the tarball has at most \d+",
    ):
        open_tarball(stored)
    assert _peak_traced_bytes(lambda: pytest.raises(NeffError, open_tarball, stored)) < 1 * MiB


def test_member_beyond_max_total_bytes_is_refused_before_its_data(sample_neff):
    sample_neff.weights["zeros"] = np.zeros(4 * MiB, dtype=np.uint8)  # compresses to ~4 KiB
    data = write_neff(sample_neff)
    stored = memoryview(data)[HEADER_SIZE:]
    cap = 1 * MiB
    with pytest.raises(
        NeffError,
        match=rf"tarball expands beyond max_total_bytes={cap} bytes; refusing to decompress "
        r"further \(member 'sg00/weights/zeros.bin' ends at offset",
    ):
        read_neff(data, max_total_bytes=cap)
    assert _peak_traced_bytes(lambda: pytest.raises(NeffError, decompress, stored, cap)) < cap


def test_highly_compressed_weight_is_read(sample_neff):
    # Deflate's 1032:1 bound is never tighter than a real stream (gzip -9 of zeros).
    sample_neff.weights["zeros"] = np.zeros(64 * MiB, dtype=np.uint8)
    data = write_neff(sample_neff, gzip_level=9)
    assert len(data) < 80_000
    assert read_neff(data).weights["zeros"].nbytes == 64 * MiB


def test_negative_member_size_is_refused(sample_neff):
    header = bytearray(_header("sg00/extra.bin", 0))
    header[124:136] = b"\xff" * 11 + b"\x00"  # GNU base-256: -256
    header[148:156] = b" " * 8  # the checksum counts its own field as spaces
    header[148:156] = b"%06o\x00 " % sum(header)
    tar = _records(list(build_members(sample_neff).items())) + bytes(header)
    with pytest.raises(NeffError, match=r"member 'sg00/extra.bin' has a negative size \(-256\)"):
        read_neff(seal(tar + _end_of_archive(len(tar))))


def test_long_extended_header_is_refused(sample_neff):
    members = _records(list(build_members(sample_neff).items()))
    tar = members + _header("sg00/extra.bin", 0, comment="x" * MAX_HEADER_BYTES)
    with pytest.raises(NeffError, match=f"is longer than {MAX_HEADER_BYTES} bytes"):
        read_neff(seal(zlib.compress(tar + _end_of_archive(len(tar)), wbits=31)))


# --- the gzip stream ----------------------------------------------------------------------


def test_gzip_crc_is_checked(sample_neff):
    stored = bytearray(pack_tarball(build_members(sample_neff), "gzip"))
    stored[-8] ^= 0xFF  # the CRC32 in the gzip trailer
    with pytest.raises(NeffError, match="tarball is not valid gzip data"):
        read_neff(seal(bytes(stored)))


def test_gzip_stream_cut_in_the_padding_is_truncated(sample_neff):
    stored = pack_tarball(build_members(sample_neff), "gzip")
    with pytest.raises(NeffError, match="gzip stream of the tarball ends early"):
        read_neff(seal(stored[:-12]))


# --- out of memory ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_weight_path(tmp_path_factory, program):
    """A valid NEFF whose last weight, zz, is 96 MiB of zeros (the file is ~100 KB)."""
    from .conftest import make_neff

    size = 96 * MiB
    neff = make_neff(program)
    neff.weights["zz"] = np.zeros(1, dtype=np.uint8)
    members = build_members(neff)
    index = json.loads(members["sg00/weights.json"])
    entry = next(entry for entry in index["weights"] if entry["name"] == "zz")
    digest = hashlib.sha256()
    for _ in range(size // _ZERO_RUN):
        digest.update(bytes(_ZERO_RUN))
    entry.update(shape=[size], size_bytes=size, sha256=digest.hexdigest())
    members["sg00/weights.json"] = json.dumps(index).encode()
    del members["sg00/weights/zz.bin"]
    head = _records(list(members.items())) + _header("sg00/weights/zz.bin", size)
    zero_count = size + len(_end_of_archive(len(head) + size))
    path = tmp_path_factory.mktemp("big") / "big.neff"
    path.write_bytes(seal(_gzip_with_zeros(head, zero_count)))
    return path


def test_big_weight_neff_is_valid(big_weight_path):
    assert big_weight_path.stat().st_size < 200_000
    outcome, weights, _, _ = _read_in_child(big_weight_path)
    assert outcome == "read" and weights["zz"] == 96 * MiB


def test_reading_under_a_memory_limit_is_a_neff_error(big_weight_path):
    outcome, message, _, _ = _read_in_child(big_weight_path, headroom=48 * MiB)
    assert outcome == "NeffError", message
    size = big_weight_path.stat().st_size - HEADER_SIZE
    assert message.endswith(f"not enough memory to read the {size}-byte gzip-compressed tarball")


# --- the listing ------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_one_pass_listing_matches_list_members(sample_neff, compression):
    sample_neff.compression = compression
    stored = memoryview(write_neff(sample_neff))[HEADER_SIZE:]
    tarball = open_tarball(stored)
    assert tarball.compression == compression
    assert not tarball.data.readonly  # weight arrays are writable views into it
    assert tarball.members == list_members(tarball.data)
    assert decompress(stored, LARGEST_CORE_HBM_BYTES)[1].tobytes() == tarball.data.tobytes()
    for path, data in build_members(sample_neff).items():
        offset, size = tarball.members[path]
        assert tarball.data[offset : offset + size] == data


def test_uncompressed_writable_tarball_is_not_copied(sample_neff):
    sample_neff.compression = "none"
    buffer = bytearray(write_neff(sample_neff))
    tarball = open_tarball(memoryview(buffer)[HEADER_SIZE:])
    tarball.data[0:1] = b"X"
    assert buffer[HEADER_SIZE] == ord("X")


def test_longest_extra_file_path_fits_the_header_limit(sample_neff):
    path = "a" * 127 + "/" + "b" * 127  # 255 characters: a pax header
    sample_neff.extra_files = {path: b"data"}
    stored = memoryview(write_neff(sample_neff))[HEADER_SIZE:]
    assert path in open_tarball(stored).members
