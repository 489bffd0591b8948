"""The on-disk form of a NEFF cache entry, and how entries are written.

An entry is the NEFF behind one ASCII header line that ties it to its key::

    torchneuron-cache-entry <CACHE_FORMAT> <key> <sha256 of the NEFF, hex> <NEFF bytes>\\n
    <the NEFF, unchanged>

``unwrap_entry`` refuses (``BadEntry``) anything else: another key's entry or a bare
NEFF copied over this one, a truncated or extended file, altered bytes, an entry of
another cache format. ``tail -n +2 <entry> > x.neff`` gives the NEFF back.

Why an envelope and not a manifest field: the key is the cache's business (it digests
the compiler's fingerprint and the caller's description of the call), and a NEFF
compiled for one key is byte-identical to the same program compiled elsewhere; so the
NEFF format, its hash and every NEFF producer stay as they are, and the cache checks its
own entries whatever wrote the NEFF inside.

Writes are atomic (``atomic_write``: a temporary ``.<name>.<random>.tmp`` in the same
folder, fsync, ``os.replace``). A writer killed midway leaves its temporary file, which
no reader opens; ``remove_stale_temporaries`` deletes those older than
``STALE_TEMPORARY_SECONDS``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from torchneuron.files import TEMPORARY_SUFFIX, write_atomically

# Bump when the layout of entries or keys changes (2: entries carry their key).
CACHE_FORMAT = 2
ENTRY_MAGIC = b"torchneuron-cache-entry"
# The header line is ~170 bytes; a file without a newline this early is not an entry.
MAX_ENTRY_HEADER = 256
# A temporary file this old belongs to a writer that died (a write takes milliseconds).
STALE_TEMPORARY_SECONDS = 3600.0


class BadEntry(Exception):
    """A disk entry is not a whole entry for the key asked for; the message says why."""


def wrap_entry(key: str, neff: bytes) -> bytes:
    """The bytes of the disk entry holding ``neff`` under ``key`` ."""
    digest = hashlib.sha256(neff).hexdigest()
    header = b"%s %d %s %s %d\n" % (
        ENTRY_MAGIC,
        CACHE_FORMAT,
        key.encode(),
        digest.encode(),
        len(neff),
    )
    return header + neff


def unwrap_entry(key: str, data: bytes) -> bytes:
    """The NEFF inside disk entry ``data``; ``BadEntry`` unless it is whole and for ``key``."""
    newline = data.find(b"\n", 0, MAX_ENTRY_HEADER)
    if newline < 0:
        raise BadEntry("not a cache entry (no entry header)")
    fields = data[:newline].split(b" ")
    if len(fields) != 5 or fields[0] != ENTRY_MAGIC:
        raise BadEntry("not a cache entry (no entry header)")
    _, entry_format, entry_key, digest, size = fields
    if entry_format != str(CACHE_FORMAT).encode():
        raise BadEntry(f"entry format {_text(entry_format)}, expected {CACHE_FORMAT}")
    if entry_key != key.encode():
        raise BadEntry(f"it holds the entry of key {_text(entry_key)}")
    neff = data[newline + 1 :]
    if size != str(len(neff)).encode():
        raise BadEntry(f"truncated or extended: header says {_text(size)} bytes, found {len(neff)}")
    if digest != hashlib.sha256(neff).hexdigest().encode():
        raise BadEntry("its NEFF bytes do not match the sha256 in its header")
    return neff


def _text(field: bytes) -> str:
    return field[:80].decode("ascii", "replace")


# Which file an entry was read from: (device, inode, size, mtime_ns).
FileIdentity = tuple[int, int, int, int]


def file_identity(stat: os.stat_result) -> FileIdentity:
    """The identity of the file ``stat`` describes; another file (a replacement) differs."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)


def remove_stale_temporaries(folder: Path) -> None:
    """Delete the temporary files of writers that died (a killed process leaves one)."""
    cutoff = time.time() - STALE_TEMPORARY_SECONDS
    with contextlib.suppress(OSError):
        for path in folder.glob(f".*{TEMPORARY_SUFFIX}"):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
