"""Mutators of the container's outer layers: the header, the tar structure, the gzip stream.

Each mutator is ``fn(rng, draft, context) -> (bytes, note)``: ``draft`` is a fresh copy
of the seed NEFF opened up (``pack.Draft``), ``note`` says in a few words what was done
(it goes into the report). After a change, most mutators re-sign what the reader checks
first (tar checksum, gzip CRC, header hash and uuid) with probability ``RESIGN``, so
the deeper checks run; the rest leave the signature stale, which the reader must
notice.
"""

from __future__ import annotations

import gzip
import random
import struct
import tarfile
import zlib

from torchneuron.neff.header import HEADER_FIELDS, HEADER_SIZE

from .pack import (
    TAR_BLOCK,
    Draft,
    Member,
    compress,
    gzip_with_zeros,
    member_blocks,
    pack_tar,
    resign_header,
    seal,
    tar_checksum,
)

RESIGN = 0.85


def _resigned(rng: random.Random) -> bool:
    return rng.random() < RESIGN


def _seal_tar(rng: random.Random, draft: Draft, tar_data: bytes, note: str) -> tuple[bytes, str]:
    resign = _resigned(rng)
    stored = compress(tar_data, draft.compression)
    data = seal(draft, stored, resign_hash=resign, resign_uuid=resign)
    return data, note + ("" if resign else " (header not re-signed)")


# -- header -----------------------------------------------------------------------


def _int_values(rng: random.Random, size: int, original: int) -> int:
    top = (1 << (8 * size)) - 1
    return (
        rng.choice(
            [
                0,
                1,
                2,
                3,
                1023,
                1024,
                1025,
                2**31 - 1,
                2**31,
                2**32 - 1,
                2**32,
                2**63 - 1,
                2**63,
                top,
                top - 1,
                max(0, original - 1),
                original + 1,
                rng.randrange(top + 1),
            ]
        )
        & top
    )


def _bytes_value(rng: random.Random, size: int) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:
        return bytes(size)
    if choice == 1:
        return b"\xff" * size
    if choice == 2:
        return b"A" * size  # no NUL terminator
    if choice == 3:
        return (b"\xc3\x28\xa0\xa1" * size)[:size]  # invalid UTF-8
    if choice == 4:
        return (b"ok\0hidden" + bytes(size))[:size]
    return rng.randbytes(size)


