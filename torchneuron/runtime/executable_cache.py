"""XLA executables on disk, next to the NEFFs they were compiled from.

Loading a NEFF costs an XLA compile of its program (tens of milliseconds for an eager
op, seconds for a model). The executor keeps each compiled program in this cache, so a
second process (a CI job's next run, a user's next edit-run) deserializes it instead::

    <root>/xla/<key[:2]>/<key>.xla

**Key.** sha256 of the program's bytes (the NEFF's ``sg00/program``) and of everything
that makes an executable invalid elsewhere (``executable_fingerprint``): the entry
format, the jaxlib version, the machine and its CPU features, ``XLA_FLAGS``, the size of
XLA's thread pool (``PJRT_NPROC``/``NPROC``), and the source of the runtime files that
decide what XLA compiles (the verifier's canonical bytes, the compile options). Any
change is another key: a stale executable is never looked up.

**Entry.** ``DiskCache``'s envelope (key, format, sha256 and size of the payload;
``runtime/cache_entry.py``) around a payload of one JSON line, the program's verified
signature, and the bytes of ``serialize_executable``. A truncated, altered or swapped
entry fails the envelope; a signature line that is not a well-formed signature fails
``check_payload``; an executable XLA cannot deserialize fails at load. Each is a miss:
the program is verified and compiled again, the entry replaced, one ``RuntimeWarning``.
Entries over ``MAX_EXECUTABLE_BYTES`` are refused unread.

**Trust.** An executable is machine code: unlike a NEFF's program, nothing can check
it beyond its envelope. The envelope catches corruption (disk, a killed writer, a
file copied over another) and staleness; it cannot catch someone who can write the
cache folder and forges a whole entry, as with any compiler cache of native code.
Entries are therefore read only from files owned by this user and not writable by
others (``Entries.private``); keep ``TORCHNEURON_CACHE_DIR`` a folder of your own.
``TORCHNEURON_CACHE=0`` turns this disk layer off with the NEFF cache's.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from pathlib import Path

from torchneuron.runtime.cache_entry import BadEntry, EntryKind, split_head, with_head
from torchneuron.runtime.disk_cache import DiskCache, Entries, default_cache
from torchneuron.runtime.program import ProgramSignature, TensorType
from torchneuron.target.dtypes import NEFF_DTYPES

# Bump when the payload's layout or the key's parts change.
EXECUTABLE_FORMAT = 1
EXECUTABLE_ENTRY = EntryKind(b"torchneuron-xla-executable", EXECUTABLE_FORMAT, "executable")
# A model's executable is code, not weights (weights are inputs): a few MB to tens of MB.
MAX_EXECUTABLE_BYTES = 1 << 30
# The runtime files whose code decides the executable XLA builds from a program.
_RUNTIME_SOURCES = (
    "executor.py",
    "executable_cache.py",
    "verifier.py",
    "verifier_child.py",
    "verifier_allowlist.py",
    "../loop_bound.py",
)


def encode_payload(signature: ProgramSignature, executable: bytes) -> bytes:
    """One JSON line (the signature, as the verifier reports it), then the executable."""
    head = {"arguments": _types(signature.arguments), "results": _types(signature.results)}
    return with_head(head, executable)


def decode_payload(payload: bytes) -> tuple[ProgramSignature, bytes]:
    """(signature, executable bytes) of a payload; ``BadEntry`` if malformed."""
    described, executable = split_head(payload, {"arguments", "results"}, "signature")
    signature = ProgramSignature(
        _read_types(described["arguments"], "argument"),
        _read_types(described["results"], "result"),
    )
    if not executable:
        raise BadEntry("it holds no executable")
    return signature, executable


def check_payload(payload: bytes) -> None:
    decode_payload(payload)


def _types(types: tuple[TensorType, ...]) -> list:
    return [[list(t.shape), NEFF_DTYPES[t.dtype].mlir] for t in types]


def _read_types(described, what: str) -> tuple[TensorType, ...]:
    by_mlir = {row.mlir: row.name for row in NEFF_DTYPES.values()}
    if not isinstance(described, list):
        raise BadEntry(f"its {what}s are not a list")
    types = []
    for position, entry in enumerate(described):
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in entry[0])
            and entry[1] in by_mlir
        ):
            raise BadEntry(f"its {what} {position} is not a tensor type")
        types.append(TensorType(tuple(entry[0]), by_mlir[entry[1]]))
    return tuple(types)


class ExecutableCache(DiskCache):
    """Serialized XLA executables by ``executable_key``."""

    entries = Entries(
        folder="xla",
        suffix=".xla",
        kind=EXECUTABLE_ENTRY,
        check=check_payload,
        max_bytes=MAX_EXECUTABLE_BYTES,
        private=True,
    )

    def __init__(self, directory: str | os.PathLike | None) -> None:
        # The executor keeps every prepared program in memory already (PROGRAM_CACHE):
        # a second in-memory copy of the serialized bytes would only cost memory.
        super().__init__(directory, memory_entries=0)


def default_executable_cache() -> ExecutableCache:
    """The process-wide executable cache (``TORCHNEURON_CACHE_DIR``, ``TORCHNEURON_CACHE``)."""
    return default_cache(ExecutableCache)


@functools.lru_cache(maxsize=1)
def _runtime_source_digest() -> str:
    digest = hashlib.sha256()
    folder = Path(__file__).resolve().parent
    for name in _RUNTIME_SOURCES:
        digest.update(name.encode())
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _cpu_features() -> str:
    """The CPU's feature flags (XLA compiles for the host CPU's features)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor()


def executable_fingerprint() -> str:
    """Everything besides the program that an executable depends on, as one digest.

    Read after XLA's CPU backend started: the thread settings are in the environment by
    then (``executor._configure_threads``)."""
    from jaxlib import version as jaxlib_version

    environment = os.environ
    parts = (
        f"format={EXECUTABLE_FORMAT}",
        f"jaxlib={jaxlib_version.__version__}",
        f"machine={platform.machine()}",
        f"cpu={_cpu_features()}",
        f"XLA_FLAGS={environment.get('XLA_FLAGS', '')}",
        f"PJRT_NPROC={environment.get('PJRT_NPROC', '')}",
        f"NPROC={environment.get('NPROC', '')}",
        f"runtime={_runtime_source_digest()}",
    )
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def executable_key(program_digest: str) -> str:
    """The cache key of the executable of the program whose sha256 is ``program_digest``."""
    digest = hashlib.sha256(executable_fingerprint().encode())
    digest.update(b"\0")
    digest.update(program_digest.encode())
    return digest.hexdigest()
