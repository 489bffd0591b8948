"""A human-readable summary of a NEFF, printed by ``neuronc inspect``.

``describe`` first builds the NEFF's members with the writer, which checks every JSON
member against the schema (``schema.py``), so what it prints is validated data, whether
the ``Neff`` was read from a file or built in memory; a malformed one is a ``NeffError``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from torchneuron.neff.container import DEFINITION_PATH, MANIFEST_PATH, SCHEDULE_PATH, Neff
from torchneuron.neff.header import HEADER_SIZE, NeffHeader
from torchneuron.neff.reader import check_header
from torchneuron.neff.schema import ESTIMATES, load_schedule, parse_json
from torchneuron.neff.weights import weight_dtype_name
from torchneuron.neff.writer import build_members, neff_bytes
from torchneuron.target.engines import ENGINES


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _tensor_type(spec: dict) -> str:
    return f"{spec['name']}: {spec['dtype']}[{'x'.join(map(str, spec['shape']))}]"


def _brief(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _dynamic_lines(entry: dict) -> list[str]:
    """A dynamic program's symbolic signature: ``x: float32[s0, 16]``, each symbol's
    range, the guards, and which outputs the program does not compute."""
    signature = entry["signature"]
    lines = ["dynamic program (StableHLO with symbolic dimensions, specialized per shape):"]
    for spec in signature["inputs"]:
        dims = ", ".join(str(d) for d in spec["shape"])
        lines.append(f"  input  {spec['name']}: {spec['dtype']}[{dims}]")
    for name, bounds in signature["symbols"].items():
        high = "inf" if bounds["max"] is None else bounds["max"]
        lines.append(f"  symbol {name} in [{bounds['min']}, {high}]")
    for guard in entry["guards"]:
        lines.append(f"  guard  {guard}")
    outputs = entry["outputs"]
    lines.append(
        f"  outputs: {outputs['count']}"
        + (f" ({', '.join(outputs['names'])})" if outputs["names"] else "")
    )
    return lines


def _header_of(neff: Neff) -> tuple[NeffHeader, dict[str, bytes]]:
    """The header (from the file read, or by packing ``neff`` now) and the members.

    Building the members checks them (``NeffError`` for anything the reader would refuse).
    """
    members = build_members(neff)
    header = neff.header
    if header is None:
        header = check_header(memoryview(neff_bytes(neff, members)))
    return header, members


def _estimate_lines(estimates: dict, manifest: dict) -> list[str]:
    """The manifest's ``estimates`` as labelled lines; unknown keys are listed as they are."""
    known = set(ESTIMATES.optional)
    where = f"{manifest.get('target', '?')}, LNC={manifest.get('lnc', '?')}"
    lines = [f"estimates (cost model, one {where} logical NeuronCore):"]
    if isinstance(estimates.get("latency_us"), (int, float)):
        lines.append(f"  estimated latency    {estimates['latency_us']:.3f} us")
    busy = estimates.get("engine_busy_percent")
    if isinstance(busy, dict) and busy:
        order = [e for e in ENGINES if e in busy] + sorted(set(busy) - set(ENGINES))
        lines.append("  engine busy          " + ", ".join(f"{e} {busy[e]:.1f}%" for e in order))
    for key, label in (
        ("hbm_bytes", "HBM traffic"),
        ("peak_hbm_bytes", "peak HBM"),
        ("weights_bytes", "weights size"),
    ):
        if isinstance(estimates.get(key), int):
            lines.append(f"  {label:<20} {_size(estimates[key])} ({estimates[key]} B)")
    if isinstance(estimates.get("mfu"), (int, float)):
        lines.append(f"  MFU                  {100 * estimates['mfu']:.2f}%")
    if isinstance(estimates.get("flops"), int):
        lines.append(f"  matmul FLOPs         {estimates['flops']}")
    if isinstance(estimates.get("kernels"), int):
        lines.append(f"  kernels              {estimates['kernels']}")
    for key in sorted(set(estimates) - known):
        lines.append(f"  {key[:20]:<20} {_brief(estimates[key])}")
    return lines


