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

    from torchneuron.compiler.pipeline import logical_core_size
    from torchneuron.estimate.cost_model import estimate_text
    from torchneuron.target.topology import hbm_bytes_per_core

    targets = args.target or ["trn2"]
    if len(set(targets)) != len(targets):
        raise UsageError(f"--target given twice: {', '.join(targets)}")
    check_pipeline(args.passes)
    program_path = Path(args.program)
    start = time.perf_counter()
    optimized = _optimized_program(args, program_path, targets[0])
    compile_seconds = time.perf_counter() - start
    columns = {}
    for target in targets:
        lnc = args.lnc or logical_core_size(target)
        start = time.perf_counter()
        schedule = estimate_text(optimized, target, lnc)
        seconds = time.perf_counter() - start
        capacity = hbm_bytes_per_core(target, lnc)
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


def _optimized_program(args, program_path: Path, target: str) -> str:
    """The optimized program to price: a static .pt2 compiled as it is; a program with
    symbolic dimensions (a .pt2 exported with ``Dim``s, or a dynamic NEFF) specialized
    to ``--shape`` first."""
    from torchneuron.compiler.dynamic import DynamicProgram, compile_dynamic_graph
    from torchneuron.compiler.exported import exported_graph, load_exported_program
    from torchneuron.compiler.pipeline import compile_graph

    name = args.name or program_path.stem
    if _is_neff(program_path):
        from torchneuron.neff import read_neff

        neff = read_neff(program_path)
        if "dynamic" not in neff.manifest:
            raise UsageError(
                f"{program_path}: a static NEFF; its estimate is in `neuronc inspect`, "
                "estimate takes a .pt2 or a dynamic NEFF"
            )
        program = DynamicProgram.from_neff(neff, target=target, where=str(program_path))
        if args.passes:
            program.pipeline = args.passes
        return program.optimized(_shapes(args.shape, program, program_path), target)
    graph = exported_graph(load_exported_program(program_path))
    if graph.symbolic_inputs():
        program, _ = compile_dynamic_graph(
            graph.graph_module,
            name=name,
            target=target,
            pipeline=args.passes,
            weights=graph.weights,
            weight_sources=graph.weight_sources,
            output_names=graph.output_names,
        )
        return program.optimized(_shapes(args.shape, program, program_path), target)
    if args.shape:
        raise UsageError(f"--shape: {program_path} has static shapes; drop --shape")
    compiled = compile_graph(
        graph.graph_module,
        name=name,
        target=target,
        pipeline=args.passes,
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        stop_after="optimized",
        use_cache=False,
    )
    return compiled.artifacts["optimized"]


def _is_neff(path: Path) -> bool:
    """Whether ``path`` starts like a NEFF (its header_size field says 1024); a .pt2 is a
    zip archive, which never does."""
    from torchneuron.neff import HEADER_SIZE

    try:
        with open(path, "rb") as file:
            head = file.read(16)
    except OSError:
        return False  # the .pt2 loader says what is wrong with the path
    return len(head) == 16 and int.from_bytes(head[8:16], "little") == HEADER_SIZE


def _shapes(given: list[str], program, program_path: Path) -> list[tuple[int, ...]]:
    """``--shape`` arguments -> one concrete shape per input of the dynamic program,
    checked against its signature (one-line errors naming the input and dimension)."""
    import re

    inputs = program.signature.inputs
    described = "; ".join(
        f"{spec['name']}: {spec['dtype']}[{', '.join(map(str, spec['shape']))}]" for spec in inputs
    )
    symbols = ", ".join(
        f"{n} in [{lo}, {'inf' if hi is None else hi}]"
        for n, (lo, hi) in program.signature.symbols.items()
    )
    if not given:
        example = (
            inputs[0]["name"]
            + "="
            + "x".join(str(d) if isinstance(d, int) else "N" for d in inputs[0]["shape"])
        )
        raise UsageError(
            f"{program_path} has symbolic dimensions ({described}; {symbols}): give each "
            f"input's concrete shape, e.g. --shape {example}"
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for item in given:
        name, sep, dims = item.rpartition("=")
        if not sep:
            if len(inputs) != 1:
                raise UsageError(
                    f"--shape {item!r}: give NAME=AxB (the program has several inputs)"
                )
            name = inputs[0]["name"]
        if not re.fullmatch(r"[0-9]{1,12}(x[0-9]{1,12}){0,15}|", dims):
            raise UsageError(f"--shape {item!r}: expected NAME=AxBx... with sizes in digits")
        if name in shapes:
            raise UsageError(f"--shape {name} given twice")
        shapes[name] = tuple(int(d) for d in dims.split("x")) if dims else ()
    names = [spec["name"] for spec in inputs]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise UsageError(f"--shape {', '.join(unknown)}: no such input; inputs: {described}")
    missing = [n for n in names if n not in shapes]
    if missing:
        raise UsageError(f"--shape missing for {', '.join(missing)} ({described})")
    result = [shapes[n] for n in names]
    program.signature.bind(result)  # ShapeConstraintError: one line naming input and rule
    return result


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
