"""The NEFF's tarball: streamed decompression under size limits, and the listing of its
members after the safety checks (regular files only, safe relative paths, no duplicates).

A NEFF is input from strangers, so nothing it declares is decompressed before it is
checked. The tar headers are parsed as the gzip stream is decompressed: tarfile reads
from ``_Source``, a file over one growing buffer that decompresses only as far as a
read reaches. Each member's declared size is checked against the limit for its kind
and against what the rest of the stream could still hold before a byte of its data is
decompressed. After the end-of-archive marker only the tar record's zero padding may
follow; the rest of the gzip stream is decompressed (so its CRC is checked) only up to
that padding, and anything more is refused at once.

The limits (``docs/neff-format.md`` section 5 gives the reasons):

- the uncompressed tarball: at most ``max_total_bytes``, by default the HBM of the
  largest logical core the target table holds (``LARGEST_CORE_HBM_BYTES``): a NEFF's
  weights and program must fit in one logical core's HBM to load at all;
- a member may not end beyond what the rest of the gzip stream can expand to
  (deflate expands at most 1032:1), so a lying header is refused before decompression;
- each JSON member (``*.json``) at most ``MAX_JSON_MEMBER_BYTES``, the program at most
  ``MAX_PROGRAM_BYTES``, each other extra file at most ``MAX_EXTRA_FILE_BYTES``; weight
  files only by the total;
- one member's tar headers (pax or GNU extensions included) at most
  ``MAX_HEADER_BYTES``; at most ``MAX_MEMBERS`` members.

Running out of memory while reading is a ``NeffError`` too, never a ``MemoryError``.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from typing import Any, NamedTuple

from torchneuron.neff.container import PROGRAM_PATH
from torchneuron.neff.errors import NeffError
from torchneuron.neff.weights import WEIGHTS_DIR
from torchneuron.target.hardware import CHIPS, MiB

MAX_MEMBERS = 100_000
# Weights and program must fit in one logical core's HBM at load: the largest logical
# core of any chip we emulate bounds every NEFF (36 GiB: Trainium3 at LNC=2).
LARGEST_CORE_HBM_BYTES = max(
    chip.hbm_bytes_per_logical_core(lnc) for chip in CHIPS.values() for lnc in chip.supported_lnc
)
DEFAULT_MAX_TOTAL_BYTES = LARGEST_CORE_HBM_BYTES
# The largest JSON member the compiler writes is the weight index (about 300 bytes per
# weight) or the schedule (about 4.5 KiB per transformer layer): 32 MiB holds some
# 100 000 weights or 7 000 layers, and json.loads of the worst 32 MiB ("[[],[],...]")
# takes 740 MiB of Python objects.
MAX_JSON_MEMBER_BYTES = 32 * MiB
# Programs hold no weights (externalize-constants moves constants over 1 KiB out of the
# entry block): a 24-layer transformer's program is 27 KB. Constants inside nested
# regions stay in the program, hence the generous bound.
MAX_PROGRAM_BYTES = 256 * MiB
MAX_EXTRA_FILE_BYTES = 256 * MiB
# One member's headers: the writer's are at most 1.5 KiB (a pax header for a path of up
# to 255 characters), so MAX_MEMBERS members carry at most 400 MB of headers.
MAX_HEADER_BYTES = 4 * 1024
# Deflate's largest expansion: one 258-byte match coded in 2 bits.
MAX_DEFLATE_RATIO = 1032
# Output zlib may hold back (a match in progress, bits already consumed), with margin.
_DEFLATE_SLACK_BYTES = 64 * 1024

_BLOCK = tarfile.BLOCKSIZE  # 512
_RECORD = tarfile.RECORDSIZE  # 10240: tar writers pad the archive to whole records
_GZIP_MAGIC = b"\x1f\x8b"
_INPUT_CHUNK = 64 * 1024  # zlib copies unconsumed input on every call: keep it small
_OUTPUT_CHUNK = 4 * MiB
_MIN_OUTPUT = 64 * 1024  # decompressed ahead of a read: the most a refusal costs


class Tarball(NamedTuple):
    compression: str  # "gzip" or "none"
    data: memoryview  # the uncompressed tar, writable: weight arrays are views into it
    members: dict[str, tuple[int, int]]  # path -> (data offset, size)


def open_tarball(stored: memoryview, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES) -> Tarball:
    """Decompress (if gzip) and list the tarball in one streamed pass, under the limits."""
    compression = "gzip" if bytes(stored[:2]) == _GZIP_MAGIC else "none"
    try:
        return _open(stored, compression, max_total_bytes)
    except MemoryError:
        pass  # raised outside the handler, so the partial buffer is freed first
    raise _out_of_memory(len(stored), compression)


def decompress(stored: memoryview, max_total_bytes: int) -> tuple[str, memoryview]:
    """The uncompressed tar bytes, as a writable buffer, and the compression found."""
    tarball = open_tarball(stored, max_total_bytes)
    return tarball.compression, tarball.data


def list_members(tarball: memoryview) -> dict[str, tuple[int, int]]:
    """path -> (data offset, size) for every member, after the safety checks."""
    try:
        return _walk(_Source(tarball, None, len(tarball)))
    except MemoryError:
        pass
    raise _out_of_memory(len(tarball), "none")


def member_limit(path: str, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES) -> tuple[str, int]:
    """What a member at ``path`` is, and the most bytes it may hold (weight files are
    bounded only by the whole tarball's cap)."""
    if path.startswith(WEIGHTS_DIR):
        return "a weight file", max_total_bytes
    if path == PROGRAM_PATH:
        return "the program", MAX_PROGRAM_BYTES
    if path.endswith(".json"):
        return "a JSON member", MAX_JSON_MEMBER_BYTES
    return "an extra file", MAX_EXTRA_FILE_BYTES


def _out_of_memory(size: int, compression: str) -> NeffError:
    what = "gzip-compressed " if compression == "gzip" else ""
    return NeffError(f"not enough memory to read the {size}-byte {what}tarball")


def _open(stored: memoryview, compression: str, cap: int) -> Tarball:
    if compression == "none":
        if len(stored) > cap:
            raise NeffError(f"tarball is {len(stored)} bytes, more than max_total_bytes={cap}")
        members = _walk(_Source(stored, None, cap))
        # Weight arrays are views into this buffer: copy once if the caller's is read-only.
        data = stored if not stored.readonly else memoryview(bytearray(stored))
        return Tarball("none", data, members)
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing, CRC checked
    source = _Source(stored, decompressor, cap)
    members = _walk(source)
    return Tarball("gzip", memoryview(source.buffer), members)


class _Source(io.RawIOBase):
    """The tarball as tarfile reads it: a seekable read-only file over one buffer.

    With a decompressor, the buffer starts empty and grows as reads (and ``fill``)
    reach past what has been decompressed; ``stored`` is then the gzip stream. Reads by
    tarfile may not pass ``read_limit``, so a header cannot make tarfile itself
    decompress a member's worth of data.
    """

    def __init__(self, stored: memoryview, decompressor: Any, cap: int) -> None:
        self.stored = stored
        self.decompressor = decompressor
        self.cap = cap
        self.buffer: bytearray | memoryview = bytearray() if decompressor else stored
        self.read_limit = MAX_HEADER_BYTES
        self._consumed = 0  # bytes of ``stored`` handed to the decompressor
        self._position = 0

    @property
    def size(self) -> int:
        return len(self.buffer)

    def most_possible_size(self) -> int:
        """An upper bound on the tarball's final size, from what is left to decompress."""
        if self.decompressor is None:
            return len(self.buffer)
        left = len(self.stored) - self._consumed + len(self.decompressor.unconsumed_tail)
        return len(self.buffer) + MAX_DEFLATE_RATIO * left + _DEFLATE_SLACK_BYTES

    def fill(self, target: int) -> None:
        """Decompress until the buffer holds ``target`` bytes or the gzip stream ends."""
        decompressor = self.decompressor
        if decompressor is None:
            return
        while len(self.buffer) < target and not decompressor.eof:
            if decompressor.unconsumed_tail:
                chunk: Any = decompressor.unconsumed_tail
            elif self._consumed < len(self.stored):
                chunk = self.stored[self._consumed : self._consumed + _INPUT_CHUNK]
                self._consumed += len(chunk)
            else:
                chunk = b""  # no input left: only output zlib held back may remain
            wanted = min(_OUTPUT_CHUNK, max(target - len(self.buffer), _MIN_OUTPUT))
            try:
                output = decompressor.decompress(chunk, wanted)
            except zlib.error as error:
                raise NeffError(f"tarball is not valid gzip data ({error})") from None
            if not output and not chunk:
                raise NeffError("gzip stream of the tarball ends early: the tarball is truncated")
            self.buffer += output
            if len(self.buffer) > self.cap:
                raise NeffError(
                    f"tarball expands beyond max_total_bytes={self.cap} bytes; "
                    "refusing to decompress further"
                )

    def finish(self, archive_end: int) -> None:
        """After the end-of-archive marker at ``archive_end``: only the record's zero
        padding, then (gzip) the end of the stream, its CRC, and nothing after it."""
        padded_end = -(-(archive_end + 2 * _BLOCK) // _RECORD) * _RECORD
        self.fill(padded_end + 1)
        if len(self.buffer) > padded_end:
            raise NeffError(
                f"tarball continues after the end of its tar archive at offset {archive_end}: "
                f"only zero padding up to offset {padded_end} may follow the last member"
            )
        if bytes(self.buffer[archive_end:]).count(0) != len(self.buffer) - archive_end:
            raise NeffError(
                f"tarball has data after the end of its tar archive at offset {archive_end}: "
                "only zero padding may follow the last member"
            )
        decompressor = self.decompressor
        if decompressor is None:
            return
        if decompressor.unused_data or self._consumed < len(self.stored):
            raise NeffError("unexpected bytes after the end of the gzip-compressed tarball")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        end = self._position + len(target)
        if end > self.read_limit:
            raise NeffError(
                f"tar header at offset {self.read_limit - MAX_HEADER_BYTES} is longer than "
                f"{MAX_HEADER_BYTES} bytes (pax or GNU extended headers)"
            )
        self.fill(end)
        count = max(0, min(len(target), len(self.buffer) - self._position))
        target[:count] = self.buffer[self._position : self._position + count]
        self._position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self.buffer)}
        self._position = max(0, base[whence] + offset)
        return self._position

    def tell(self) -> int:
        return self._position


