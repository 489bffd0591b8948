"""A disk cache of compiled artefacts, by key: an in-memory LRU in front of a folder.

``DiskCache`` is the machinery that the NEFF cache (``compiler/cache.py``) and the XLA
executable cache (``runtime/executable_cache.py``) share; each says what its entries
are (``Entries``: folder, file suffix, header kind, and the check a payload must pass
before anything uses it)::

    <root>/<folder>/<key[:2]>/<key><suffix>

**Entries.** A disk entry is the payload behind one header line naming its key, the
kind, the format and the payload's sha256 (``runtime/cache_entry.py``), so a valid
payload copied over another key's file, a truncated or altered file, or an entry of
another cache format is refused before the payload's reader sees it.

**Healing.** Anything the cache hands out is suspect until it loads: an entry that
fails the envelope check, the kind's own check (any exception), or the caller's
``load`` in ``get_or_compile`` is a miss: it is dropped, recompiled and replaced, with
one ``RuntimeWarning`` per cache. A payload just compiled that does not load is a real
error and propagates (and is not kept). The device running out of HBM says nothing
about the entry and propagates too.

**Degrading.** When the folder cannot be written (read-only, a file where the folder
should be, no space left, a lock file that cannot be opened), the cache keeps entries in
memory only for the rest of the process, after one ``RuntimeWarning`` naming the folder
and the reason; entries already on disk are still read.

**Concurrency.** Writes are atomic (a temporary file in the same folder, then
``os.replace``), so a reader sees a whole entry or none. ``get_or_compile`` takes an
exclusive file lock per key (``fcntl.flock``) around the compile, so two processes
asking for the same key compile it once and the second reads the first's entry.
Temporary files left by a killed writer are never read, and are deleted by a later
write into the same folder once they are an hour old.

**Size.** ``disk_usage`` and ``prune(max_bytes)`` (least recently used first, by file
access or write time) bound a folder; ``neuronc cache`` shows and prunes every kind.

Environment: ``TORCHNEURON_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torchneuron``,
else ``~/.cache/torchneuron``); ``TORCHNEURON_CACHE=0`` turns the disk layers off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from torchneuron import settings
from torchneuron.lru import LRU
from torchneuron.runtime.cache_entry import (
    MAX_ENTRY_HEADER,
    BadEntry,
    EntryKind,
    FileIdentity,
    atomic_write,
    file_identity,
    remove_stale_temporaries,
    unwrap_entry,
    wrap_entry,
)

CACHE_DIR_VAR = settings.CACHE_DIR
CACHE_ENABLE_VAR = settings.CACHE
DEFAULT_MEMORY_ENTRIES = 1024
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


@dataclasses.dataclass(frozen=True)
class Entries:
    """What one cache keeps: where, under which suffix, and how a payload is checked."""

    folder: str  # under the cache root
    suffix: str  # of entry files
    kind: EntryKind
    # Raises (anything) when a payload read from disk must not be used; what it returns
    # (its decoding, say) is handed to ``get_checked``'s caller.
    check: Callable[[bytes], Any]
    # Entries bigger than this are refused unread (a bound on hostile files); None: the
    # payload's own reader bounds what it reads.
    max_bytes: int | None = None
    # Read entries only from files this user owns that nobody else may write (for
    # payloads nothing can check once the envelope is whole: native code).
    private: bool = False


@dataclasses.dataclass
class CacheStats:
    """Counters of one ``DiskCache``; tests and the benchmark read them."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    puts: int = 0
    corrupt: int = 0  # entries refused (unreadable, not an entry, wrong key, did not load)
    compiles: int = 0
    disk_errors: int = 0  # failed writes or locks (the first one turns the disk layer off)


