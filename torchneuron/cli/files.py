"""The files ``neuronc`` reads and writes, each failure as one line that names the argument.

Every file the CLI writes (NEFF, trace JSON, output ``.npy``, golden files) appears
complete or not at all. The helpers live in the base layer (``torchneuron/files.py``),
which the golden checks use too; the CLI names them here.
"""

from __future__ import annotations

from torchneuron.files import (
    FileProblem,
    atomic_write,
    check_output_file,
    describe_os_error,
    output_folder,
)

__all__ = ["FileProblem", "atomic_write", "check_output_file", "describe_os_error", "output_folder"]