def _walk(source: _Source) -> dict[str, tuple[int, int]]:
    """Every member's (data offset, size), checked before its data is decompressed."""
    members: dict[str, tuple[int, int]] = {}
    try:
        with tarfile.open(fileobj=source, mode="r:") as tar:
            while (info := tar.next()) is not None:
                tar.members.clear()  # tarfile keeps every header; we keep our own list
                path = _check_member(info, members)
                end = info.offset_data + info.size
                _check_member_size(path, info.size, end, source)
                source.fill(end)
                if end > source.size:
                    raise NeffError(
                        f"tarball member {path!r} is cut short: its {info.size} bytes end at "
                        f"offset {end}, the tarball has {source.size}"
                    )
                members[path] = (info.offset_data, info.size)
                source.read_limit = tar.offset + MAX_HEADER_BYTES
            archive_end = tar.offset
    except (tarfile.TarError, EOFError, UnicodeError, ValueError, OverflowError, OSError) as error:
        raise NeffError(f"tarball is not a valid tar archive ({error})") from None
    except RecursionError:
        raise NeffError("tarball is not a valid tar archive (nested extended headers)") from None
    source.finish(archive_end)
    return members


def _check_member(info: tarfile.TarInfo, members: dict[str, tuple[int, int]]) -> str:
    if len(members) >= MAX_MEMBERS:
        raise NeffError(f"tarball has more than {MAX_MEMBERS} members")
    path = _check_member_path(info.name)
    if not info.isreg() or info.issparse():
        raise NeffError(
            f"tarball member {path!r} is {_member_kind(info)}; only regular files are allowed"
        )
    if path in members:
        raise NeffError(f"tarball has member {path!r} twice")
    return path