class DiskCache:
    """Payloads by key: an in-memory LRU in front of an optional sharded disk folder."""

    entries: Entries  # each kind of cache sets it

    def __init__(
        self,
        directory: str | os.PathLike | None,
        *,
        memory_entries: int = DEFAULT_MEMORY_ENTRIES,
    ) -> None:
        self.directory = None if directory is None else Path(directory) / self.entries.folder
        self.stats = CacheStats()
        self._memory: LRU[str, bytes] = LRU(memory_entries)
        self._lock = threading.RLock()
        self._warned_corrupt = False
        # False once a write or lock failed: memory only from then on (reads go on).
        self.disk_writable = self.directory is not None
        # Entries refused, not read or loaded again (a read-only folder keeps them): by
        # (key, sha256 of the payload), and by the identity of the file read.
        self._refused: set[tuple[str, str]] = set()
        self._refused_files: set[FileIdentity] = set()

    @property
    def memory_entries(self) -> int:
        """Capacity of the in-memory LRU (entries)."""
        return self._memory.capacity

    @memory_entries.setter
    def memory_entries(self, entries: int) -> None:
        self._memory.set_capacity(entries)

    def __repr__(self) -> str:
        where = self.directory if self.directory is not None else "memory only"
        if self.directory is not None and not self.disk_writable:
            where = f"{where} (not writable)"
        return f"<{type(self).__name__} {where}: {len(self._memory)} in memory, {self.stats}>"

    # -- lookups ------------------------------------------------------------

    def path_for(self, key: str) -> Path | None:
        """Where the entry for ``key`` lives on disk (``None`` without a disk layer)."""
        _check_key(key)
        if self.directory is None:
            return None
        return self.directory / key[:2] / f"{key}{self.entries.suffix}"

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or ``None``; a bad disk entry is a miss."""
        found = self._lookup(key)
        return None if found is None else found[0]

    def get_checked(self, key: str) -> tuple[bytes, Any] | None:
        """(payload, what the entries' check returned for it) for ``key``, or ``None``: a
        caller that decodes the payload as the check did need not do it twice. The check
        runs on disk reads; an entry found in memory comes with ``None``."""
        found = self._lookup(key)
        return None if found is None else (found[0], found[2])

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key`` in memory and (atomically) on disk.

        A failed write turns the disk layer off for this cache, with one warning."""
        _check_key(key)
        if not isinstance(payload, (bytes, bytearray)):
            raise TypeError(
                f"{type(self).__name__}.put expects {self.entries.kind.payload} bytes, "
                f"got {type(payload).__name__}"
            )
        payload = bytes(payload)
        with self._lock:
            self.stats.puts += 1
            self._memory.put(key, payload)
        path = self.path_for(key)
        if path is None or not self.disk_writable:
            return
        try:
            atomic_write(path, wrap_entry(key, payload, self.entries.kind))
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
        load_checked: Callable[[bytes, Any], Loaded] | None = None,
    ) -> Loaded | bytes:
        """The payload under ``key`` (or ``load(payload)``); on a miss, ``compile_fn()`` under a
        cross-process lock.

        A second process asking for the same key while the first compiles waits for
        the lock, then finds the entry and does not compile. With ``load`` (say, loading
        a NEFF on a core), its result is returned instead of the bytes, and an entry
        from the cache that ``load`` refuses is a miss: dropped, recompiled and replaced.
        A freshly compiled payload that ``load`` refuses is not kept; the error propagates.
        Only ``Exception`` is caught, never ``KeyboardInterrupt`` or ``SystemExit``.
        ``load_checked(payload, checked)`` instead of ``load`` also takes what the entries'
        check returned for a disk entry (None for one from memory or just compiled), so
        a loader that decodes the payload as the check did need not do it again.
        """
        if load_checked is None:
            plain = load if load is not None else _as_is

            def load_checked(payload: bytes, _checked: Any) -> Loaded:
                return plain(payload)

        found = self._lookup(key)
        if found is not None:
            loaded = self._load_cached(key, found, load_checked)
            if loaded is not _REFUSED:
                return loaded
        with self._key_lock(key):
            # Another process may have written the entry while this one waited.
            found = self._read_disk(key)
            if found is not None:
                loaded = self._load_cached(key, found, load_checked)
                if loaded is not _REFUSED:
                    with self._lock:
                        self.stats.disk_hits += 1
                        self._memory.put(key, found[0])
                    return loaded
            with self._lock:
                self.stats.compiles += 1
            payload = compile_fn()
            try:
                loaded = load_checked(payload, None)
            except Exception as error:
                if _out_of_memory(error):  # the device is full; the payload is fine
                    self.put(key, payload)
                raise
            self.put(key, payload)
            return loaded

    def clear_memory(self) -> None:
        self._memory.clear()

    def clear(self) -> None:
        """Forget every entry, in memory and on disk (and stale temporary files; a young
        one may be another process's write in progress)."""
        self.clear_memory()
        if self.directory is not None and self.directory.is_dir():
            for path in self.directory.glob(f"*/*{self.entries.suffix}"):
                with contextlib.suppress(OSError):
                    path.unlink()
            for folder in self.directory.iterdir():
                remove_stale_temporaries(folder)

    def disk_entries(self) -> list[Path]:
        if self.directory is None or not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"*/*{self.entries.suffix}"))

    def disk_usage(self) -> tuple[int, int]:
        """(entries, bytes) on disk."""
        count = total = 0
        for path in self.disk_entries():
            with contextlib.suppress(OSError):
                total += path.stat().st_size
                count += 1
        return count, total

    def prune(self, max_bytes: int) -> tuple[int, int]:
        """Delete the least recently used disk entries until at most ``max_bytes`` remain;
        (entries, bytes) deleted."""
        return prune_together([self], max_bytes)

    # -- internals ----------------------------------------------------------

    def _lookup(self, key: str) -> tuple[bytes, FileIdentity | None, Any] | None:
        """(payload, identity of the disk file it came from, what the check returned;
        both None from memory), or None."""
        _check_key(key)
        payload = self._memory.get(key)
        if payload is not None:
            with self._lock:
                self.stats.memory_hits += 1
            return payload, None, None
        found = self._read_disk(key)
        with self._lock:
            if found is None:
                self.stats.misses += 1
                return None
            self.stats.disk_hits += 1
            self._memory.put(key, found[0])
        return found

    def _read_disk(self, key: str) -> tuple[bytes, FileIdentity, Any] | None:
        """The payload of ``key``'s disk entry, the file's identity and what the check
        returned; None for a missing or bad entry (a bad one is refused: warned about,
        counted and deleted)."""
        path = self.path_for(key)
        if path is None:
            return None
        identity = None
        try:
            with open(path, "rb") as handle:
                identity = file_identity(os.fstat(handle.fileno()))
                if identity in self._refused_files:
                    return None
                if self.entries.private and not _owned_privately(os.fstat(handle.fileno())):
                    self._refuse(
                        key, None, "another user owns it or others may write it", path, identity
                    )
                    return None
                bound = self.entries.max_bytes
                if bound is not None and identity[2] > bound + MAX_ENTRY_HEADER:
                    self._refuse(
                        key,
                        None,
                        f"{identity[2]} bytes, over the {bound}-byte bound",
                        path,
                        identity,
                    )
                    return None
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            self._refuse(key, None, f"unreadable ({error})", path, identity)
            return None
        try:
            payload = unwrap_entry(key, data, self.entries.kind)
            if (key, hashlib.sha256(payload).hexdigest()) in self._refused:
                self._delete(path, identity)  # refused before (when loaded): not again
                return None
            checked = self.entries.check(payload)
        # Any exception: a reader should raise only its own error, but an entry that makes
        # it raise anything else must not fail every later run.
        except Exception as error:
            self._refuse(key, None, _reason(error), path, identity)
            return None
        _mark_used(path)
        return payload, identity, checked

    def _load_cached(
        self,
        key: str,
        found: tuple[bytes, FileIdentity | None, Any],
        load_checked: Callable[[bytes, Any], Loaded],
    ) -> Loaded | object:
        """``load_checked(payload, checked)`` of an entry from the cache, or ``_REFUSED``
        (it was refused)."""
        payload, identity, checked = found
        try:
            return load_checked(payload, checked)
        except Exception as error:
            if _out_of_memory(error):
                raise
            self._refuse(
                key, payload, f"it does not load ({_reason(error)})", self.path_for(key), identity
            )
            return _REFUSED

    def _refuse(
        self,
        key: str,
        payload: bytes | None,
        reason: str,
        path: Path | None,
        identity: FileIdentity | None,
    ) -> None:
        """Drop a bad entry: from memory, from disk if the file is still the one read,
        and (by its payload's hash) from what is read or loaded again; warn once."""
        with self._lock:
            self.stats.corrupt += 1
            self._memory.pop(key)
            if payload is not None:
                self._refused.add((key, hashlib.sha256(payload).hexdigest()))
            if identity is not None:
                self._refused_files.add(identity)
            warn = not self._warned_corrupt
            self._warned_corrupt = True
        if path is not None and identity is not None:
            self._delete(path, identity)
        if warn:
            where = path if path is not None else f"for key {key}"
            warnings.warn(
                f"torchneuron: ignoring corrupt {self.entries.kind.payload} cache entry {where}: {reason}; it is "
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
        """A write or a lock failed: memory only from now on, after one warning for the
        whole cache folder (each kind of entry then finds the same fault on its own)."""
        with self._lock:
            self.stats.disk_errors += 1
            if not self.disk_writable:
                return
            self.disk_writable = False
        root = str(self.directory.parent) if self.directory is not None else ""
        with _defaults_lock:
            if root in _unwritable_roots:
                return
            _unwritable_roots.add(root)
        warnings.warn(
            f"torchneuron: the {self.entries.kind.payload} cache folder {self.directory} cannot be written "
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


def prune_together(caches: list[DiskCache], max_bytes: int) -> tuple[int, int]:
    """Delete the least recently used entries of all ``caches`` (one order over them all:
    a disk hit sets an entry's access time) until at most ``max_bytes`` remain on disk;
    (entries, bytes) deleted. An entry another process is reading stays readable to it."""
    found = []
    for cache in caches:
        for path in cache.disk_entries():
            with contextlib.suppress(OSError):
                stat = path.stat()
                found.append((max(stat.st_atime_ns, stat.st_mtime_ns), stat.st_size, path))
    total = sum(size for _, size, _ in found)
    removed = freed = 0
    for _, size, path in sorted(found):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
            removed += 1
            freed += size
    return removed, freed


def _owned_privately(file_stat: os.stat_result) -> bool:
    """True when this user owns the file and nobody else may write it."""
    if not hasattr(os, "getuid"):  # pragma: no cover - not reached on Linux or macOS
        return True
    return file_stat.st_uid == os.getuid() and not file_stat.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _mark_used(path: Path) -> None:
    """Set the entry's access time to now (what ``prune`` orders by), keeping its
    modification time (part of the file's identity)."""
    with contextlib.suppress(OSError):
        stat = path.stat()
        now = max(time.time_ns(), stat.st_atime_ns)
        os.utime(path, ns=(now, stat.st_mtime_ns))


def _as_is(payload: bytes) -> bytes:
    return payload


def _reason(error: BaseException) -> str:
    """``error`` in one line: its type, and its message's first line."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(error, BadEntry):
        return first
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _out_of_memory(error: Exception) -> bool:
    """True when ``error`` is the runtime's out-of-HBM error: about the device, not an entry."""
    from torchneuron.runtime.errors import NeuronRuntimeError, out_of_memory_error_type

    return isinstance(error, NeuronRuntimeError) and isinstance(error, out_of_memory_error_type())


def _check_key(key: str) -> None:
    if not (isinstance(key, str) and len(key) >= 8 and all(c in "0123456789abcdef" for c in key)):
        raise ValueError(f"cache keys are lowercase hex digests (from key_for), got {key!r}")


Cache = TypeVar("Cache", bound=DiskCache)
_defaults_lock = threading.Lock()
# cache folders (roots) a write failed in, warned about once per process
_unwritable_roots: set[str] = set()
# kind of cache -> ((root folder or None, enabled), the cache for those settings)
_defaults: dict[type, tuple[tuple[str | None, bool], DiskCache]] = {}


def default_cache(kind: type[Cache]) -> Cache:
    """The process-wide cache of ``kind`` for the current ``TORCHNEURON_CACHE_DIR`` and
    ``TORCHNEURON_CACHE`` (a change of either gives a new one)."""
    enabled = disk_cache_enabled()
    wanted = (str(default_cache_dir()) if enabled else None, enabled)
    current = _defaults.get(kind)
    if current is not None and current[0] == wanted:
        return current[1]  # type: ignore[return-value]
    with _defaults_lock:
        current = _defaults.get(kind)
        if current is None or current[0] != wanted:
            current = (wanted, kind(wanted[0]))
            _defaults[kind] = current
        return current[1]  # type: ignore[return-value]
