"""The in-memory NEFF: what the compiler hands to the writer and the reader gives back.

The tarball members a NEFF always holds are named here, so the writer and the reader
agree on them by construction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchneuron.neff.errors import NeffError
from torchneuron.neff.header import NeffHeader
from torchneuron.neff.weights import WEIGHTS_DIR, weight_dtype_name
from torchneuron.version import __version__

MANIFEST_PATH = "manifest.json"
DEFINITION_PATH = "sg00/def.json"
PROGRAM_PATH = "sg00/program.mlirbc"
WEIGHT_INDEX_PATH = "sg00/weights.json"
# The optional schedule member: the compiler's kernel schedule (estimate/scheduler.py
# writes it, the runtime and describe read it); schema.SCHEDULE is its layout.
SCHEDULE_PATH = "sg00/schedule.json"
SCHEDULE_FORMAT = "torchneuron-schedule"
SCHEDULE_VERSION = 1
REQUIRED_MEMBERS = (MANIFEST_PATH, DEFINITION_PATH, PROGRAM_PATH, WEIGHT_INDEX_PATH)

COMPRESSIONS = ("gzip", "none")
DEFAULT_BUILD_VERSION = f"torchneuron {__version__}"

# Extra files are future per-engine files ("sg00/schedule.json"): relative paths whose
# components are plain file names, so they can never escape an extraction folder.
_PATH_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")
MAX_PATH_LENGTH = 255


def is_reserved_member(path: str) -> bool:
    """Whether ``path`` is written by the writer itself (not an extra file)."""
    return path in REQUIRED_MEMBERS or path.startswith(WEIGHTS_DIR)


def check_extra_file_path(path: object) -> str:
    if (
        not isinstance(path, str)
        or len(path) > MAX_PATH_LENGTH
        or not all(_PATH_COMPONENT.fullmatch(part) for part in path.split("/"))
    ):
        raise NeffError(
            f"extra file path {path!r} is not a safe relative path: use '/'-separated "
            "names from [A-Za-z0-9_.-], none starting with '.', at most 255 characters"
        )
    if is_reserved_member(path):
        raise NeffError(f"extra file path {path!r} is reserved for the NEFF writer")
    return path


def _json_default(value: Any) -> Any:
    # Compilers naturally hold numpy scalars (shapes, sizes, estimates); JSON has no
    # such types, so store their Python equivalents.
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def canonical_json(value: Any, what: str) -> bytes:
    """The byte-stable JSON encoding of a member: sorted keys, fixed indent, ASCII, newline."""
    if not isinstance(value, dict):
        raise NeffError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        text = json.dumps(
            value,
            sort_keys=True,
            indent=2,
            ensure_ascii=True,
            allow_nan=False,
            default=_json_default,
        )
    except (TypeError, ValueError) as error:
        raise NeffError(f"{what} is not JSON-serialisable: {error}") from None
    except RecursionError:
        raise NeffError(f"{what} is not JSON-serialisable: nested too deeply") from None
    return (text + "\n").encode("ascii")


def _same_weights(left: dict[str, np.ndarray], right: dict[str, np.ndarray]) -> bool:
    if left.keys() != right.keys():
        return False
    for name, a in left.items():
        a, b = np.asarray(a), np.asarray(right[name])
        if weight_dtype_name(a.dtype) != weight_dtype_name(b.dtype) or a.shape != b.shape:
            return False
        # Bytes, not values: NaNs and -0.0 must round-trip exactly too.
        if a.tobytes() != b.astype(a.dtype, copy=False).tobytes():
            return False
    return True


@dataclass(eq=False)
class Neff:
    """A compiled program with its metadata and weights, as stored in a NEFF file.

    ``header`` is filled by ``read_neff`` with the decoded file header; ``compression``
    is what ``write_neff`` uses for the tarball ("gzip" or "none") and what
    ``read_neff`` found. Neither takes part in equality.
    """

    name: str
    manifest: dict[str, Any] = field(default_factory=dict)
    definition: dict[str, Any] = field(default_factory=dict)
    program: bytes = b""
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    num_tpb: int = 1
    lnc_size: int = 2
    build_version: str = DEFAULT_BUILD_VERSION
    feature_bits: int = 0
    extra_files: dict[str, bytes] = field(default_factory=dict)
    compression: str = "gzip"
    header: NeffHeader | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Neff):
            return NotImplemented
        try:
            same_json = canonical_json(self.manifest, "manifest") == canonical_json(
                other.manifest, "manifest"
            ) and canonical_json(self.definition, "definition") == canonical_json(
                other.definition, "definition"
            )
        except NeffError:
            same_json = self.manifest == other.manifest and self.definition == other.definition
        return (
            same_json
            and self.name == other.name
            and bytes(self.program) == bytes(other.program)
            and self.num_tpb == other.num_tpb
            and self.lnc_size == other.lnc_size
            and self.build_version == other.build_version
            and self.feature_bits == other.feature_bits
            and {k: bytes(v) for k, v in self.extra_files.items()}
            == {k: bytes(v) for k, v in other.extra_files.items()}
            and _same_weights(self.weights, other.weights)
        )

    __hash__ = None  # mutable container

    def __repr__(self) -> str:
        weights = ", ".join(
            f"{name}: {weight_dtype_name(np.asarray(a).dtype) or np.asarray(a).dtype}"
            f"{list(np.shape(a))}"
            for name, a in self.weights.items()
        )
        return (
            f"Neff(name={self.name!r}, program={len(self.program)} bytes, "
            f"weights={{{weights}}}, num_tpb={self.num_tpb}, lnc_size={self.lnc_size}, "
            f"build_version={self.build_version!r}, manifest keys={sorted(self.manifest)}, "
            f"extra_files={sorted(self.extra_files)})"
        )