def _check_member_size(path: str, size: int, end: int, source: _Source) -> None:
    kind, limit = member_limit(path, source.cap)
    if size < 0:
        raise NeffError(f"tarball member {path!r} has a negative size ({size})")
    if size > limit and limit < source.cap:  # weight files: only the total counts
        raise NeffError(
            f"tarball member {path!r} is {size} bytes, more than the {limit}-byte limit for {kind}"
        )
    possible = source.most_possible_size()
    if end > possible:
        # A gzip stream cannot expand by more than 1032:1: the header lies.
        raise NeffError(
            f"tarball member {path!r} is cut short: its {size} bytes end at offset {end}, "
            f"the tarball has {'at most ' if source.decompressor else ''}{possible}"
        )
    if end > source.cap:
        raise NeffError(
            f"tarball expands beyond max_total_bytes={source.cap} bytes; refusing to "
            f"decompress further (member {path!r} ends at offset {end})"
        )


def _member_kind(info: tarfile.TarInfo) -> str:
    if info.isdir():
        return "a directory"
    if info.issym():
        return "a symbolic link"
    if info.islnk():
        return "a hard link"
    if info.ischr() or info.isblk():
        return "a device"
    if info.isfifo():
        return "a FIFO"
    if info.issparse():
        return "a sparse file"
    return f"of tar type {info.type!r}"


def _check_member_path(path: str) -> str:
    parts = path.split("/")
    if (
        path.startswith("/")
        or "\\" in path
        or any(part in ("", ".", "..") for part in parts)
        or any(ord(char) < 0x20 for char in path)
    ):
        raise NeffError(
            f"unsafe path in tarball: member {path!r} (absolute paths, '..', '.', empty "
            "components, backslashes and control characters are not allowed)"
        )
    return path