def header_field(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """One header field set to a boundary value; the uuid usually recomputed to match."""
    data = bytearray(context.seed_bytes)
    field = rng.choice(HEADER_FIELDS)
    if field.code in ("Q", "I"):
        original = struct.unpack_from("<" + field.code, data, field.offset)[0]
        value = _int_values(rng, field.size, original)
        struct.pack_into("<" + field.code, data, field.offset, value)
        what = f"{field.name}={value}"
    else:
        data[field.offset : field.offset + field.size] = _bytes_value(rng, field.size)
        what = f"{field.name} bytes"
    resign = field.name != "uuid" and _resigned(rng)
    return (resign_header(bytes(data)) if resign else bytes(data)), (
        f"header {what}" + ("" if resign else " (uuid stale)")
    )


def header_bytes(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A few random bytes of the header flipped."""
    data = bytearray(context.seed_bytes)
    positions = [rng.randrange(HEADER_SIZE) for _ in range(rng.randint(1, 4))]
    for position in positions:
        data[position] ^= rng.randint(1, 255)
    resign = _resigned(rng)
    return (resign_header(bytes(data)) if resign else bytes(data)), (
        f"header bytes {positions} flipped" + ("" if resign else " (uuid stale)")
    )


def file_length(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """The file cut short or extended (header, tarball or both)."""
    data = context.seed_bytes
    choice = rng.randrange(5)
    if choice == 0:
        cut = rng.choice([0, 1, 8, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 1])
        return data[:cut], f"file cut to {cut} bytes"
    if choice == 1:
        cut = rng.randrange(HEADER_SIZE, len(data))
        return data[:cut], f"file cut to {cut} of {len(data)} bytes"
    if choice == 2:
        extra = rng.randbytes(rng.choice([1, 7, 512, 4096]))
        return data + extra, f"{len(extra)} bytes appended"
    if choice == 3:
        return data[:HEADER_SIZE] * 2 + data[HEADER_SIZE:], "header repeated"
    return data[:HEADER_SIZE], "header only"


# -- tar structure --------------------------------------------------------------------

# (name, offset, size) of the ustar header fields
_USTAR_FIELDS = (
    ("name", 0, 100), ("mode", 100, 8), ("uid", 108, 8), ("gid", 116, 8), ("size", 124, 12),
    ("mtime", 136, 12), ("chksum", 148, 8), ("typeflag", 156, 1), ("linkname", 157, 100),
    ("magic", 257, 6), ("version", 263, 2), ("uname", 265, 32), ("gname", 297, 32),
    ("devmajor", 329, 8), ("devminor", 337, 8), ("prefix", 345, 155),
)  # fmt: skip
_TYPEFLAGS = b"0123456789gxKLSDAMNV\0"
_EVIL_NAMES = (
    "../manifest.json", "/manifest.json", "./manifest.json", "sg00//def.json", "sg00/def.json/",
    "sg00\\def.json", "..", ".", "", "manifest.json\nx", "sg00/weights/../weights.json",
    "sg00/weights/.hidden.bin", "\u00e9t\u00e9.json", "A" * 101, "sg00/" + "d/" * 200 + "x",
    "sg00/weights/x.bin", "sg00/schedule.json", "sg01/def.json", "manifest.JSON",
)  # fmt: skip


def _octal_value(rng: random.Random, size: int) -> bytes:
    choice = rng.randrange(8)
    if choice == 0:  # base-256: huge positive, or -1
        return rng.choice([b"\x80\x7f" + b"\xff" * (size - 2), b"\xff" * size])
    if choice == 1:
        return b"9" * size  # not octal
    if choice == 2:
        return b" " * size
    if choice == 3:
        return bytes(size)
    if choice == 4:
        return (b"%o" % rng.choice([0, 1, 511, 512, 8 ** (size - 1) - 1])).rjust(
            size - 1, b"0"
        ) + b"\0"
    if choice == 5:
        return b"-1".ljust(size, b"\0")
    if choice == 6:
        return b"7" * size  # unterminated
    return rng.randbytes(size)


def tar_header_field(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """One field of one member's ustar header block rewritten, checksum usually fixed."""
    tar_data, offsets = pack_tar(draft.members)
    tar_data = bytearray(tar_data)
    index = rng.randrange(len(offsets))
    name, offset, size = rng.choice(_USTAR_FIELDS)
    if name in ("name", "linkname", "prefix"):
        value = rng.choice(_EVIL_NAMES).encode("utf-8", "surrogateescape")[:size].ljust(size, b"\0")
        if rng.random() < 0.2:
            value = rng.randbytes(size)
    elif name == "typeflag":
        value = bytes([rng.choice(_TYPEFLAGS)])
    elif name in ("magic", "version", "uname", "gname"):
        value = rng.choice(
            [bytes(size), rng.randbytes(size), b"ustar \0"[:size].ljust(size, b"\0")]
        )
    else:
        value = _octal_value(rng, size)
    block = tar_data[offsets[index] : offsets[index] + TAR_BLOCK]
    block[offset : offset + size] = value
    fixed = name != "chksum" and rng.random() < 0.9
    if fixed:
        tar_checksum(block)
    tar_data[offsets[index] : offsets[index] + TAR_BLOCK] = block
    path = draft.members[index].path
    note = f"tar header {name} of {path} = {bytes(value)[:24]!r}" + (
        "" if fixed else " (checksum stale)"
    )
    return _seal_tar(rng, draft, bytes(tar_data), note)


_PAX_RECORDS = (
    {"size": str(2**64)}, {"size": "-1"}, {"size": "x"}, {"size": "0"}, {"size": "1" * 5000},
    {"path": "../escape"}, {"path": "/abs"}, {"path": "manifest.json"}, {"path": "a\0b"},
    {"path": "sg00/weights.json"}, {"linkpath": "../../etc/passwd"}, {"mtime": "nan"},
    {"mtime": "1e400"}, {"uid": "-1"}, {"hdrcharset": "BINARY"}, {"comment": "x" * 70000},
    {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "x",
     "GNU.sparse.realsize": str(2**40)},
    {"GNU.sparse.size": "99999999999", "GNU.sparse.map": "0,1,2"},
    {"GNU.sparse.numblocks": "100000000", "GNU.sparse.offset": "0"},
)  # fmt: skip


def tar_pax(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A member given pax extended-header records: sizes, paths, sparse maps."""
    member = rng.choice(draft.members)
    records = dict(rng.choice(_PAX_RECORDS))
    member.pax.update(records)
    try:
        tar_data, _ = pack_tar(draft.members)
    except (ValueError, UnicodeError, tarfile.TarError):
        tar_data, _ = pack_tar([m for m in draft.members if m is not member])
    return _seal_tar(rng, draft, tar_data, f"pax {sorted(records)} on {member.path}")


def tar_pax_raw(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A malformed pax record block (lengths that lie, no '=', no newline) before a member."""
    text = rng.choice(
        [b"999999 path=x\n", b"0 path=x\n", b"5 path\n", b"-1 size=1\n", b"12 size=100",
         b"99999999999999999999 size=1\n", b"13 size=\xff\xfe\xfd\n", b"8 a=b\n7 c=d\n",
         b"1" * 5000 + b" x=y\n", b"20 GNU.sparse.map=\n"]
    )  # fmt: skip
    info = tarfile.TarInfo("PaxHeader/x")
    info.type = rng.choice([tarfile.XHDTYPE, tarfile.XGLTYPE])
    info.size = len(text)
    raw = info.tobuf(tarfile.USTAR_FORMAT) + text + bytes(-len(text) % TAR_BLOCK)
    position = rng.randrange(len(draft.members) + 1)
    out = bytearray()
    for index, member in enumerate(draft.members):
        if index == position:
            out += raw
        out += member_blocks(member)[0] + member.data + bytes(-len(member.data) % TAR_BLOCK)
    if position == len(draft.members):
        out += raw
    out += bytes(2 * TAR_BLOCK)
    return _seal_tar(rng, draft, bytes(out), f"raw pax block {text[:20]!r} at {position}")


def tar_members(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """Members duplicated, dropped, reordered, renamed, added, or made links/devices."""
    members = draft.members
    choice = rng.randrange(7)
    index = rng.randrange(len(members))
    target = members[index]
    if choice == 0:
        twin = Member(target.path, target.data if rng.random() < 0.5 else rng.randbytes(16))
        members.insert(rng.randrange(len(members) + 1), twin)
        note = f"{target.path} twice"
    elif choice == 1:
        del members[index]
        note = f"{target.path} dropped"
    elif choice == 2:
        rng.shuffle(members)
        note = "members reordered"
    elif choice == 3:
        old = target.path
        target.path = rng.choice(_EVIL_NAMES)
        note = f"{old} renamed {target.path[:40]!r}"
    elif choice == 4:
        path = rng.choice(_EVIL_NAMES + ("extra/file.bin", "sg00/neuron.txt"))
        data = rng.choice([b"", b"{}", b"[]", rng.randbytes(rng.choice([1, 100, 70000]))])
        members.insert(rng.randrange(len(members) + 1), Member(path, data))
        note = f"member {path[:40]!r} added ({len(data)} bytes)"
    elif choice == 5:
        kind = rng.choice(
            [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE, tarfile.FIFOTYPE,
             tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.CONTTYPE, tarfile.GNUTYPE_SPARSE]
        )  # fmt: skip
        link = Member(target.path, b"", type=kind)
        link.linkname = rng.choice(["../../etc/passwd", "manifest.json", "/dev/zero", target.path])
        if rng.random() < 0.5:
            members[index] = link
        else:
            members.insert(index, link)
        note = f"{target.path} as tar type {kind!r} -> {link.linkname}"
    else:
        count = rng.choice([300, 3000, 100_001])
        members.extend(Member(f"extra/m{n}", b"") for n in range(count))
        note = f"{count} extra members"
    try:
        tar_data, _ = pack_tar(members)
    except (ValueError, UnicodeError, tarfile.TarError):
        return context.seed_bytes, note + " (not representable: seed unchanged)"
    return _seal_tar(rng, draft, tar_data, note)


def tar_truncate(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """The tar archive cut short (mid-header, mid-data, at a block, without its end)."""
    tar_data, offsets = pack_tar(draft.members)
    choice = rng.randrange(4)
    if choice == 0:
        cut = rng.randrange(len(tar_data))
    elif choice == 1:
        cut = rng.choice(offsets) + rng.randrange(1, TAR_BLOCK)
    elif choice == 2:
        cut = rng.randrange(len(tar_data) // TAR_BLOCK) * TAR_BLOCK
    else:
        cut = len(tar_data) - 2 * TAR_BLOCK
    return _seal_tar(rng, draft, tar_data[:cut], f"tar cut to {cut} of {len(tar_data)} bytes")


def tar_size_lie(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A member whose header claims another size than the bytes that follow."""
    member = rng.choice(draft.members)
    member.size = rng.choice(
        [0, 1, max(0, len(member.data) - 1), len(member.data) + 1, len(member.data) + TAR_BLOCK,
         2**33, 8**11 - 1, 2**63]
    )  # fmt: skip
    tar_data, _ = pack_tar(draft.members)
    return _seal_tar(rng, draft, tar_data, f"{member.path} claims {member.size} bytes")


# -- gzip stream ------------------------------------------------------------------------


def _gzip(tar_data: bytes) -> bytes:
    return gzip.compress(tar_data, compresslevel=1, mtime=0)


def _seal_stored(rng: random.Random, draft: Draft, stored: bytes, note: str) -> tuple[bytes, str]:
    resign = _resigned(rng)
    data = seal(draft, stored, resign_hash=resign, resign_uuid=resign)
    return data, note + ("" if resign else " (header not re-signed)")


def gzip_flip(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """Bytes of the gzip stream flipped: its header, its deflate data or its trailer."""
    stored = bytearray(_gzip(pack_tar(draft.members)[0]))
    region = rng.randrange(3)
    low, high = [(0, 10), (10, len(stored) - 8), (len(stored) - 8, len(stored))][region]
    positions = [rng.randrange(low, high) for _ in range(rng.randint(1, 3))]
    for position in positions:
        stored[position] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randint(1, 255)
    where = ("header", "data", "trailer")[region]
    return _seal_stored(rng, draft, bytes(stored), f"gzip {where} bytes {positions} flipped")


def gzip_truncate(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    stored = _gzip(pack_tar(draft.members)[0])
    cut = rng.choice([2, 10, rng.randrange(len(stored)), len(stored) - 4, len(stored) - 1])
    return _seal_stored(rng, draft, stored[:cut], f"gzip cut to {cut} of {len(stored)} bytes")


def gzip_trailing(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """Bytes after the gzip stream: garbage, zeros, or a second gzip member."""
    tar_data = pack_tar(draft.members)[0]
    stored = _gzip(tar_data)
    extra = rng.choice(
        [b"\0", b"\0" * 1024, rng.randbytes(64), _gzip(b""), _gzip(tar_data), b"\x1f\x8b"]
    )
    return _seal_stored(rng, draft, stored + extra, f"{len(extra)} bytes after the gzip stream")


def gzip_header(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """Optional gzip header fields (extra, name, comment, header CRC) that lie."""
    body = zlib.compress(pack_tar(draft.members)[0], 1)[2:-4]  # raw deflate
    tar_data = pack_tar(draft.members)[0]
    trailer = struct.pack("<II", zlib.crc32(tar_data), len(tar_data) & 0xFFFFFFFF)
    flags, extra = rng.choice(
        [(0x04, b"\xff\xff" + b"x" * 8), (0x04, b"\x04\x00ab"), (0x08, b"no-terminator"),
         (0x08, b"name\0"), (0x10, b"comment" * 1000 + b"\0"), (0x02, b"\0\0"),
         (0xE0, b""), (0x1E, b"\x02\x00ab" + b"n\0" + b"c\0" + b"\0\0")]
    )  # fmt: skip
    method = 8 if rng.random() < 0.8 else rng.choice([0, 7, 9, 255])
    header = bytes([0x1F, 0x8B, method, flags]) + bytes(4) + b"\0\xff"
    return _seal_stored(rng, draft, header + extra + body + trailer, f"gzip flags {flags:#x}")


def gzip_bomb(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """A small file that expands enormously: the valid tar followed by MiBs of zeros
    (tar's end-of-archive padding, legal), or an extra member of zeros."""
    mib = rng.choice([16, 64, 256, 1024, 4096])
    valid = rng.random() < 0.9
    if rng.random() < 0.5:
        prefix = pack_tar(draft.members)[0]
        how = "after the tar"
    else:
        tar_data = pack_tar(draft.members)[0][: -2 * TAR_BLOCK]
        pad_header = member_blocks(Member("extra/pad.bin", b"", size=mib << 20))[0]
        prefix = tar_data + pad_header
        mib += 1  # the member's data, then its padding and the end of the archive
        how = "in a member"
    stored = gzip_with_zeros(prefix, mib, valid_crc=valid)
    note = f"{mib} MiB of zeros {how}" + ("" if valid else " (CRC wrong)")
    return _seal_stored(rng, draft, stored, note)


def compression_switch(rng: random.Random, draft: Draft, context) -> tuple[bytes, str]:
    """Valid variants: other compression, gzip levels, two gzip members."""
    tar_data = pack_tar(draft.members)[0]
    choice = rng.randrange(4)
    if choice == 0:
        stored, note = tar_data, "uncompressed"
    elif choice == 1:
        level = rng.choice([0, 9])
        stored, note = gzip.compress(tar_data, compresslevel=level, mtime=0), f"gzip -{level}"
    elif choice == 2:
        half = len(tar_data) // 2
        stored, note = _gzip(tar_data[:half]) + _gzip(tar_data[half:]), "two gzip members"
    else:
        stored, note = zlib.compress(tar_data), "zlib (not gzip) framing"
    return seal(draft, stored), note
