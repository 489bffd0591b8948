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

from torchneuron.lazy import lazy_names

# Loaded on first use: ``import torch`` (the device's autoload) reaches this package for
# its error types only, and the reader, writer and describer cost ~40 ms to import.
__getattr__ = lazy_names(
    __name__,
    {
        "HEADER_FIELDS": "header",
        "HEADER_SIZE": "header",
        "NEFF_VERSION": "header",
        "PKG_VERSION": "header",
        "Neff": "container",
        "NeffError": "errors",
        "NeffHeader": "header",
        "describe": "description",
        "read_neff": "reader",
        "weight_file_path": "weights",
        "write_neff": "writer",
    },
)

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
