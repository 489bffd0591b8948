"""The on-disk form of a disk-cache entry, and how entries are written.

An entry is its payload (a NEFF, or an XLA executable) behind one ASCII header line
that ties it to its key::

    <magic> <format> <key> <sha256 of the payload, hex> <payload bytes>\\n
    <the payload, unchanged>

with ``torchneuron-cache-entry`` and ``CACHE_FORMAT`` for NEFF entries (the
executable cache has its own magic and format). ``unwrap_entry`` refuses
(``BadEntry``) anything else: another key's entry or a bare NEFF copied over this one,
a truncated or extended file, altered bytes, an entry of another kind or cache format.
``tail -n +2 <entry> > x.neff`` gives a NEFF back.

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
import json
import os
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class EntryKind:
    """What a cache's entries are: the header's magic and format, the payload's name."""

    magic: bytes
    format: int
    payload: str  # "NEFF", "executable": used in messages


NEFF_ENTRY = EntryKind(ENTRY_MAGIC, CACHE_FORMAT, "NEFF")


def wrap_entry(key: str, payload: bytes, kind: EntryKind = NEFF_ENTRY) -> bytes:
    """The bytes of the disk entry holding ``payload`` under ``key`` ."""
    digest = hashlib.sha256(payload).hexdigest()
    header = b"%s %d %s %s %d\n" % (
        kind.magic,
        kind.format,
        key.encode(),
        digest.encode(),
        len(payload),
    )
    return header + payload


def unwrap_entry(key: str, data: bytes, kind: EntryKind = NEFF_ENTRY) -> bytes:
    """The payload inside disk entry ``data``; ``BadEntry`` unless it is whole, of
    ``kind`` and for ``key``."""
    newline = data.find(b"\n", 0, MAX_ENTRY_HEADER)
    if newline < 0:
        raise BadEntry("not a cache entry (no entry header)")
    fields = data[:newline].split(b" ")
    if len(fields) != 5 or fields[0] != kind.magic:
        raise BadEntry("not a cache entry (no entry header)")
    _, entry_format, entry_key, digest, size = fields
    if entry_format != str(kind.format).encode():
        raise BadEntry(f"entry format {_text(entry_format)}, expected {kind.format}")
    if entry_key != key.encode():
        raise BadEntry(f"it holds the entry of key {_text(entry_key)}")
    payload = data[newline + 1 :]
    if size != str(len(payload)).encode():
        raise BadEntry(
            f"truncated or extended: header says {_text(size)} bytes, found {len(payload)}"
        )
    if digest != hashlib.sha256(payload).hexdigest().encode():
        raise BadEntry(f"its {kind.payload} bytes do not match the sha256 in its header")
    return payload


# A payload's head line (JSON facts before the bytes they describe) is at most this long.
MAX_HEAD_LINE = 1 << 20


def with_head(head: dict, body: bytes) -> bytes:
    """``head`` as one compact JSON line, then ``body``: the layout of every payload that
    carries facts beside a NEFF or an executable."""
    return json.dumps(head, separators=(",", ":")).encode() + b"\n" + body


def split_head(payload: bytes, keys: set[str], what: str) -> tuple[dict, bytes]:
    """(head, body) of a ``with_head`` payload whose head holds exactly ``keys``;
    ``BadEntry`` naming ``what`` (``"signature"``, ``"graph"``) otherwise."""
    newline = payload.find(b"\n", 0, MAX_HEAD_LINE)
    if newline < 0:
        raise BadEntry(f"no {what} line")
    try:
        head = json.loads(payload[:newline])
    except (ValueError, RecursionError):
        raise BadEntry(f"its {what} line is not JSON") from None
    if not isinstance(head, dict) or set(head) != keys:
        raise BadEntry(f"its {what} line does not hold the {what}'s fields")
    return head, payload[newline + 1 :]


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
