"""The NEFF's tarball: decompression under a size cap, and the listing of its members
after the safety checks (regular files only, safe relative paths, no duplicates)."""

from __future__ import annotations

import io
import tarfile
import zlib
from typing import Any

from torchneuron.neff.errors import NeffError

MAX_MEMBERS = 100_000
# Cap on the uncompressed tarball, so a small gzip bomb cannot exhaust memory;
# 64 GiB of weights is most of a Trainium2 chip's HBM.
DEFAULT_MAX_TOTAL_BYTES = 64 << 30
_GZIP_MAGIC = b"\x1f\x8b"
_DECOMPRESS_CHUNK = 1 << 22


def decompress(stored: memoryview, max_total_bytes: int) -> tuple[str, memoryview]:
    """The uncompressed tar bytes, as a writable buffer, and the compression found."""
    cap = max_total_bytes
    if bytes(stored[:2]) != _GZIP_MAGIC:
        if len(stored) > cap:
            raise NeffError(f"tarball is {len(stored)} bytes, more than max_total_bytes={cap}")
        # Weight arrays are views into this buffer: copy once if the caller's is read-only.
        return "none", (stored if not stored.readonly else memoryview(bytearray(stored)))
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing, CRC checked
    output = bytearray()
    position = 0
    try:
        while not decompressor.eof:
            if decompressor.unconsumed_tail:
                chunk = decompressor.unconsumed_tail
            elif position < len(stored):
                chunk = stored[position : position + _DECOMPRESS_CHUNK]
                position += len(chunk)
            else:
                break
            output += decompressor.decompress(chunk, _DECOMPRESS_CHUNK)
            if len(output) > cap:
                raise NeffError(
                    f"tarball expands beyond max_total_bytes={cap} bytes; "
                    "refusing to decompress further"
                )
    except zlib.error as error:
        raise NeffError(f"tarball is not valid gzip data ({error})") from None
    if not decompressor.eof:
        raise NeffError("gzip stream of the tarball ends early: the tarball is truncated")
    if decompressor.unused_data or position < len(stored):
        raise NeffError("unexpected bytes after the end of the gzip-compressed tarball")
    return "gzip", memoryview(output)


class _BufferFile(io.RawIOBase):
    """A seekable read-only file over a buffer, so tarfile can parse it without a copy."""

    def __init__(self, buffer: memoryview) -> None:
        self._view = buffer
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        count = max(0, min(len(target), len(self._view) - self._position))
        target[:count] = self._view[self._position : self._position + count]
        self._position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._view)}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position


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


def list_members(tarball: memoryview) -> dict[str, tuple[int, int]]:
    """path -> (data offset, size) for every member, after the safety checks."""
    members: dict[str, tuple[int, int]] = {}
    try:
        with tarfile.open(fileobj=_BufferFile(tarball), mode="r:") as tar:
            while (info := tar.next()) is not None:
                if len(members) >= MAX_MEMBERS:
                    raise NeffError(f"tarball has more than {MAX_MEMBERS} members")
                path = _check_member_path(info.name)
                if not info.isreg() or info.issparse():
                    raise NeffError(
                        f"tarball member {path!r} is {_member_kind(info)}; only regular files "
                        "are allowed"
                    )
                if path in members:
                    raise NeffError(f"tarball has member {path!r} twice")
                end = info.offset_data + info.size
                if end > len(tarball):
                    raise NeffError(
                        f"tarball member {path!r} is cut short: its {info.size} bytes end at "
                        f"offset {end}, the tarball has {len(tarball)}"
                    )
                members[path] = (info.offset_data, info.size)
    except (tarfile.TarError, EOFError, UnicodeError, ValueError, OSError) as error:
        raise NeffError(f"tarball is not a valid tar archive ({error})") from None
    return members
