"""The persistent NEFF cache shared by eager mode and the torch.compile backend.

Two layers answer ``get(key)``: an in-memory LRU of NEFF bytes, then a
content-addressed folder on disk::

    <root>/neff/<key[:2]>/<key>.neff

Keys are sha256 digests (``key_for``) of what determines a compilation: the
caller's description of the graph (op, input shapes/dtypes/strides, static
arguments) plus the compiler's own fingerprint (dependency versions and a
digest of the compiler's source files), so an upgrade or a local edit of a
lowering rule never reuses a stale NEFF.

The machinery (entries behind a header naming their key and sha256, healing of bad
entries, degrading to memory when the folder cannot be written, cross-process locks,
atomic writes, pruning) is the runtime's ``DiskCache`` (``runtime/disk_cache.py``),
which the XLA executable cache shares; a NEFF entry must also pass the NEFF reader
before anything uses it.

Environment: ``TORCHNEURON_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torchneuron``,
else ``~/.cache/torchneuron``); ``TORCHNEURON_CACHE=0`` turns the disk layer off.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from torchneuron.runtime.cache_entry import CACHE_FORMAT, NEFF_ENTRY
from torchneuron.runtime.disk_cache import (
    CACHE_DIR_VAR,
    CACHE_ENABLE_VAR,
    CacheStats,
    DiskCache,
    Entries,
    default_cache,
    default_cache_dir,
    disk_cache_enabled,
)

__all__ = [
    "CACHE_DIR_VAR",
    "CACHE_ENABLE_VAR",
    "CacheStats",
    "NeffCache",
    "compiler_fingerprint",
    "default_cache_dir",
    "disk_cache_enabled",
    "get_default_cache",
    "key_for",
]


def _check_neff(neff: bytes) -> Any:
    """The NEFF reader's checks; the ``Neff`` it read (a loader takes it instead of
    reading the bytes again)."""
    from torchneuron.neff import read_neff

    return read_neff(neff)


NEFF_ENTRIES = Entries(folder="neff", suffix=".neff", kind=NEFF_ENTRY, check=_check_neff)


class NeffCache(DiskCache):
    """NEFF bytes by key: an in-memory LRU in front of an optional sharded disk folder."""

    entries = NEFF_ENTRIES


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """A digest of everything that shapes a NEFF besides the graph itself.

    Dependency versions, the cache format, and the source of the compiler stages
    (lowering, passes, neff, the compiler package), so editing a rule invalidates entries.
    """
    from torchneuron.compiler.versions import package_versions

    digest = hashlib.sha256()
    digest.update(f"format={CACHE_FORMAT};".encode())
    # the package versions, not the StableHLO version they decide: reading that imports
    # torch-mlir, which a process finding every program in the cache never needs
    digest.update(repr(sorted(package_versions().items())).encode())
    package = Path(__file__).resolve().parents[1]
    sources = sorted((package / "compiler").glob("*.py"))
    for stage in ("lowering", "passes", "neff"):
        sources.extend(sorted((package / stage).rglob("*.py")))
    for path in sources:
        if path.is_file():
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def key_for(*parts: Any) -> str:
    """A cache key (64 hex digits) for a compilation described by ``parts``.

    ``parts`` must have a deterministic ``repr`` (strings, numbers, tuples, torch
    dtypes, ...); the compiler fingerprint is mixed in.
    """
    digest = hashlib.sha256(compiler_fingerprint().encode())
    digest.update(b"\0")
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def get_default_cache() -> NeffCache:
    """The process-wide NEFF cache for the current ``TORCHNEURON_CACHE_DIR``/``TORCHNEURON_CACHE``."""
    return default_cache(NeffCache)
