"""``neuronc estimate``: latency, MFU and HBM of a program on one or more targets, side by side.

The program is lowered and optimized once; the cost model then estimates it for every
``--target`` (no NEFF is written).
"""

from __future__ import annotations

from pathlib import Path

from .passes import check_pipeline
from .usage import UsageError


def estimate_command(args) -> int:
    import json
    import time

    from torchneuron.compiler.exported import exported_graph, load_exported_program
    from torchneuron.compiler.pipeline import compile_graph, logical_core_size
    from torchneuron.estimate.cost_model import estimate_text
    from torchneuron.target import hardware

    targets = args.target or ["trn2"]
    if len(set(targets)) != len(targets):
        raise UsageError(f"--target given twice: {', '.join(targets)}")
    check_pipeline(args.passes)
    program_path = Path(args.program)
    graph = exported_graph(load_exported_program(program_path))
    start = time.perf_counter()
    # Everything up to the optimized program is the same for every target.
    compiled = compile_graph(
        graph.graph_module,
        name=args.name or program_path.stem,
        target=targets[0],
        pipeline=args.passes,
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        stop_after="optimized",
        use_cache=False,
    )
    compile_seconds = time.perf_counter() - start
    columns = {}
    for target in targets:
        lnc = args.lnc or logical_core_size(target)
        start = time.perf_counter()
        schedule = estimate_text(compiled.artifacts["optimized"], target, lnc)
        seconds = time.perf_counter() - start
        capacity = hardware.chip(target).hbm_bytes_per_logical_core(lnc)
        columns[target] = {
            **schedule.summary(),
            "lnc": lnc,
            "hbm_capacity_bytes": capacity,
            "fits": schedule.memory.peak_hbm_bytes <= capacity,
            "estimate_seconds": round(seconds, 4),
        }
    if args.json:
        report = {
            "program": str(program_path),
            "compile_seconds": round(compile_seconds, 3),
            "targets": columns,
        }
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    print(_estimate_table(columns))
    print(
        f"(lowering and passes {compile_seconds:.2f} s; estimates from the cost model, "
        "not measurements; peak HBM excludes the serialized program)"
    )
    return 0


def _estimate_table(columns: dict[str, dict]) -> str:
    from torchneuron.runtime.memory import format_bytes
    from torchneuron.target.engines import ENGINES

    def latency(c):
        return f"{c['latency_us']:.3f} us"

    rows = [
        ("logical core", lambda c: f"LNC={c['lnc']}"),
        ("estimated latency", latency),
        ("MFU", lambda c: f"{100 * c['mfu']:.1f}%"),
        *[
            (f"{engine} busy", lambda c, e=engine: f"{c['engine_busy_percent'].get(e, 0.0):.1f}%")
            for engine in ENGINES
        ],
        ("HBM traffic", lambda c: format_bytes(c["hbm_bytes"])),
        ("peak HBM", lambda c: format_bytes(c["peak_hbm_bytes"])),
        ("HBM per core", lambda c: format_bytes(c["hbm_capacity_bytes"])),
        ("fits", lambda c: "yes" if c["fits"] else "NO"),
        ("weights", lambda c: format_bytes(c["weights_bytes"])),
        ("matmul FLOPs", lambda c: f"{c['flops']:.3e}"),
        ("kernels", lambda c: str(c["kernels"])),
        ("estimate took", lambda c: f"{c['estimate_seconds'] * 1e3:.1f} ms"),
    ]
    names = list(columns)
    label_width = max(len(label) for label, _ in rows)
    cells = [[render(columns[name]) for name in names] for _, render in rows]
    widths = [max(len(name), *(len(row[i]) for row in cells)) for i, name in enumerate(names)]
    lines = [f"{'':<{label_width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths))]
    for (label, _), row in zip(rows, cells):
        values = "  ".join(f"{v:>{w}}" for v, w in zip(row, widths))
        lines.append(f"{label:<{label_width}}  {values}")
    return "\n".join(lines)
