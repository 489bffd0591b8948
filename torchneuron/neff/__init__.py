"""The NEFF container: a 1024-byte header followed by a deterministic tarball.

The tarball holds ``manifest.json`` (signature, target, versions, pipeline, source
hash, estimates), ``sg00/def.json`` (variables and DMA queues), the program as a
StableHLO portable artifact (``sg00/program.mlirbc``), raw little-endian weight files
(``sg00/weights/<name>.bin``) indexed by ``sg00/weights.json``, and optional extra
files. ``docs/neff-format.md`` is the specification; the dtypes a NEFF may hold are
``torchneuron.target.dtypes.NEFF_DTYPES``.

Importing this package imports neither torch nor ml_dtypes (loaded with the first
low-precision weight) nor any stage above it.
"""

from torchneuron.neff.container import Neff
from torchneuron.neff.describe import describe
from torchneuron.neff.errors import NeffError
from torchneuron.neff.header import (
    HEADER_FIELDS,
    HEADER_SIZE,
    NEFF_VERSION,
    PKG_VERSION,
    NeffHeader,
)
from torchneuron.neff.reader import read_neff
from torchneuron.neff.weights import weight_file_path
from torchneuron.neff.writer import write_neff

__all__ = [
    "HEADER_FIELDS",
    "HEADER_SIZE",
    "NEFF_VERSION",
    "PKG_VERSION",
    "Neff",
    "NeffError",
    "NeffHeader",
    "describe",
    "read_neff",
    "weight_file_path",
    "write_neff",
]
