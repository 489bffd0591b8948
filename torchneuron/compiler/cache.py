"""The persistent NEFF cache shared by eager mode and the torch.compile backend.

Two layers answer ``get(key)``: an in-memory LRU of NEFF bytes, then a
content-addressed folder on disk::

    <root>/neff/<key[:2]>/<key>.neff

Keys are sha256 digests (``key_for``) of what determines a compilation: the
caller's description of the graph (op, input shapes/dtypes/strides, static
arguments) plus the compiler's own fingerprint (dependency versions and a
digest of the compiler's source files), so an upgrade or a local edit of a
lowering rule never reuses a stale NEFF.

**Entries.** A disk entry is the NEFF behind one header line naming its key, the
cache format and the NEFF's sha256 (``compiler/cache_entry.py``), so a valid NEFF
copied over another key's file, a truncated or altered file, or an entry of another
cache format is refused before the NEFF reader sees it.

**Healing.** Anything the cache hands out is suspect until it loads: an entry that
fails the envelope check, the NEFF reader (any exception, not only ``NeffError``), or
the caller's ``load`` in ``get_or_compile`` (the runtime's verifier, a signature
mismatch) is a miss: it is dropped, recompiled and replaced, with one
``RuntimeWarning`` per cache. A NEFF just compiled that does not load is a real error
and propagates (and is not kept). The device running out of HBM says nothing about
the entry and propagates too.

**Degrading.** When the folder cannot be written (read-only, a file where the folder
should be, no space left, a lock file that cannot be opened), the cache keeps NEFFs in
memory only for the rest of the process, after one ``RuntimeWarning`` naming the
folder and the reason; entries already on disk are still read.

**Concurrency.** Writes are atomic (a temporary file in the same folder, then
``os.replace``), so a reader sees a whole entry or none. ``get_or_compile`` takes an
exclusive file lock per key (``fcntl.flock``) around the compile, so two processes
asking for the same op compile it once and the second reads the first's entry.
Temporary files left by a killed writer are never read, and are deleted by a later
write into the same folder once they are an hour old.

Environment: ``TORCHNEURON_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torchneuron``,
else ``~/.cache/torchneuron``); ``TORCHNEURON_CACHE=0`` turns the disk layer off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from torchneuron import settings
from torchneuron.compiler.cache_entry import (
    CACHE_FORMAT,
    BadEntry,
    FileIdentity,
    atomic_write,
    file_identity,
    remove_stale_temporaries,
    unwrap_entry,
    wrap_entry,
)
from torchneuron.lru import LRU

CACHE_DIR_VAR = settings.CACHE_DIR
CACHE_ENABLE_VAR = settings.CACHE
DEFAULT_MEMORY_ENTRIES = 1024
ENTRY_SUFFIX = ".neff"
try:  # POSIX file locks; elsewhere the cache still works, without cross-process locking.
    import fcntl
except ImportError:  # pragma: no cover - not reached on Linux or macOS
    fcntl = None

Loaded = TypeVar("Loaded")


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
    corrupt: int = 0  # entries refused (unreadable, not an entry, wrong key, did not load)
    compiles: int = 0
    disk_errors: int = 0  # failed writes or locks (the first one turns the disk layer off)


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
        # False once a write or lock failed: memory only from then on (reads go on).
        self.disk_writable = self.directory is not None
        # Entries refused, not read or loaded again (a read-only folder keeps them): by
        # (key, sha256 of the NEFF), and by the identity of the file read.
        self._refused: set[tuple[str, str]] = set()
        self._refused_files: set[FileIdentity] = set()

    @property
    def memory_entries(self) -> int:
        """Capacity of the in-memory LRU (NEFFs)."""
        return self._memory.capacity

    @memory_entries.setter
    def memory_entries(self, entries: int) -> None:
        self._memory.set_capacity(entries)

    def __repr__(self) -> str:
        where = self.directory if self.directory is not None else "memory only"
        if self.directory is not None and not self.disk_writable:
            where = f"{where} (not writable)"
        return f"<NeffCache {where}: {len(self._memory)} in memory, {self.stats}>"

    # -- lookups ------------------------------------------------------------

    def path_for(self, key: str) -> Path | None:
        """Where the entry for ``key`` lives on disk (``None`` without a disk layer)."""
        _check_key(key)
        if self.directory is None:
            return None
        return self.directory / key[:2] / f"{key}{ENTRY_SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The NEFF stored under ``key``, or ``None``; a bad disk entry is a miss."""
        found = self._lookup(key)
        return None if found is None else found[0]

    def put(self, key: str, neff: bytes) -> None:
        """Store ``neff`` under ``key`` in memory and (atomically) on disk.

        A failed write turns the disk layer off for this cache, with one warning."""
        _check_key(key)
        if not isinstance(neff, (bytes, bytearray)):
            raise TypeError(f"NeffCache.put expects NEFF bytes, got {type(neff).__name__}")
        neff = bytes(neff)
        with self._lock:
            self.stats.puts += 1
            self._memory.put(key, neff)
        path = self.path_for(key)
        if path is None or not self.disk_writable:
            return
        try:
            atomic_write(path, wrap_entry(key, neff))
        except OSError as error:
            self._disk_failed(error)
            return
        remove_stale_temporaries(path.parent)

    def get_or_compile(
        self,
        key: str,
        compile_fn: Callable[[], bytes],
        *,
        load: Callable[[bytes], Loaded] | None = None,
    ) -> Loaded | bytes:
        """The NEFF under ``key`` (or ``load(neff)``); on a miss, ``compile_fn()`` under a
        cross-process lock.

        A second process asking for the same key while the first compiles waits for
        the lock, then finds the entry and does not compile. With ``load`` (say, loading
        the NEFF on a core), its result is returned instead of the bytes, and an entry
        from the cache that ``load`` refuses is a miss: dropped, recompiled and replaced.
        A freshly compiled NEFF that ``load`` refuses is not kept; the error propagates.
        Only ``Exception`` is caught, never ``KeyboardInterrupt`` or ``SystemExit``.
        """
        load = load if load is not None else _as_is
        found = self._lookup(key)
        if found is not None:
            loaded = self._load_cached(key, found, load)
            if loaded is not _REFUSED:
                return loaded
        with self._key_lock(key):
            # Another process may have written the entry while this one waited.
            found = self._read_disk(key)
            if found is not None:
                loaded = self._load_cached(key, found, load)
                if loaded is not _REFUSED:
                    with self._lock:
                        self.stats.disk_hits += 1
                        self._memory.put(key, found[0])
                    return loaded
            with self._lock:
                self.stats.compiles += 1
            neff = compile_fn()
            try:
                loaded = load(neff)
            except Exception as error:
                if _out_of_memory(error):  # the device is full; the NEFF is fine
                    self.put(key, neff)
                raise
            self.put(key, neff)
            return loaded

    def clear_memory(self) -> None:
        self._memory.clear()

    def clear(self) -> None:
        """Forget every entry, in memory and on disk (and stale temporary files; a young
        one may be another process's write in progress)."""
        self.clear_memory()
        if self.directory is not None and self.directory.is_dir():
            for path in self.directory.glob(f"*/*{ENTRY_SUFFIX}"):
                with contextlib.suppress(OSError):
                    path.unlink()
            for folder in self.directory.iterdir():
                remove_stale_temporaries(folder)

    def disk_entries(self) -> list[Path]:
        if self.directory is None or not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"*/*{ENTRY_SUFFIX}"))

    # -- internals ----------------------------------------------------------

    def _lookup(self, key: str) -> tuple[bytes, FileIdentity | None] | None:
        """(NEFF, identity of the disk file it came from, None from memory), or None."""
        _check_key(key)
        neff = self._memory.get(key)
        if neff is not None:
            with self._lock:
                self.stats.memory_hits += 1
            return neff, None
        found = self._read_disk(key)
        with self._lock:
            if found is None:
                self.stats.misses += 1
                return None
            self.stats.disk_hits += 1
            self._memory.put(key, found[0])
        return found

    def _read_disk(self, key: str) -> tuple[bytes, FileIdentity] | None:
        """The NEFF of ``key``'s disk entry and the file's identity; None for a missing or
        bad entry (a bad one is refused: warned about, counted and deleted)."""
        path = self.path_for(key)
        if path is None:
            return None
        identity = None
        try:
            with open(path, "rb") as handle:
                identity = file_identity(os.fstat(handle.fileno()))
                if identity in self._refused_files:
                    return None
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            self._refuse(key, None, f"unreadable ({error})", path, identity)
            return None
        from torchneuron.neff import read_neff

        try:
            neff = unwrap_entry(key, data)
            if (key, hashlib.sha256(neff).hexdigest()) in self._refused:
                self._delete(path, identity)  # refused before (when loaded): not again
                return None
            read_neff(neff)
        # Any exception: the reader should raise only NeffError, but an entry that makes
        # it raise anything else must not fail every later run.
        except Exception as error:
            self._refuse(key, None, _reason(error), path, identity)
            return None
        return neff, identity

    def _load_cached(
        self,
        key: str,
        found: tuple[bytes, FileIdentity | None],
        load: Callable[[bytes], Loaded],
    ) -> Loaded | object:
        """``load(neff)`` of a NEFF from the cache, or ``_REFUSED`` (it was refused)."""
        neff, identity = found
        try:
            return load(neff)
        except Exception as error:
            if _out_of_memory(error):
                raise
            self._refuse(
                key, neff, f"it does not load ({_reason(error)})", self.path_for(key), identity
            )
            return _REFUSED

    def _refuse(
        self,
        key: str,
        neff: bytes | None,
        reason: str,
        path: Path | None,
        identity: FileIdentity | None,
    ) -> None:
        """Drop a bad entry: from memory, from disk if the file is still the one read,
        and (by its NEFF's hash) from what is read or loaded again; warn once."""
        with self._lock:
            self.stats.corrupt += 1
            self._memory.pop(key)
            if neff is not None:
                self._refused.add((key, hashlib.sha256(neff).hexdigest()))
            if identity is not None:
                self._refused_files.add(identity)
            warn = not self._warned_corrupt
            self._warned_corrupt = True
        if path is not None and identity is not None:
            self._delete(path, identity)
        if warn:
            where = path if path is not None else f"for key {key}"
            warnings.warn(
                f"torchneuron: ignoring corrupt NEFF cache entry {where}: {reason}; it is "
                "recompiled and replaced (further bad entries are replaced silently)",
                RuntimeWarning,
                stacklevel=4,
            )

    @staticmethod
    def _delete(path: Path, identity: FileIdentity) -> None:
        # Only the file that was read: another process may have replaced it since.
        with contextlib.suppress(OSError):
            if file_identity(path.stat()) == identity:
                path.unlink()

    def _disk_failed(self, error: OSError) -> None:
        """A write or a lock failed: memory only from now on, after one warning."""
        with self._lock:
            self.stats.disk_errors += 1
            if not self.disk_writable:
                return
            self.disk_writable = False
        warnings.warn(
            f"torchneuron: the NEFF cache folder {self.directory} cannot be written "
            f"({_reason(error)}); compiled programs are cached in memory only for the rest "
            f"of this process (set {CACHE_DIR_VAR} to a writable folder, or "
            f"{CACHE_ENABLE_VAR}=0)",
            RuntimeWarning,
            stacklevel=4,
        )

    @contextlib.contextmanager
    def _key_lock(self, key: str) -> Iterator[None]:
        """The cross-process lock of ``key``; the in-process lock when the disk layer is
        off or the lock file cannot be made (which turns the disk layer off)."""
        path = self.path_for(key)
        descriptor = None
        if path is not None and fcntl is not None and self.disk_writable:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                # Read-only is enough for flock, and works on a lock file another user made.
                descriptor = os.open(
                    path.with_suffix(".lock"), os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o666
                )
            except OSError as error:
                self._disk_failed(error)
        if descriptor is None:
            with self._lock:
                yield
            return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # releases the lock


_REFUSED = object()


def _as_is(neff: bytes) -> bytes:
    return neff


def _reason(error: BaseException) -> str:
    """``error`` in one line: its type, and its message's first line."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(error, BadEntry):
        return first
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _out_of_memory(error: Exception) -> bool:
    """True when ``error`` is the runtime's out-of-HBM error: about the device, not a NEFF."""
    from torchneuron.runtime.errors import NeuronRuntimeError, out_of_memory_error_type

    return isinstance(error, NeuronRuntimeError) and isinstance(error, out_of_memory_error_type())


def _check_key(key: str) -> None:
    if not (isinstance(key, str) and len(key) >= 8 and all(c in "0123456789abcdef" for c in key)):
        raise ValueError(f"NEFF cache keys are lowercase hex digests (from key_for), got {key!r}")


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
