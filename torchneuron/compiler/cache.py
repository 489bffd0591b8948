"""The persistent NEFF cache shared by eager mode and the torch.compile backend.

Two layers answer ``get(key)``: an in-memory LRU of NEFF bytes, then a
content-addressed folder on disk::

    <root>/neff/<key[:2]>/<key>.neff

Keys are sha256 digests (``key_for``) of what determines a compilation: the
caller's description of the graph (op, input shapes/dtypes/strides, static
arguments) plus the compiler's own fingerprint (dependency versions and a
digest of the compiler's source files), so an upgrade or a local edit of a
lowering rule never reuses a stale NEFF.

Writes are atomic (a temporary file in the same folder, then ``os.replace``),
so a reader sees a whole entry or none. ``get_or_compile`` takes an exclusive
file lock per key (``fcntl.flock``) around the compile, so two processes
asking for the same op compile it once and the second reads the first's entry.
Every entry read from disk is validated with ``torchneuron.neff.read_neff``; a
corrupt entry is a miss: it is recompiled and replaced, with one warning.

Environment: ``TORCHNEURON_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torchneuron``,
else ``~/.cache/torchneuron``); ``TORCHNEURON_CACHE=0`` turns the disk layer off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torchneuron import settings
from torchneuron.lru import LRU

CACHE_DIR_VAR = settings.CACHE_DIR
CACHE_ENABLE_VAR = settings.CACHE
# Bump when the layout of entries or keys changes.
CACHE_FORMAT = 1
DEFAULT_MEMORY_ENTRIES = 1024
ENTRY_SUFFIX = ".neff"

try:  # POSIX file locks; elsewhere the cache still works, without cross-process locking.
    import fcntl
except ImportError:  # pragma: no cover - not reached on Linux or macOS
    fcntl = None


def default_cache_dir() -> Path:
    """``$TORCHNEURON_CACHE_DIR``, else the user's cache folder + ``/torchneuron``."""
    configured = settings.env_text(CACHE_DIR_VAR)
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "torchneuron"


def disk_cache_enabled() -> bool:
    """``TORCHNEURON_CACHE`` (on unless switched off)."""
    return settings.env_flag(CACHE_ENABLE_VAR, default=True)


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """A digest of everything that shapes a NEFF besides the graph itself.

    Dependency versions, the cache format, and the source of the compiler stages
    (lowering, passes, neff, the compiler package), so editing a rule invalidates entries.
    """
    from torchneuron.compiler.versions import dependency_versions

    digest = hashlib.sha256()
    digest.update(f"format={CACHE_FORMAT};".encode())
    digest.update(repr(sorted(dependency_versions().items())).encode())
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


