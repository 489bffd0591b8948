"""Taking a real NEFF apart and putting a mutated one back together, re-signed or not.

A ``Draft`` is a corpus NEFF opened up: its raw header fields, its tar members in
order (path, data, tar type, extra pax records) and its compression. Mutators edit a
draft at one level (member data, tar bytes, compressed bytes, header) and finish it
with the functions here, which redo what the reader checks *before* the level that was
mutated, so the reader's deeper checks get to see the mutation:

- ``resign_weights``: the sha256 (and byte count) of every weight file whose bytes
  changed, in ``sg00/weights.json``;
- ``pack_tar`` / ``compress``: a fresh tar archive and gzip stream (CRC, sizes);
- ``seal``: the header's ``data_size``, ``hash`` and ``uuid``.

Each step is optional, so a mutator can also leave a signature stale on purpose.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import tarfile
import zlib
from dataclasses import dataclass, field

from torchneuron.neff.header import HEADER_FIELDS, HEADER_SIZE, pack_header, unpack_header_fields

WEIGHT_INDEX = "sg00/weights.json"
PROGRAM = "sg00/program.mlirbc"
TAR_BLOCK = 512
_UUID = next(f for f in HEADER_FIELDS if f.name == "uuid")


@dataclass
class Member:
    """One tar member as the mutated tarball will hold it."""

    path: str
    data: bytes
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    pax: dict[str, str] = field(default_factory=dict)
    size: int | None = None  # the size the header claims, when it is not len(data)


@dataclass
class Draft:
    """A corpus NEFF opened up for mutation."""

    header: dict  # raw header fields (``unpack_header_fields``)
    members: list[Member]
    compression: str  # "gzip" or "none"

    def copy(self) -> Draft:
        return copy.deepcopy(self)

    def member(self, path: str) -> Member | None:
        return next((m for m in self.members if m.path == path), None)

    def json_member(self, path: str):
        return json.loads(self.member(path).data)


def open_draft(neff_bytes: bytes) -> Draft:
    """The draft of a well-formed NEFF (our own corpus: trusted)."""
    header = unpack_header_fields(neff_bytes[:HEADER_SIZE])
    stored = neff_bytes[HEADER_SIZE:]
    compression = "gzip" if stored[:2] == b"\x1f\x8b" else "none"
    tar_data = gzip.decompress(stored) if compression == "gzip" else stored
    members = []
    with tarfile.open(fileobj=io.BytesIO(tar_data), mode="r:") as tar:
        for info in tar:
            members.append(Member(info.name, tar.extractfile(info).read()))
    return Draft(header, members, compression)


def canonical_json(value) -> bytes:
    """JSON laid out as the NEFF writer lays it out (mutations keep the look of the file)."""
    return (json.dumps(value, sort_keys=True, indent=2) + "\n").encode()


def resign_weights(draft: Draft) -> None:
    """Make ``sg00/weights.json`` agree with the weight files' bytes (sha256 and size)."""
    index_member = draft.member(WEIGHT_INDEX)
    if index_member is None:
        return
    try:
        index = json.loads(index_member.data)
        entries = index["weights"]
        by_file = {m.path: m for m in draft.members}
        changed = False
        for entry in entries:
            member = by_file.get(entry.get("file"))
            if member is None:
                continue
            digest = hashlib.sha256(member.data).hexdigest()
            if entry.get("sha256") != digest or entry.get("size_bytes") != len(member.data):
                entry["sha256"], entry["size_bytes"] = digest, len(member.data)
                changed = True
    except (ValueError, KeyError, TypeError, AttributeError):
        return  # an index the mutation broke stays broken
    if changed:
        index_member.data = canonical_json(index)


def member_blocks(member: Member) -> tuple[bytes, int]:
    """The header block(s) of ``member`` (pax header first, if any) and the offset of
    its ustar header within them."""
    info = tarfile.TarInfo(member.path)
    info.size = len(member.data) if member.size is None else member.size
    info.type = member.type
    info.linkname = member.linkname
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.pax_headers = dict(member.pax)
    blocks = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    return blocks, len(blocks) - TAR_BLOCK


