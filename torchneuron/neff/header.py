"""The 1024-byte NEFF header: its field table, packing and unpacking.

The layout mirrors the publicly documented ``neff_header_t`` of the Neuron runtime
(aws-neuron-sdk documentation, "Work with NEFF Files",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/explore/work-with-neff-files.html):
packed, little-endian, fixed offsets. ``docs/neff-format.md`` describes each field and
what torchneuron writes into it.

This module only converts between bytes and values; the checks a reader makes before
trusting a file live in ``reader.py``.
"""

from __future__ import annotations

import hashlib
import struct
import uuid as uuid_module
from dataclasses import dataclass

from torchneuron.neff.errors import NeffError

HEADER_SIZE = 1024

# Version of the packager: the header layout plus our tarball conventions
# (member names, JSON encodings, raw weight files). A reader accepts only the values
# in KNOWN_PKG_VERSIONS.
PKG_VERSION = 1
KNOWN_PKG_VERSIONS = frozenset({PKG_VERSION})

# Version of the container contents (neff_version_major / neff_version_minor).
# A new major version may change or remove members, so readers reject majors they do
# not know. A new minor version only adds optional members, which older readers keep
# as extra files, so any minor of a known major is accepted.
NEFF_VERSION = (1, 0)
# Minor 1 adds the manifest's optional ``dynamic`` entry (a program with symbolic
# dimensions, neff/dynamic.py); only NEFFs that hold one are written as 1.1, so every
# static NEFF keeps its bytes. A 1.0 reader refuses such a NEFF at its schema (its
# manifest holds an entry it bounds but its def.json binds no variables).
DYNAMIC_NEFF_VERSION = (1, 1)
KNOWN_NEFF_MAJOR_VERSIONS = frozenset({NEFF_VERSION[0]})


@dataclass(frozen=True)
class HeaderField:
    """One field of the packed header: where it is, its struct code and what it means."""

    name: str
    offset: int
    code: str  # struct format code of the field, without byte-order prefix
    meaning: str

    @property
    def size(self) -> int:
        return struct.calcsize("<" + self.code)


HEADER_FIELDS: tuple[HeaderField, ...] = (
    HeaderField("pkg_version", 0, "Q", "version of the packager that wrote the file"),
    HeaderField("header_size", 8, "Q", "size of this header in bytes, always 1024"),
    HeaderField("data_size", 16, "Q", "size in bytes of the tarball that follows the header"),
    HeaderField("neff_version_major", 24, "Q", "container format major version"),
    HeaderField("neff_version_minor", 32, "Q", "container format minor version"),
    HeaderField("neff_build_version", 40, "128s", "compiler version string, NUL-padded"),
    HeaderField("num_tpb", 168, "I", "NeuronCores the program uses"),
    HeaderField("hash", 172, "32s", "sha256 of the tarball bytes"),
    HeaderField("uuid", 204, "16s", "identifier derived from the header contents"),
    HeaderField("name", 220, "256s", "model name, UTF-8, NUL-terminated"),
    HeaderField("requested_tpb_count", 476, "I", "NeuronCores requested at load time"),
    HeaderField("tpb_per_node", 480, "64s", "per-node NeuronCore counts (unused, zero)"),
    HeaderField("feature_bits", 544, "Q", "feature flags, passed through uninterpreted"),
    HeaderField("lnc_size", 552, "I", "logical NeuronCore size, 1 or 2"),
    HeaderField("padding", 556, "468s", "reserved, zero"),
)

_HEADER_STRUCT = struct.Struct("<" + "".join(field.code for field in HEADER_FIELDS))
_FIELD_BY_NAME = {field.name: field for field in HEADER_FIELDS}


def _check_field_table() -> None:
    # The table is the specification: its offsets must be contiguous and add up to
    # exactly 1024 bytes, or every file we write would be misread by other tools.
    offset = 0
    for field in HEADER_FIELDS:
        if field.offset != offset:
            raise AssertionError(f"header field {field.name} at {field.offset}, expected {offset}")
        offset += field.size
    if offset != HEADER_SIZE or _HEADER_STRUCT.size != HEADER_SIZE:
        raise AssertionError(f"header table covers {offset} bytes, expected {HEADER_SIZE}")


_check_field_table()

_UUID = _FIELD_BY_NAME["uuid"]