def _schedule_lines(data: bytes, limit: int | None) -> list[str]:
    """The kernels of ``sg00/schedule.json``: engine, bound, times, bytes, SBUF, ops."""
    schedule = load_schedule(data)
    kernels = list(schedule.get("kernels", []))
    lines = [
        f"schedule ({SCHEDULE_PATH}): {len(kernels)} kernels, "
        f"{schedule.get('latency_us', 0.0):.3f} us",
        f"  {'kernel':<24} {'engine':<8} {'bound':<8} {'start us':>10} {'time us':>9} "
        f"{'cycles':>9} {'bytes in':>11} {'bytes out':>11} {'SBUF':>9}  ops",
    ]
    kernels.sort(key=lambda k: (k.get("start_us", 0.0), k.get("id", 0)))
    shown = kernels if limit is None else kernels[:limit]
    for k in shown:
        engine = k.get("engine", "?")
        cycles = k.get("engine_cycles", {}).get(engine, "-")
        start, end = k.get("start_us", 0.0), k.get("end_us", 0.0)
        ops = k.get("ops", [])
        op_text = ", ".join(sorted({o.split(".", 1)[-1] for o in ops}))
        lines.append(
            f"  {str(k.get('name', '?'))[:24]:<24} {engine:<8} {k.get('bound', '?'):<8} "
            f"{start:>10.3f} {end - start:>9.3f} {cycles:>9} {k.get('bytes_in', 0):>11} "
            f"{k.get('bytes_out', 0):>11} {k.get('sbuf_bytes', 0):>9}  "
            f"{len(ops)}: {op_text[:60]}"
        )
    if len(kernels) > len(shown):
        hidden = len(kernels) - len(shown)
        lines.append(f"  ... {hidden} more kernels (neuronc inspect --kernels all)")
    return lines


def describe(neff: Neff, max_kernels: int | None = 30) -> str:
    """Header fields, sections with sizes, signature, weights, versions and target; with
    the cost model's estimates and schedule (at most ``max_kernels`` rows) when present.

    Raises ``NeffError`` when ``neff`` holds something the reader would refuse.
    """
    if max_kernels is not None and max_kernels < 0:
        raise ValueError(f"max_kernels must be None or at least 0, got {max_kernels}")
    header, members = _header_of(neff)
    # The stored form, as checked (tuples and numpy scalars normalised).
    manifest = parse_json(members[MANIFEST_PATH], MANIFEST_PATH)
    definition = parse_json(members[DEFINITION_PATH], DEFINITION_PATH)
    sections = {path: len(data) for path, data in members.items()}
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
    if versions:
        lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    if "pipeline" in manifest:
        lines.append(f"pipeline: {manifest['pipeline']}")
    if "source_hash" in manifest:
        lines.append(f"source_hash: {manifest['source_hash']}")
    if "dynamic" in manifest:
        lines.extend(_dynamic_lines(manifest["dynamic"]))
    else:
        lines.append("signature:")
        for role in ("inputs", "outputs"):
            specs = manifest["signature"][role]
            lines.append(f"  {role + ':':<9}" + (", ".join(map(_tensor_type, specs)) or "-"))
    checks = manifest.get("checks")
    if checks:
        lines.append("run-time checks (output: error raised when false):")
        for check in checks:
            lines.append(f"  output {check['output']}: {check['error']}: {check['message']}")
    estimates = manifest.get("estimates")
    if estimates:
        lines.extend(_estimate_lines(estimates, manifest))
    memory_plan = definition.get("memory_plan")
    if memory_plan is not None and "peak_hbm_bytes" in memory_plan:
        parts = [
            f"{label} {_size(memory_plan[key])}"
            for key, label in (
                ("program_bytes", "program"),
                ("weights_bytes", "weights"),
                ("inputs_bytes", "inputs"),
                ("outputs_bytes", "outputs"),
                ("temporaries_bytes", "temporaries"),
            )
            if key in memory_plan
        ]
        lines.append(
            f"memory plan (sg00/def.json): peak HBM {_size(memory_plan['peak_hbm_bytes'])} = "
            + " + ".join(parts)
        )
    if SCHEDULE_PATH in members:
        lines.extend(_schedule_lines(members[SCHEDULE_PATH], max_kernels))
    lines.append("sections:")
    width = max(len(path) for path in sections)
    program_kind = (
        "MLIR bytecode"
        if bytes(neff.program[:4]) == b"ML\xefR"
        else "StableHLO text"
        if "dynamic" in manifest
        else "not MLIR bytecode"
    )
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
