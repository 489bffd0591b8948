"""Writing a file whole or not at all: the one atomic writer of the package.

The NEFF writer, the NEFF cache and ``neuronc`` all write through
``write_atomically``, so a reader (another process, a crashed run's successor) sees
the old file or the complete new one, never a partial file, and a failure leaves no
temporary behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, flushed to
    disk, then renamed over ``path``.

    The temporary's name is fresh per write (``.<name>.<pid>.<random>.tmp``), so
    concurrent writers of one file never share it; it is removed on any failure,
    Ctrl-C included. ``OSError`` propagates for the caller to word.
    """
    path = Path(path)
    temporary = path.with_name(
        f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}{TEMPORARY_SUFFIX}"
    )
    # os.open with mode 0o666 lets the umask decide permissions, as a plain open would.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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