@dataclass(frozen=True)
class NeffHeader:
    """The decoded header of a NEFF file (all fields, strings decoded from UTF-8)."""

    pkg_version: int
    header_size: int
    data_size: int
    neff_version_major: int
    neff_version_minor: int
    build_version: str
    num_tpb: int
    hash: bytes
    uuid: bytes
    name: str
    requested_tpb_count: int
    tpb_per_node: bytes
    feature_bits: int
    lnc_size: int

    @property
    def neff_version(self) -> tuple[int, int]:
        return (self.neff_version_major, self.neff_version_minor)

    @property
    def hash_hex(self) -> str:
        return self.hash.hex()

    @property
    def uuid_str(self) -> str:
        return str(uuid_module.UUID(bytes=self.uuid))


def encode_c_string(text: str, size: int, what: str) -> bytes:
    """UTF-8 encode ``text`` into a NUL-padded field of ``size`` bytes.

    Text longer than ``size - 1`` bytes is cut at a character boundary, so the field
    always keeps a NUL terminator and always decodes.
    """
    if not isinstance(text, str):
        raise NeffError(f"{what} must be a str, got {type(text).__name__}")
    encoded = text.encode("utf-8")
    limit = size - 1
    if len(encoded) > limit:
        encoded = encoded[:limit]
        # Drop a multi-byte character cut in half by the limit.
        encoded = encoded.decode("utf-8", errors="ignore").encode("utf-8")
    return encoded.ljust(size, b"\0")


def decode_c_string(raw: bytes, what: str) -> str:
    text = raw.split(b"\0", 1)[0]
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NeffError(f"NEFF header field {what} is not valid UTF-8 ({error})") from None


def header_uuid(header: bytes) -> bytes:
    """The uuid for a packed header: sha256 of the header with the uuid field zeroed.

    The header holds the tarball's sha256, so the uuid covers every byte of the file
    and doubles as a checksum of the header itself. The digest is shaped as an
    RFC 9562 version-8 (custom) UUID so that tools print it as a UUID.
    """
    start, end = _UUID.offset, _UUID.offset + _UUID.size
    digest = bytearray(hashlib.sha256(header[:start] + bytes(_UUID.size) + header[end:]).digest())
    digest[6] = (digest[6] & 0x0F) | 0x80  # version 8
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 / 9562 variant
    return bytes(digest[: _UUID.size])


def pack_header(fields: dict[str, int | bytes]) -> bytes:
    """Pack raw field values (ints, or bytes for array fields) into 1024 bytes.

    The uuid field is computed here from the other fields.
    """
    values = dict(fields)
    values.setdefault("tpb_per_node", b"")
    values.setdefault("padding", b"")
    values["uuid"] = b""
    try:
        packed = _HEADER_STRUCT.pack(*(values[field.name] for field in HEADER_FIELDS))
    except (struct.error, KeyError) as error:
        raise NeffError(f"cannot pack NEFF header: {error}") from None
    uuid_bytes = header_uuid(packed)
    return packed[: _UUID.offset] + uuid_bytes + packed[_UUID.offset + _UUID.size :]


def unpack_header_fields(header: bytes) -> dict[str, int | bytes]:
    """Raw field values of a 1024-byte header, without any checking."""
    return dict(
        zip(
            (field.name for field in HEADER_FIELDS),
            _HEADER_STRUCT.unpack(bytes(header[:HEADER_SIZE])),
            strict=True,
        )
    )


def decode_header(fields: dict[str, int | bytes]) -> NeffHeader:
    """Turn raw field values into a ``NeffHeader`` (strings decoded)."""
    return NeffHeader(
        pkg_version=fields["pkg_version"],
        header_size=fields["header_size"],
        data_size=fields["data_size"],
        neff_version_major=fields["neff_version_major"],
        neff_version_minor=fields["neff_version_minor"],
        build_version=decode_c_string(fields["neff_build_version"], "neff_build_version"),
        num_tpb=fields["num_tpb"],
        hash=fields["hash"],
        uuid=fields["uuid"],
        name=decode_c_string(fields["name"], "name"),
        requested_tpb_count=fields["requested_tpb_count"],
        tpb_per_node=fields["tpb_per_node"],
        feature_bits=fields["feature_bits"],
        lnc_size=fields["lnc_size"],
    )
