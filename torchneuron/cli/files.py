"""The files ``neuronc`` reads and writes, each failure as one line that names the argument.

Every file the CLI writes (NEFF, trace JSON, output ``.npy``, golden files) appears
complete or not at all: the bytes go to a uniquely named temporary file in the target's
folder, then ``os.replace`` puts it in place; on any failure (Ctrl-C included) the
temporary file is removed.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchneuron.errors import TorchNeuronError
from torchneuron.files import write_atomically


class FileProblem(TorchNeuronError):
    """A file or folder named on the command line cannot be read or written (exit status 1)."""


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
