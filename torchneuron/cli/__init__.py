"""``neuronc``: compile, inspect and run NEFFs from the command line.

neuronc compile model.pt2 -o model.neff --target trn2
neuronc compile model.pt2 --emit stablehlo
neuronc compile model.pt2 -o m.neff --dump-dir dump/ --passes "canonicalize,cse" --print-ir-after-all
neuronc compile --from stablehlo dump/m.stablehlo.mlir -o m.neff --weights dump/m.neff  # re-enter
neuronc inspect model.neff
neuronc run model.neff --input x=input.npy --output-dir out/
neuronc profile model.neff -o trace.json      # Perfetto/Chrome trace, one lane per engine
neuronc estimate model.pt2 --target trn2 --target trn3   # side by side, no NEFF written
neuronc golden update model.pt2 --dir goldens/model   # write normalized IR of each stage
neuronc golden check  model.pt2 --dir goldens/model   # exit 1 with a diff if it changed
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from torchneuron.errors import TorchNeuronError, one_line

from .estimate import estimate_command
from .usage import UsageError


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as a ``UsageError`` (one line, no usage dump)."""

    def error(self, message: str):
        raise UsageError(message)


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one ``neuronc: error:`` line, never a traceback."""
    try:
        args = _parser().parse_args(argv)
        return args.handler(args)
    except UsageError as error:
        return _fail(error, 2)
    # OSError: files the command opens or writes; MemoryError: an input too big for the host.
    except (TorchNeuronError, OSError, MemoryError) as error:
        return _fail(error, 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _fail(error: BaseException | str, status: int) -> int:
    text = error if isinstance(error, str) else one_line(error)
    print(f"neuronc: error: {text}", file=sys.stderr)
    return status


def _parser() -> argparse.ArgumentParser:
    from torchneuron.compiler.pipeline import TARGETS
    from torchneuron.compiler.stages import BY_NAME, REENTERABLE, STAGES

    parser = _Parser(prog="neuronc", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    compile_cmd = commands.add_parser(
        "compile", help="compile a torch.export program (.pt2), or a stage's artifact (--from)"
    )
    compile_cmd.add_argument(
        "program", help="a program saved with torch.export.save, or the --from stage's artifact"
    )
    compile_cmd.add_argument("-o", "--output", help="where to write the NEFF")
    compile_cmd.add_argument("--target", choices=TARGETS, default="trn2")
    compile_cmd.add_argument(
        "--from",
        dest="from_stage",
        choices=REENTERABLE,
        help="PROGRAM is this stage's artifact (MLIR text, e.g. from --dump-dir); "
        "compile it onward",
    )
    compile_cmd.add_argument(
        "--weights",
        metavar="NEFF",
        help="with --from: a NEFF of the same program (the dump's <name>.neff) that holds "
        "the weights' data and the names of arguments and outputs",
    )
    compile_cmd.add_argument(
        "--emit", choices=STAGES[:-1], help="print this stage's artifact and stop"
    )
    compile_cmd.add_argument(
        "--dump-dir",
        help="write every stage's artifact as <name>."
        + "|".join(dict.fromkeys(BY_NAME[s].suffix for s in STAGES)),
    )
    compile_cmd.add_argument("--passes", help="pass pipeline (default: the -O pipeline)")
    compile_cmd.add_argument(
        "--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr"
    )
    compile_cmd.add_argument("--name", help="program name (default: the file's stem)")
    compile_cmd.set_defaults(handler=_compile)

    inspect_cmd = commands.add_parser("inspect", help="describe a NEFF")
    inspect_cmd.add_argument("neff")
    inspect_cmd.add_argument(
        "--kernels", default="30", metavar="N|all", help="schedule rows to show (default 30)"
    )
    inspect_cmd.set_defaults(handler=_inspect)

    profile_cmd = commands.add_parser(
        "profile", help="execute a NEFF under the profiler; write a Chrome/Perfetto trace"
    )
    profile_cmd.add_argument("neff")
    profile_cmd.add_argument("-o", "--output", help="where to write the trace (JSON)")
    profile_cmd.add_argument("--iterations", type=int, default=1, help="executions (default 1)")
    profile_cmd.add_argument(
        "--execute",
        action="store_true",
        help="compute numbers with XLA (default: the null executor, "
        "timing and memory only) on zero inputs",
    )
    profile_cmd.add_argument("--core", type=int, default=0, help="logical NeuronCore index")
    profile_cmd.add_argument(
        "--group-by",
        choices=("kernel", "neff"),
        default="kernel",
        help="rows of the printed table (default: kernel)",
    )
    profile_cmd.set_defaults(handler=_profile)

    estimate_cmd = commands.add_parser(
        "estimate", help="estimate latency, MFU and HBM of a program on one or more targets"
    )
    estimate_cmd.add_argument("program", help="a program saved with torch.export.save")
    estimate_cmd.add_argument(
        "--target",
        action="append",
        choices=TARGETS,
        help="a target chip (repeat to compare; default trn2)",
    )
    estimate_cmd.add_argument(
        "--lnc", type=int, choices=(1, 2), help="logical NeuronCore size (default: each target's)"
    )
    estimate_cmd.add_argument("--passes", help="pass pipeline (default: the -O pipeline)")
    estimate_cmd.add_argument("--name", help="program name (default: the file's stem)")
    estimate_cmd.add_argument("--json", action="store_true", help="print the figures as JSON")
    estimate_cmd.set_defaults(handler=estimate_command)

    run_cmd = commands.add_parser("run", help="run a NEFF on an emulated NeuronCore")
    run_cmd.add_argument("neff")
    run_cmd.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input as a .npy file, by name or (FILE.npy alone) in order; repeat per input",
    )
    run_cmd.add_argument("--output-dir", help="write each output as <name>.npy here")
    run_cmd.add_argument("--core", type=int, default=0, help="logical NeuronCore index")
    run_cmd.set_defaults(handler=_run)

    golden_cmd = commands.add_parser(
        "golden", help="golden-IR checks: has the compiled program changed?"
    )
    golden_actions = golden_cmd.add_subparsers(dest="golden_action", required=True)
    for action, help_text in (
        ("update", "write (or refresh) the goldens and print what changed"),
        ("check", "compare with the goldens; exit 1 with a unified diff per changed stage"),
    ):
        golden_action = golden_actions.add_parser(action, help=help_text)
        golden_action.add_argument("program", help="a program saved with torch.export.save")
        golden_action.add_argument("--dir", required=True, help="the golden folder")
        golden_action.add_argument("--target", choices=TARGETS, default="trn2")
        golden_action.add_argument("--passes", help="pass pipeline (default: the -O pipeline)")
        golden_action.add_argument("--name", help="program name (default: the file's stem)")
        golden_action.add_argument(
            "--weight-digests",
            action="store_true",
            help="also record a sha256 of every weight's data",
        )
        golden_action.set_defaults(handler=_golden)
    return parser


def _compile(args) -> int:
    if args.emit is None and args.output is None:
        raise UsageError("compile needs -o/--output or --emit STAGE")
    if args.weights and not args.from_stage:
        raise UsageError("--weights goes with --from (a .pt2 program holds its weights)")
    options = {
        "target": args.target,
        "pipeline": args.passes,
        "stop_after": args.emit or "neff",
        "dump_dir": args.dump_dir,
        "print_ir_after_all": args.print_ir_after_all,
    }
    compiled = (
        _compile_artifact(args, options) if args.from_stage else _compile_program(args, options)
    )
    if args.emit:
        sys.stdout.write(compiled.artifacts[args.emit])
        if not compiled.artifacts[args.emit].endswith("\n"):
            sys.stdout.write("\n")
    if args.output:
        if compiled.neff is None:
            raise UsageError("--emit stops before the NEFF stage; drop -o or --emit")
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(Path(args.output), compiled.neff)
        print(
            f"wrote {args.output} ({len(compiled.neff)} bytes, target {args.target})",
            file=sys.stderr,
        )
    return 0


def _compile_program(args, options: dict):
    from torchneuron.compiler.exported import exported_graph, load_exported_program
    from torchneuron.compiler.pipeline import compile_graph

    program_path = Path(args.program)
    graph = exported_graph(load_exported_program(program_path))
    return compile_graph(
        graph.graph_module,
        name=args.name or program_path.stem,
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        use_cache=False,
        **options,
    )


def _compile_artifact(args, options: dict):
    from torchneuron.compiler.pipeline import compile_artifact, inputs_from_neff
    from torchneuron.compiler.stages import BY_NAME
    from torchneuron.neff import read_neff

    path = Path(args.program)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not MLIR text (--from {args.from_stage})") from None
    # The dump's own name: mlp.stablehlo.mlir -> mlp.
    name = args.name or path.name.removesuffix(f".{BY_NAME[args.from_stage].suffix}")
    if name == path.name:
        name = path.stem
    given = inputs_from_neff(read_neff(args.weights)) if args.weights else {}
    return compile_artifact(text, args.from_stage, where=str(path), name=name, **given, **options)


def _inspect(args) -> int:
    from torchneuron.neff import describe, read_neff

    if args.kernels == "all":
        limit = None
    else:
        try:
            limit = int(args.kernels)
        except ValueError:
            raise UsageError(f"--kernels {args.kernels!r}: expected a number or 'all'") from None
    print(describe(read_neff(args.neff), max_kernels=limit))
    return 0


def _profile(args) -> int:
    from torchneuron import profiler
    from torchneuron.compiler import tensors
    from torchneuron.neff import read_neff

    if args.iterations < 1:
        raise UsageError(f"--iterations must be at least 1, got {args.iterations}")
    neff = read_neff(args.neff)
    manifest = neff.manifest
    use_chip_of(manifest)
    from torchneuron.runtime import load_neff

    loaded = load_neff(neff, core=args.core, executor="xla" if args.execute else "null")
    inputs = [
        np.zeros(spec["shape"], tensors.numpy_dtype(spec["dtype"]))
        for spec in manifest.get("signature", {}).get("inputs", [])
    ]
    with profiler.profile() as prof:
        for _ in range(args.iterations):
            loaded.execute(inputs)
    if loaded.schedule is None:
        print(
            f"neuronc: warning: {args.neff} has no schedule; device times are unknown",
            file=sys.stderr,
        )
    print(prof.table(group_by=args.group_by))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(args.output)
        print(f"wrote {args.output} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def use_chip_of(manifest: dict) -> None:
    """Emulate the chip (and LNC) the NEFF was built for, unless the user's environment
    names a chip; the user's own settings keep precedence."""
    from torchneuron import settings
    from torchneuron.target.topology import build_topology, environment, set_topology

    user = environment()
    if "target" not in manifest or settings.TARGET in user:
        return
    values = {settings.TARGET: str(manifest["target"])}
    if "lnc" in manifest:
        values[settings.LNC] = str(manifest["lnc"])
    set_topology(build_topology(values | user))


