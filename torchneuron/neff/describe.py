"""A human-readable summary of a NEFF, printed by ``neuronc inspect``."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchneuron.neff.container import Neff
from torchneuron.neff.header import HEADER_SIZE, NeffHeader
from torchneuron.neff.reader import check_header
from torchneuron.neff.weights import weight_dtype_name
from torchneuron.neff.writer import build_members, write_neff


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _tensor_type(spec: Any) -> str:
    if not isinstance(spec, dict):
        return repr(spec)
    shape = spec.get("shape")
    shape_text = "x".join(str(dim) for dim in shape) if isinstance(shape, list) else "?"
    return f"{spec.get('name', '?')}: {spec.get('dtype', '?')}[{shape_text}]"


def _header_of(neff: Neff) -> tuple[NeffHeader, dict[str, int]]:
    """The header and member sizes, from the file read or by packing ``neff`` now."""
    header = neff.header
    if header is None:
        header = check_header(memoryview(write_neff(neff)))
    sections = {path: len(data) for path, data in build_members(neff).items()}
    return header, sections


def describe(neff: Neff) -> str:
    """Header fields, sections with sizes, signature, weights, versions and target."""
    header, sections = _header_of(neff)
    manifest = neff.manifest if isinstance(neff.manifest, dict) else {}
    lines = [
        f"NEFF {header.name!r}",
        "header:",
        f"  pkg_version          {header.pkg_version}",
        f"  header_size          {header.header_size}",
        f"  data_size            {header.data_size} ({_size(header.data_size)}, "
        f"{'uncompressed' if neff.compression == 'none' else neff.compression} tarball)",
        f"  neff_version         {header.neff_version_major}.{header.neff_version_minor}",
        f"  neff_build_version   {header.build_version}",
        f"  num_tpb              {header.num_tpb}",
        f"  requested_tpb_count  {header.requested_tpb_count}",
        f"  lnc_size             {header.lnc_size}",
        f"  feature_bits         {header.feature_bits:#x}",
        f"  hash (sha256)        {header.hash_hex}",
        f"  uuid                 {header.uuid_str}",
        f"  file size            {HEADER_SIZE + header.data_size} bytes",
    ]
    if "target" in manifest or "lnc" in manifest:
        lines.append(f"target: {manifest.get('target', '?')}  lnc: {manifest.get('lnc', '?')}")
    versions = manifest.get("versions")
    if isinstance(versions, dict) and versions:
        lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    if "pipeline" in manifest:
        lines.append(f"pipeline: {manifest['pipeline']}")
    if "source_hash" in manifest:
        lines.append(f"source_hash: {manifest['source_hash']}")
    signature = manifest.get("signature")
    if isinstance(signature, dict):
        lines.append("signature:")
        for role in ("inputs", "outputs"):
            specs = signature.get(role, [])
            if isinstance(specs, list):
                lines.append(f"  {role + ':':<9}" + (", ".join(map(_tensor_type, specs)) or "-"))
    estimates = manifest.get("estimates")
    if isinstance(estimates, dict) and estimates:
        lines.append("estimates: " + ", ".join(f"{k}={v}" for k, v in sorted(estimates.items())))
    lines.append("sections:")
    width = max(len(path) for path in sections)
    program_kind = "MLIR bytecode" if bytes(neff.program[:4]) == b"ML\xefR" else "not MLIR bytecode"
    for path, size in sections.items():
        note = f"  ({program_kind})" if path.endswith("program.mlirbc") else ""
        lines.append(f"  {path:<{width}}  {size:>12} B{note}")
    total = sum(np.asarray(array).nbytes for array in neff.weights.values())
    lines.append(f"weights: {len(neff.weights)} ({_size(total)})")
    if neff.weights:
        rows = [
            (
                name,
                weight_dtype_name(np.asarray(array).dtype) or str(np.asarray(array).dtype),
                "x".join(map(str, np.shape(array))) or "scalar",
                str(np.asarray(array).nbytes),
            )
            for name, array in sorted(neff.weights.items())
        ]
        columns = [("name", "dtype", "shape", "bytes"), *rows]
        widths = [max(len(row[i]) for row in columns) for i in range(4)]
        for row in columns:
            lines.append(
                f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  "
                f"{row[3]:>{widths[3]}}"
            )
    return "\n".join(lines) + "\n"
