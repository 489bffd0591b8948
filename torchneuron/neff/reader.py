"""Reading NEFF bytes or files back into a ``Neff``, trusting nothing.

Before anything else the reader checks the header: length, ``header_size``, known
package and format versions, ``data_size`` against the bytes present, the tarball's
sha256 against the header hash, and the content-derived uuid. Only then does it open
the tarball, and even then safely: decompression is capped, members must be regular
files with relative paths free of ``..``, counts and sizes are capped, and each weight
file is checked against the index (size, sha256) before ``np.frombuffer`` turns it into
an array. Nothing is ever unpickled. Every failure raises ``NeffError``.

Every JSON member is parsed within bounds and checked against the schema
(``schema.check_json_members``: types, bounds, enumerations, and the cross-checks
between manifest, def.json, weight index and schedule) before any of it is used, and
every other member's path must be one the writer accepts, so whatever the reader
returns can be described, loaded and written back.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from torchneuron.neff.container import (
    DEFINITION_PATH,
    MANIFEST_PATH,
    PROGRAM_PATH,
    REQUIRED_MEMBERS,
    WEIGHT_INDEX_PATH,
    Neff,
    check_extra_file_path,
    is_reserved_member,
)
from torchneuron.neff.dynamic import check_dynamic_program
from torchneuron.neff.errors import NeffError
from torchneuron.neff.header import (
    DYNAMIC_NEFF_VERSION,
    HEADER_SIZE,
    KNOWN_NEFF_MAJOR_VERSIONS,
    KNOWN_PKG_VERSIONS,
    NeffHeader,
    decode_header,
    header_uuid,
    unpack_header_fields,
)
from torchneuron.neff.schema import (
    CHECK_ERROR_KINDS,
    check_json_members,
    check_manifest_checks,
    parse_json,
    show,
)
from torchneuron.neff.tarball import DEFAULT_MAX_TOTAL_BYTES, open_tarball
from torchneuron.neff.weights import WEIGHTS_DIR, decode_weight
from torchneuron.target.dtypes import NEFF_DTYPES

# Imported from here by the runtime and tests; defined with the schema.
__all__ = ["CHECK_ERROR_KINDS", "check_header", "check_manifest_checks", "parse_neff", "read_neff"]


def read_neff(
    source: bytes | bytearray | memoryview | str | os.PathLike[str],
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> Neff:
    """Read a NEFF from bytes or from a file path, checking everything before use.

    Weight arrays are views into one buffer that holds the tarball (no per-weight copy);
    they are writable. Raises ``NeffError`` naming the problem (and the file, when
    reading from a path).
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            data = _read_file(path)
        except OSError as error:
            raise NeffError(f"cannot read NEFF file {path}: {error.strerror or error}") from None
        except MemoryError:
            raise NeffError(f"not enough memory to read NEFF file {path}") from None
        try:
            return parse_neff(data, max_total_bytes=max_total_bytes)
        except NeffError as error:
            raise NeffError(f"{path}: {error}") from None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return parse_neff(source, max_total_bytes=max_total_bytes)
    raise NeffError(f"read_neff expects bytes or a file path, got {type(source).__name__}")


def _read_file(path: Path) -> bytearray:
    # A bytearray (not bytes) so the weight arrays viewing it are writable.
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        data = bytearray(size)
        filled = 0
        with memoryview(data) as view:
            while filled < size:
                count = file.readinto(view[filled:])
                if not count:
                    break
                filled += count
    del data[filled:]  # the file shrank while we read it: the header check will say so
    return data


def check_header(data: memoryview) -> NeffHeader:
    """All checks that need only the header and the hash: run before touching the tarball."""
    size = len(data)
    if size == 0:
        raise NeffError("empty file: not a NEFF (a NEFF starts with a 1024-byte header)")
    if size < HEADER_SIZE:
        raise NeffError(
            f"truncated or not a NEFF: the file is {size} bytes, shorter than the "
            f"{HEADER_SIZE}-byte NEFF header"
        )
    fields = unpack_header_fields(data[:HEADER_SIZE])
    if fields["header_size"] != HEADER_SIZE:
        raise NeffError(
            f"not a NEFF file (header_size field is {fields['header_size']}, "
            f"expected {HEADER_SIZE})"
        )
    if fields["pkg_version"] not in KNOWN_PKG_VERSIONS:
        raise NeffError(
            f"unsupported NEFF package version {fields['pkg_version']} (this reader knows "
            f"{', '.join(map(str, sorted(KNOWN_PKG_VERSIONS)))}): the file was written by "
            "another packager, or its header is corrupted"
        )
    major, minor = fields["neff_version_major"], fields["neff_version_minor"]
    if major not in KNOWN_NEFF_MAJOR_VERSIONS:
        raise NeffError(
            f"unsupported NEFF major version {major} (file says version {major}.{minor}; this "
            f"reader knows major {', '.join(map(str, sorted(KNOWN_NEFF_MAJOR_VERSIONS)))}): "
            "written by a different compiler or a newer torchneuron"
        )
    data_size, present = fields["data_size"], size - HEADER_SIZE
    if data_size > present:
        raise NeffError(f"truncated NEFF: header says {data_size} data bytes, file has {present}")
    if data_size < present:
        raise NeffError(
            f"trailing bytes after NEFF data: header says {data_size} data bytes, "
            f"file has {present}"
        )
    digest = hashlib.sha256(data[HEADER_SIZE:]).digest()
    if digest != fields["hash"]:
        raise NeffError(
            f"corrupted NEFF: sha256 of the {data_size}-byte tarball is {digest.hex()}, "
            f"header hash says {fields['hash'].hex()}"
        )
    expected_uuid = header_uuid(bytes(data[:HEADER_SIZE]))
    if expected_uuid != fields["uuid"]:
        raise NeffError(
            f"corrupted NEFF header: uuid field is {fields['uuid'].hex()}, but the header "
            f"contents give {expected_uuid.hex()}"
        )
    header = decode_header(fields)
    if header.lnc_size not in (1, 2):
        raise NeffError(f"invalid NEFF header: lnc_size is {header.lnc_size}, expected 1 or 2")
    if header.num_tpb < 1:
        raise NeffError(f"invalid NEFF header: num_tpb is {header.num_tpb}, expected at least 1")
    return header


