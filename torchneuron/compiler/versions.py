"""Versions of the compiler and of every dependency that shapes its output.

They go into each NEFF manifest and into every compile-cache key, so an
upgrade never reuses a stale artifact.
"""

from __future__ import annotations

import functools
from importlib import metadata

from torchneuron.version import __version__


@functools.lru_cache(maxsize=1)
def stablehlo_target_version() -> str:
    """The StableHLO version portable artifacts are written at.

    The lower of what torch-mlir writes and what the executor's jaxlib reads.
    """
    from jaxlib.mlir._mlir_libs import _stablehlo as executor_side
    from torch_mlir._mlir_libs import _stablehlo as compiler_side

    return compiler_side.get_smaller_version(
        compiler_side.get_current_version(), executor_side.get_current_version()
    )


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """The installed versions of this package and of the packages that shape its output,
    read from their metadata (nothing is imported)."""

    def version_of(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {
        "torchneuron": __version__,
        "torch": version_of("torch"),
        "torch_mlir": version_of("torch-mlir"),
        "jaxlib": version_of("jaxlib"),
    }


@functools.lru_cache(maxsize=1)
def dependency_versions() -> dict[str, str]:
    """``package_versions`` and the StableHLO version programs are written at, which
    imports both sides' MLIR bindings: a NEFF's manifest records it; a cache key needs
    only the two package versions that decide it."""
    return {**package_versions(), "stablehlo": stablehlo_target_version()}


def build_version() -> str:
    return f"torchneuron {__version__}"