@dataclasses.dataclass
class CacheStats:
    """Counters of one ``NeffCache``; tests and the benchmark read them."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    puts: int = 0
    corrupt: int = 0
    compiles: int = 0


class NeffCache:
    """NEFF bytes by key: an in-memory LRU in front of an optional sharded disk folder."""

    def __init__(
        self,
        directory: str | os.PathLike | None,
        *,
        memory_entries: int = DEFAULT_MEMORY_ENTRIES,
    ) -> None:
        self.directory = None if directory is None else Path(directory) / "neff"
        self.stats = CacheStats()
        self._memory: LRU[str, bytes] = LRU(memory_entries)
        self._lock = threading.RLock()
        self._warned_corrupt = False

    @property
    def memory_entries(self) -> int:
        """Capacity of the in-memory LRU (NEFFs)."""
        return self._memory.capacity

    @memory_entries.setter
    def memory_entries(self, entries: int) -> None:
        self._memory.set_capacity(entries)

    def __repr__(self) -> str:
        where = self.directory if self.directory is not None else "memory only"
        return f"<NeffCache {where}: {len(self._memory)} in memory, {self.stats}>"

    # -- lookups ------------------------------------------------------------

    def path_for(self, key: str) -> Path | None:
        """Where the entry for ``key`` lives on disk (``None`` without a disk layer)."""
        _check_key(key)
        if self.directory is None:
            return None
        return self.directory / key[:2] / f"{key}{ENTRY_SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The NEFF stored under ``key``, or ``None``; a corrupt disk entry is a miss."""
        _check_key(key)
        neff = self._memory.get(key)
        if neff is not None:
            with self._lock:
                self.stats.memory_hits += 1
            return neff
        neff = self._read_disk(key)
        if neff is None:
            with self._lock:
                self.stats.misses += 1
            return None
        with self._lock:
            self.stats.disk_hits += 1
            self._remember(key, neff)
        return neff

    def put(self, key: str, neff: bytes) -> None:
        """Store ``neff`` under ``key`` in memory and (atomically) on disk."""
        _check_key(key)
        if not isinstance(neff, (bytes, bytearray)):
            raise TypeError(f"NeffCache.put expects NEFF bytes, got {type(neff).__name__}")
        neff = bytes(neff)
        with self._lock:
            self.stats.puts += 1
            self._remember(key, neff)
        path = self.path_for(key)
        if path is not None:
            _atomic_write(path, neff)

    def get_or_compile(self, key: str, compile_fn: Callable[[], bytes]) -> bytes:
        """The NEFF under ``key``; on a miss, ``compile_fn()`` under a cross-process lock.

        A second process asking for the same key while the first compiles waits for
        the lock, then finds the entry and does not compile.
        """
        neff = self.get(key)
        if neff is not None:
            return neff
        with self._key_lock(key):
            neff = self._read_disk(key) if self.directory is not None else None
            if neff is not None:
                with self._lock:
                    self.stats.disk_hits += 1
                    self._remember(key, neff)
                return neff
            with self._lock:
                self.stats.compiles += 1
            neff = compile_fn()
            self.put(key, neff)
            return neff

    def clear_memory(self) -> None:
        self._memory.clear()

    def clear(self) -> None:
        """Forget every entry, in memory and on disk."""
        self.clear_memory()
        if self.directory is not None and self.directory.is_dir():
            for path in self.directory.glob(f"*/*{ENTRY_SUFFIX}"):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def disk_entries(self) -> list[Path]:
        if self.directory is None or not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"*/*{ENTRY_SUFFIX}"))

    # -- internals ----------------------------------------------------------

    def _remember(self, key: str, neff: bytes) -> None:
        self._memory.put(key, neff)

    def _read_disk(self, key: str) -> bytes | None:
        path = self.path_for(key)
        if path is None:
            return None
        try:
            neff = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            self._report_corrupt(path, f"unreadable ({error})")
            return None
        from torchneuron.neff import NeffError, read_neff

        try:
            read_neff(neff)
        except NeffError as error:
            self._report_corrupt(path, str(error))
            # Drop it so the recompiled entry replaces it; another process may have
            # replaced it already, which is as good.
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return neff

    def _report_corrupt(self, path: Path, reason: str) -> None:
        with self._lock:
            self.stats.corrupt += 1
            if self._warned_corrupt:
                return
            self._warned_corrupt = True
        warnings.warn(
            f"torchneuron: ignoring corrupt NEFF cache entry {path}: {reason}. It will be "
            "recompiled and replaced (further corrupt entries are replaced silently).",
            RuntimeWarning,
            stacklevel=3,
        )

    @contextlib.contextmanager
    def _key_lock(self, key: str) -> Iterator[None]:
        path = self.path_for(key)
        if path is None or fcntl is None:
            with self._lock:
                yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = path.with_suffix(".lock")
        with open(lock_path, "a+b") as lock_file:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)


def _check_key(key: str) -> None:
    if not (isinstance(key, str) and len(key) >= 8 and all(c in "0123456789abcdef" for c in key)):
        raise ValueError(f"NEFF cache keys are lowercase hex digests (from key_for), got {key!r}")


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_default_lock = threading.Lock()
_default: tuple[tuple[str | None, bool], NeffCache] | None = None


def get_default_cache() -> NeffCache:
    """The process-wide cache for the current ``TORCHNEURON_CACHE_DIR``/``TORCHNEURON_CACHE``."""
    global _default
    enabled = disk_cache_enabled()
    settings = (str(default_cache_dir()) if enabled else None, enabled)
    current = _default
    if current is not None and current[0] == settings:
        return current[1]
    with _default_lock:
        if _default is None or _default[0] != settings:
            _default = (settings, NeffCache(settings[0]))
        return _default[1]