def pack_tar(members: list[Member]) -> tuple[bytes, list[int]]:
    """A pax tar archive of ``members`` in the given order, and the offset of each
    member's ustar header block (for mutators that edit header bytes)."""
    out = bytearray()
    offsets = []
    for member in members:
        blocks, ustar = member_blocks(member)
        offsets.append(len(out) + ustar)
        out += blocks
        out += member.data
        out += bytes(-len(member.data) % TAR_BLOCK)
    out += bytes(2 * TAR_BLOCK)
    return bytes(out), offsets


def tar_checksum(block: bytearray) -> None:
    """Recompute the checksum field (offset 148, 8 bytes) of a 512-byte ustar header."""
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)


def compress(tar_data: bytes, compression: str) -> bytes:
    if compression == "gzip":
        return gzip.compress(tar_data, compresslevel=1, mtime=0)
    return tar_data


def seal(
    draft: Draft, stored: bytes, *, resign_hash: bool = True, resign_uuid: bool = True
) -> bytes:
    """Header + ``stored``: with ``data_size``, ``hash`` and ``uuid`` redone as asked."""
    fields = dict(draft.header)
    old_uuid = fields["uuid"]
    if resign_hash:
        fields["data_size"] = len(stored)
        fields["hash"] = hashlib.sha256(stored).digest()
    header = pack_header(fields)
    if not resign_uuid:
        header = header[: _UUID.offset] + old_uuid + header[_UUID.offset + _UUID.size :]
    return header + stored


def finish(draft: Draft, *, weights: bool = True, outer: bool = True) -> bytes:
    """The NEFF of ``draft``: weight signatures redone when ``weights``, tar, compression,
    and header redone when ``outer`` (else the original header stays, now stale)."""
    if weights:
        resign_weights(draft)
    tar_data, _ = pack_tar(draft.members)
    stored = compress(tar_data, draft.compression)
    return seal(draft, stored, resign_hash=outer, resign_uuid=outer)


def resign_header(data: bytes) -> bytes:
    """``data`` with the header's uuid recomputed from the (possibly edited) header."""
    fields = unpack_header_fields(data[:HEADER_SIZE])
    return pack_header(fields) + data[HEADER_SIZE:]


# -- gzip streams built by hand (bombs) ---------------------------------------------

_ZERO_CHUNK = 1 << 20


def _gf2_times(matrix: list[int], vector: int) -> int:
    total = 0
    row = 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[n]) for n in range(32)]


def crc32_after_zeros(crc: int, count: int) -> int:
    """CRC-32 of (data with CRC ``crc``) followed by ``count`` zero bytes, in O(log count)
    (the shift of zlib's crc32_combine), so a bomb's trailer costs nothing."""
    if count <= 0:
        return crc
    # The register is the CRC with its final inversion undone; a zero byte multiplies
    # it by x**8 modulo the polynomial: apply that ``count`` times by squaring.
    crc ^= 0xFFFFFFFF
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # the operator for one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)
        if count & 1:
            crc = _gf2_times(even, crc)
        count >>= 1
        if not count:
            break
        odd = _gf2_square(even)
        if count & 1:
            crc = _gf2_times(odd, crc)
        count >>= 1
        if not count:
            break
    return crc ^ 0xFFFFFFFF


_ZERO_SEGMENT: bytes | None = None


def _zero_segment() -> bytes:
    """Raw deflate blocks that expand to 1 MiB of zeros, byte-aligned and independent of
    what precedes them (full flush), so they can be repeated."""
    global _ZERO_SEGMENT
    if _ZERO_SEGMENT is None:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        segment = compressor.compress(bytes(_ZERO_CHUNK)) + compressor.flush(zlib.Z_FULL_FLUSH)
        _ZERO_SEGMENT = segment
    return _ZERO_SEGMENT


def gzip_with_zeros(prefix: bytes, zero_mib: int, *, valid_crc: bool = True) -> bytes:
    """A gzip stream of ``prefix`` followed by ``zero_mib`` MiB of zeros (a bomb: about
    1 KiB per MiB), with a correct CRC and size trailer unless ``valid_crc`` is false."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    zeros = zero_mib * _ZERO_CHUNK
    tail = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH)
    crc = crc32_after_zeros(zlib.crc32(prefix), zeros) if valid_crc else 0xDEADBEEF
    size = (len(prefix) + zeros) & 0xFFFFFFFF
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return b"".join(
        (
            header,
            body,
            _zero_segment() * zero_mib,
            tail,
            crc.to_bytes(4, "little"),
            size.to_bytes(4, "little"),
        )
    )