def parse_neff(
    data: bytes | bytearray | memoryview, *, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
) -> Neff:
    """``read_neff`` for bytes already in memory."""
    view = memoryview(data).cast("B")
    header = check_header(view)
    compression, tarball, members = open_tarball(view[HEADER_SIZE:], max_total_bytes)
    try:
        return _build_neff(header, compression, tarball, members)
    except MemoryError:
        pass  # raised outside the handler, so what was built so far is freed first
    raise NeffError(f"not enough memory to read the NEFF's {len(tarball)}-byte tarball")


def _load_json_object(tarball: memoryview, members: dict[str, tuple[int, int]], path: str) -> dict:
    offset, size = members[path]
    value = parse_json(tarball[offset : offset + size], path)
    if not isinstance(value, dict):
        raise NeffError(f"{path} must hold a JSON object, found {show(value)}")
    return value


def _build_neff(
    header: NeffHeader, compression: str, tarball: memoryview, members: dict[str, tuple[int, int]]
) -> Neff:
    for path in REQUIRED_MEMBERS:
        if path not in members:
            raise NeffError(f"tarball lacks the required member {path}")
    manifest = _load_json_object(tarball, members, MANIFEST_PATH)
    definition = _load_json_object(tarball, members, DEFINITION_PATH)
    index = _load_json_object(tarball, members, WEIGHT_INDEX_PATH)
    extra_files = {}
    for path, (offset, size) in members.items():
        if not is_reserved_member(path):
            # The writer's rule, so that whatever is read can be written back.
            extra_files[check_extra_file_path(path)] = bytes(tarball[offset : offset + size])
    # Before anything uses a field: the weight loop below relies on the index's schema.
    check_json_members(manifest, definition, index, extra_files)
    if "dynamic" in manifest:
        if (header.neff_version_major, header.neff_version_minor) < DYNAMIC_NEFF_VERSION:
            raise NeffError(
                f"{MANIFEST_PATH}: dynamic is given, but the header says NEFF version "
                f"{header.neff_version_major}.{header.neff_version_minor}; a dynamic program "
                f"needs {DYNAMIC_NEFF_VERSION[0]}.{DYNAMIC_NEFF_VERSION[1]}"
            )
        offset, size = members[PROGRAM_PATH]
        check_dynamic_program(tarball[offset : offset + size])

    weights = {}
    listed = set()
    for entry in index["weights"]:
        name, file, size = entry["name"], entry["file"], entry["size_bytes"]
        if file not in members:
            raise NeffError(
                f"{WEIGHT_INDEX_PATH} lists weight {name!r}, but the tarball has no {file}"
            )
        offset, stored_size = members[file]
        if stored_size != size:
            raise NeffError(
                f"weight file {file} is {stored_size} bytes, but {WEIGHT_INDEX_PATH} says "
                f"{size} ({entry['dtype']}{entry['shape']})"
            )
        digest = hashlib.sha256(tarball[offset : offset + size]).hexdigest()
        if digest != entry["sha256"]:
            raise NeffError(
                f"weight file {file} is corrupted: sha256 is {digest}, {WEIGHT_INDEX_PATH} "
                f"says {entry['sha256']}"
            )
        dtype = NEFF_DTYPES[entry["dtype"]].numpy
        weights[name] = decode_weight(tarball, offset, dtype, tuple(entry["shape"]))
        listed.add(file)
    for path in members:
        if path.startswith(WEIGHTS_DIR) and path not in listed:
            raise NeffError(f"tarball member {path} is not listed in {WEIGHT_INDEX_PATH}")

    program_offset, program_size = members[PROGRAM_PATH]
    return Neff(
        name=header.name,
        manifest=manifest,
        definition=definition,
        program=bytes(tarball[program_offset : program_offset + program_size]),
        weights=weights,
        num_tpb=header.num_tpb,
        lnc_size=header.lnc_size,
        build_version=header.build_version,
        feature_bits=header.feature_bits,
        extra_files=extra_files,
        compression=compression,
        header=header,
    )
