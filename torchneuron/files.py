"""Writing a file whole or not at all: the one atomic writer of the package.

The NEFF writer, the NEFF cache, ``neuronc`` and the golden files all write through
``write_atomically``, so a reader (another process, a crashed run's successor) sees
the old file or the complete new one, never a partial file, and a failure leaves no
temporary behind. ``atomic_write`` adds what a caller naming files for a user needs:
the folder made if missing, and each failure as one ``FileProblem`` line naming the
argument (``-o``, ``--dir``, ``golden folder``) that named the file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from torchneuron.errors import TorchNeuronError

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


class FileProblem(TorchNeuronError):
    """A file or folder named by the user (on the command line, a golden folder) cannot be
    read or written (``neuronc``: exit status 1)."""


def describe_os_error(error: OSError) -> str:
    """``Is a directory`` rather than ``[Errno 21] Is a directory: 'x'``."""
    return error.strerror or type(error).__name__


def output_folder(
    folder: str | os.PathLike[str], option: str, named: str | os.PathLike[str] | None = None
) -> Path:
    """``folder``, made with its parents if missing; FileProblem naming ``option`` and
    ``named`` (the argument's value: the folder itself or a file to go in it) if it cannot be."""
    folder = Path(folder)
    shown = f"{option} {named if named is not None else folder}"
    if folder.is_dir():
        return folder
    if folder.exists():
        raise FileProblem(f"{shown}: {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        # A parent is a file (mkdir names the folder it tried, not the file in the way).
        raise FileProblem(f"{shown}: cannot create folder {folder}: a file is in the way") from None
    except OSError as error:
        raise FileProblem(
            f"{shown}: cannot create folder {folder} ({describe_os_error(error)})"
        ) from None
    return folder


def atomic_write(path: str | os.PathLike[str], data: bytes | str, option: str) -> None:
    """Write ``data`` to ``path`` atomically (its folder is made if missing).

    ``option`` is the command-line argument that named the file (``-o``, ``--dir``), for the
    one-line message of a failure.
    """
    path = Path(path)
    if path.is_dir():
        raise FileProblem(f"{option} {path}: is a folder; give a file name")
    output_folder(path.parent, option, named=path)  # checked (and made) first
    payload = data.encode() if isinstance(data, str) else data
    try:
        write_atomically(path, payload)
    except OSError as error:
        raise FileProblem(f"{option} {path}: cannot write ({describe_os_error(error)})") from None


def check_output_file(path: str | os.PathLike[str], option: str) -> None:
    """Refuse, before any work, an output path that is a folder or lies under a file."""
    path = Path(path)
    if path.is_dir():
        raise FileProblem(f"{option} {path}: is a folder; give a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise FileProblem(f"{option} {path}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise FileProblem(
                    f"{option} {path}: cannot write into {parent} (Permission denied)"
                )
            return
