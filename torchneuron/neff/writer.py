"""Writing a ``Neff`` to bytes (and optionally a file): header + deterministic tarball.

Determinism is a feature: caches and golden checks compare NEFFs byte for byte, so the
same ``Neff`` always gives the same bytes. The tarball has its members sorted by path,
zero mtimes, uid/gid 0, owner names "root", mode 0644, regular files only; JSON members
use sorted keys; gzip output carries mtime 0 and no file name; the header's uuid is
derived from the content rather than drawn at random.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import operator
import os
import tarfile
from pathlib import Path
from typing import Any

from torchneuron.files import write_atomically
from torchneuron.neff.container import (
    COMPRESSIONS,
    DEFINITION_PATH,
    MANIFEST_PATH,
    PROGRAM_PATH,
    WEIGHT_INDEX_PATH,
    Neff,
    canonical_json,
    check_extra_file_path,
)
from torchneuron.neff.dynamic import check_dynamic_program
from torchneuron.neff.errors import NeffError
from torchneuron.neff.header import (
    DYNAMIC_NEFF_VERSION,
    HEADER_FIELDS,
    HEADER_SIZE,
    NEFF_VERSION,
    PKG_VERSION,
    encode_c_string,
    pack_header,
)
from torchneuron.neff.schema import check_json_members, parse_json
from torchneuron.neff.tarball import member_limit
from torchneuron.neff.weights import encode_weight

DEFAULT_GZIP_LEVEL = 6
_FIELD_SIZE = {field.name: field.size for field in HEADER_FIELDS}
_MEMBER_MODE = 0o644
_MEMBER_OWNER = "root"


def _check_int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise NeffError(f"{what} must be an integer, got a bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise NeffError(f"{what} must be an integer, got {type(value).__name__}") from None
    if not low <= number <= high:
        raise NeffError(f"{what} is {number}, must be between {low} and {high}")
    return number


def _as_bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise NeffError(f"{what} must be bytes, got {type(value).__name__}")
    return bytes(value)


# The JSON members in the order ``check_json_members`` takes them.
JSON_MEMBERS = (MANIFEST_PATH, DEFINITION_PATH, WEIGHT_INDEX_PATH)


def build_members(neff: Neff) -> dict[str, bytes]:
    """Every tarball member of ``neff``, path -> bytes, sorted by path, after checking
    everything the reader checks about them (``NeffError`` otherwise)."""
    if not isinstance(neff, Neff):
        raise NeffError(f"write_neff expects a Neff, got {type(neff).__name__}")
    members = {
        MANIFEST_PATH: canonical_json(neff.manifest, "manifest"),
        DEFINITION_PATH: canonical_json(neff.definition, "definition (sg00/def.json)"),
        PROGRAM_PATH: _as_bytes(neff.program, "program"),
    }
    if not isinstance(neff.weights, dict):
        raise NeffError(
            f"weights must be a dict of name -> array, got {type(neff.weights).__name__}"
        )
    entries = []
    for name in sorted(neff.weights, key=str):
        entry, data = encode_weight(name, neff.weights[name])
        entries.append(entry)
        members[entry["file"]] = data
    members[WEIGHT_INDEX_PATH] = canonical_json(
        {"byte_order": "little", "weights": entries}, "weight index"
    )
    if not isinstance(neff.extra_files, dict):
        raise NeffError(
            f"extra_files must be a dict of path -> bytes, got {type(neff.extra_files).__name__}"
        )
    extra_files = {
        check_extra_file_path(path): _as_bytes(data, f"extra file {path!r}")
        for path, data in neff.extra_files.items()
    }
    members.update(extra_files)
    for path, data in members.items():
        kind, limit = member_limit(path)
        if len(data) > limit:
            raise NeffError(
                f"{path} is {len(data)} bytes, more than the {limit}-byte limit for {kind}"
            )
    # What the reader will parse and check, checked the same way: the writer never
    # writes a NEFF that the reader refuses.
    manifest = parse_json(members[MANIFEST_PATH], MANIFEST_PATH)
    check_json_members(
        manifest, *(parse_json(members[p], p) for p in JSON_MEMBERS[1:]), extra_files
    )
    if "dynamic" in manifest:
        check_dynamic_program(members[PROGRAM_PATH])
    return dict(sorted(members.items()))


def neff_version_of(neff: Neff) -> tuple[int, int]:
    """The NEFF version a ``Neff`` is written as: 1.1 when it holds a dynamic program."""
    dynamic = isinstance(neff.manifest, dict) and "dynamic" in neff.manifest
    return DYNAMIC_NEFF_VERSION if dynamic else NEFF_VERSION


def pack_tarball(
    members: dict[str, bytes], compression: str, gzip_level: int = DEFAULT_GZIP_LEVEL
) -> bytes:
    """A deterministic tarball (optionally gzip-compressed) holding ``members``."""
    if compression not in COMPRESSIONS:
        raise NeffError(f"compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(members):
            data = members[path]
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mtime = 0
            info.mode = _MEMBER_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = _MEMBER_OWNER
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(data))
    tarball = buffer.getvalue()
    if compression == "gzip":
        # mtime=0 and no file name keep the gzip header free of time and place.
        tarball = gzip.compress(tarball, compresslevel=gzip_level, mtime=0)
    return tarball


def assemble_neff(
    tarball: bytes,
    *,
    name: str,
    build_version: str,
    num_tpb: int,
    lnc_size: int,
    feature_bits: int,
    pkg_version: int = PKG_VERSION,
    neff_version: tuple[int, int] = NEFF_VERSION,
) -> bytes:
    """Prefix ``tarball`` with its 1024-byte header (hash and uuid computed here)."""
    num_tpb = _check_int(num_tpb, "num_tpb", 1, 2**32 - 1)
    if lnc_size not in (1, 2) or isinstance(lnc_size, bool):
        raise NeffError(f"lnc_size is {lnc_size!r}, must be 1 or 2")
    header = pack_header(
        {
            "pkg_version": pkg_version,
            "header_size": HEADER_SIZE,
            "data_size": len(tarball),
            "neff_version_major": neff_version[0],
            "neff_version_minor": neff_version[1],
            "neff_build_version": encode_c_string(
                build_version, _FIELD_SIZE["neff_build_version"], "build_version"
            ),
            "num_tpb": num_tpb,
            "hash": hashlib.sha256(tarball).digest(),
            "name": encode_c_string(name, _FIELD_SIZE["name"], "name"),
            # One program, no partial placement: the runtime should reserve exactly
            # the cores the program uses.
            "requested_tpb_count": num_tpb,
            "feature_bits": _check_int(feature_bits, "feature_bits", 0, 2**64 - 1),
            "lnc_size": lnc_size,
        }
    )
    return header + tarball


def neff_bytes(
    neff: Neff, members: dict[str, bytes], gzip_level: int = DEFAULT_GZIP_LEVEL
) -> bytes:
    """The NEFF file of ``neff``, whose members ``build_members(neff)`` made: its tarball
    behind the header its fields give."""
    return assemble_neff(
        pack_tarball(members, neff.compression, gzip_level),
        name=neff.name,
        build_version=neff.build_version,
        num_tpb=neff.num_tpb,
        lnc_size=neff.lnc_size,
        feature_bits=neff.feature_bits,
        neff_version=neff_version_of(neff),
    )


def write_neff(
    neff: Neff, path: str | os.PathLike[str] | None = None, *, gzip_level: int = DEFAULT_GZIP_LEVEL
) -> bytes:
    """Serialise ``neff`` to NEFF bytes; with ``path``, also write the file atomically.

    The file appears complete or not at all: bytes go to a temporary file in the same
    folder, are flushed to disk, then renamed over ``path``.
    """
    data = neff_bytes(neff, build_members(neff), gzip_level)
    if path is not None:
        write_file_atomically(Path(path), data)
    return data


def write_file_atomically(path: Path, data: bytes) -> None:
    try:
        write_atomically(path, data)
    except OSError as error:
        raise NeffError(f"cannot write NEFF file {path}: {error}") from None