def _run(args) -> int:
    from torchneuron.compiler import tensors
    from torchneuron.neff import read_neff
    from torchneuron.runtime import load_neff

    neff = read_neff(args.neff)
    inputs = neff.manifest["signature"]["inputs"]
    expected = [spec["name"] for spec in inputs]
    given = {}
    positional = [item for item in args.input if "=" not in item]
    if positional and len(positional) != len(args.input):
        raise UsageError("give every --input as NAME=FILE.npy, or every one as FILE.npy in order")
    if positional:
        if len(positional) > len(expected):
            raise UsageError(
                f"{len(positional)} inputs given; the program takes "
                f"{len(expected)}: {', '.join(expected) or 'none'}"
            )
        given = dict(zip(expected, positional))
    for item in args.input if not positional else ():
        name, _, file = item.partition("=")
        if not name or not file:
            raise UsageError(f"--input {item!r}: expected NAME=FILE.npy")
        if name in given:
            raise UsageError(f"--input {name} given twice")
        given[name] = file
    unknown = sorted(set(given) - set(expected))
    if unknown:
        raise UsageError(
            f"unknown input(s) {', '.join(unknown)}; the program takes: "
            f"{', '.join(expected) or 'no inputs'}"
        )
    missing = [n for n in expected if n not in given]
    if missing:
        raise UsageError(f"missing input(s): {', '.join(missing)} (pass --input NAME=FILE.npy)")
    arrays = []
    for spec in inputs:
        file = given[spec["name"]]
        try:
            array = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"--input {spec['name']}={file}: cannot read .npy file ({exc})"
            ) from None
        expected_dtype = tensors.numpy_dtype(spec["dtype"])
        if array.dtype != expected_dtype:
            raise UsageError(
                f"--input {spec['name']}={file}: dtype {array.dtype}, "
                f"the program expects {spec['dtype']}"
            )
        if list(array.shape) != list(spec["shape"]):
            raise UsageError(
                f"--input {spec['name']}={file}: shape {list(array.shape)}, "
                f"the program expects {spec['shape']}"
            )
        arrays.append(array)
    outputs = load_neff(neff, core=args.core).execute(arrays)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    for spec, value in zip(neff.manifest["signature"]["outputs"], outputs):
        if out_dir:
            np.save(out_dir / f"{spec['name']}.npy", value, allow_pickle=False)
        print(f"{spec['name']}: {spec['dtype']}{spec['shape']}")
        if not out_dir:
            print(
                np.array2string(
                    np.asarray(value, dtype=np.float64) if value.dtype.kind == "V" else value,
                    threshold=20,
                )
            )
    return 0


def _golden(args) -> int:
    from torchneuron import golden

    options = {
        "name": args.name or Path(args.program).stem,
        "target": args.target,
        "pipeline": args.passes,
        "weight_digests": args.weight_digests,
    }
    if args.golden_action == "update":
        result = golden.update(args.program, args.dir, **options)
        print(result.report() if result.written else f"goldens in {args.dir} unchanged")
        return 0
    try:
        result = golden.check(args.program, args.dir, **options)
    except golden.GoldenError as exc:
        raise UsageError(str(exc)) from None
    if result.ok:
        print(result.report())
        return 0
    sys.stdout.write(result.report() + "\n")
    return 1


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
