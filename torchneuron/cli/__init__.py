"""``neuronc``: compile, inspect and run NEFFs from the command line.

neuronc compile model.pt2 -o model.neff --target trn2
neuronc compile model.pt2 --emit stablehlo
neuronc compile model.pt2 -o m.neff --dump-dir dump/ --passes "canonicalize,cse" --print-ir-after-all
neuronc compile --from stablehlo dump/m.stablehlo.mlir -o m.neff --weights dump/m.neff  # re-enter
neuronc inspect model.neff
neuronc run model.neff --input x=input.npy --output-dir out/
neuronc estimate dynamic.neff --shape x=4x1000   # a dynamic program priced at one shape
neuronc profile model.neff -o trace.json      # Perfetto/Chrome trace, one lane per engine
neuronc estimate model.pt2 --target trn2 --target trn3   # side by side, no NEFF written
neuronc plan gpt --batch 16 --dp 2 --fsdp 8 --tp 4   # a parallel training step, per core
neuronc cache info                            # the disk cache: NEFFs and XLA executables
neuronc cache prune --max-size 2G             # drop the least recently used entries
neuronc golden update model.pt2 --dir goldens/model   # write normalized IR of each stage
neuronc golden check  model.pt2 --dir goldens/model   # exit 1 with a diff if it changed
neuronc bisect model.pt2 --repro-dir repro/   # device vs CPU; the first node that differs

Every failure is one line on stderr, ``neuronc: error: <what and where>``, never a
traceback; files are written atomically (cli/files.py), so a failed command leaves
nothing behind. Exit statuses: 0 success; 1 a failure (or a golden check that differs);
2 a bad command line; 70 an internal error (a bug: the line says how to report it);
130 interrupted (Ctrl-C); 141 the reader of stdout went away (``neuronc inspect x.neff |
head``), which ends the command quietly, with the status a shell reports for a tool that
SIGPIPE ended.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchneuron.errors import TorchNeuronError, one_line
from torchneuron.target.hardware import CHIPS

from .bisect import add_bisect_arguments, bisect_command
from .cache import add_cache_arguments, cache_command
from .estimate import estimate_command
from .files import (
    FileProblem,
    atomic_write,
    check_output_file,
    describe_os_error,
    output_folder,
)
from .passes import check_pipeline
from .plan import add_plan_arguments, plan_command
from .run import profile_command, run_command, use_chip_of
from .usage import UsageError

__all__ = ["main", "use_chip_of"]

TARGETS = tuple(CHIPS)  # as compilation.TARGETS, without importing the compiler


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as a ``UsageError`` (one line, no usage dump).

    ``add_arguments`` (a function of the parser) adds a command's arguments when that
    command is parsed (its ``--help`` included), not when the parser is built: the compile
    command's come from the stage table, whose module imports torch-mlir and torch, which
    ``neuronc --help`` and ``neuronc inspect`` do not need.
    """

    def __init__(self, *args, add_arguments: Callable[[_Parser], None] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._add_arguments = add_arguments

    def parse_known_args(self, args=None, namespace=None):
        if self._add_arguments is not None:
            add, self._add_arguments = self._add_arguments, None
            add(self)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        raise UsageError(message)


# Where an internal error (a bug) asks to be reported.
REPORT_BUG = "please report it with the command line and the output of `neuronc --traceback ...`"
INTERNAL_ERROR_STATUS = 70  # EX_SOFTWARE of sysexits.h
INTERRUPTED_STATUS = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
CLOSED_PIPE_STATUS = 141  # 128 + SIGPIPE, as a shell reports `yes | head -1`'s yes


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one ``neuronc: error:`` line, never a traceback."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # inside the guard, so a closed pipe is met here
        return status
    except BrokenPipeError:
        # Python would report the unflushed output at exit ("Exception ignored ...");
        # what is left goes nowhere instead.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return CLOSED_PIPE_STATUS


def _main(argv: list[str] | None) -> int:
    args = None
    try:
        args = _parser().parse_args(argv)
        return args.handler(args)
    except UsageError as error:
        return _fail(error, 2)
    except BrokenPipeError:
        raise
    except OSError as error:
        # Files the command opens or writes that no check above caught.
        where = f"{error.filename}: " if error.filename is not None else ""
        return _fail(f"{where}{describe_os_error(error)}", 1)
    except TorchNeuronError as error:
        return _fail(error, 1)
    except MemoryError:
        return _fail("out of host memory (MemoryError); the input is too big for this machine", 1)
    except RecursionError:
        return _fail("input nested too deeply for this process (RecursionError)", 1)
    except KeyboardInterrupt:
        return _fail("interrupted", INTERRUPTED_STATUS)
    except Exception as error:
        if args is not None and args.traceback:
            raise
        return _fail(
            f"internal error ({type(error).__name__}: {one_line(error)}); {REPORT_BUG}",
            INTERNAL_ERROR_STATUS,
        )


def _fail(error: BaseException | str, status: int) -> int:
    text = one_line(error) if isinstance(error, BaseException) else " ".join(error.split())
    # A stderr that is closed too leaves nothing to tell; the status still says it.
    with contextlib.suppress(OSError, ValueError):
        print(f"neuronc: error: {text}", file=sys.stderr)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neuronc", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an internal error, show Python's traceback (for a bug report)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    compile_cmd = commands.add_parser(
        "compile",
        help="compile a torch.export program (.pt2), or a stage's artifact (--from)",
        add_arguments=_add_compile_arguments,
    )
    compile_cmd.set_defaults(handler=_compile)

    inspect_cmd = commands.add_parser("inspect", help="describe a NEFF")
    inspect_cmd.add_argument("neff")
    inspect_cmd.add_argument(
        "--kernels",
        default="30",
        metavar="N|all",
        help="schedule rows to show: a count (0: none) or all (default 30)",
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
    profile_cmd.set_defaults(handler=profile_command)

    estimate_cmd = commands.add_parser(
        "estimate", help="estimate latency, MFU and HBM of a program on one or more targets"
    )
    estimate_cmd.add_argument(
        "program", help="a program saved with torch.export.save, or a dynamic NEFF"
    )
    estimate_cmd.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=AxB",
        help="for a program with symbolic dimensions: an input's concrete shape "
        "(repeat per input; NAME= may be left out for a program of one input)",
    )
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

    plan_cmd = commands.add_parser(
        "plan",
        help="estimate a training step of a parallel layout (DP/FSDP/TP): compute, "
        "communication, overlap and peak HBM per core",
    )
    add_plan_arguments(plan_cmd)
    plan_cmd.set_defaults(handler=plan_command)

    cache_cmd = commands.add_parser(
        "cache", help="see and bound the disk cache of NEFFs and XLA executables"
    )
    add_cache_arguments(cache_cmd)
    cache_cmd.set_defaults(handler=cache_command)

    bisect_cmd = commands.add_parser(
        "bisect",
        help="run a program on the device and the CPU; name the first node that differs",
    )
    add_bisect_arguments(bisect_cmd)
    bisect_cmd.set_defaults(handler=bisect_command)

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
    run_cmd.set_defaults(handler=run_command)

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


def _add_compile_arguments(command: argparse.ArgumentParser) -> None:
    """The ``neuronc compile`` arguments on ``command``: ``--from``, ``--emit`` and
    ``--dump-dir`` name the stage table's stages and files."""
    from torchneuron.compiler.stages import BY_NAME, REENTERABLE, STAGES

    command.add_argument(
        "program", help="a program saved with torch.export.save, or the --from stage's artifact"
    )
    command.add_argument("-o", "--output", help="where to write the NEFF")
    command.add_argument("--target", choices=TARGETS, default="trn2")
    command.add_argument(
        "--from",
        dest="from_stage",
        choices=REENTERABLE,
        help="PROGRAM is this stage's artifact (MLIR text, e.g. from --dump-dir); "
        "compile it onward",
    )
    command.add_argument(
        "--weights",
        metavar="NEFF",
        help="with --from: a NEFF of the same program (the dump's <name>.neff) that holds "
        "the weights' data and the names of arguments and outputs",
    )
    command.add_argument("--emit", choices=STAGES[:-1], help="print this stage's artifact and stop")
    command.add_argument(
        "--dump-dir",
        help="write every stage's artifact as <name>."
        + "|".join(dict.fromkeys(BY_NAME[s].suffix for s in STAGES)),
    )
    command.add_argument("--passes", help="pass pipeline (default: the -O pipeline)")
    command.add_argument(
        "--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr"
    )
    command.add_argument("--name", help="program name (default: the file's stem)")


def _compile(args) -> int:
    if args.emit is None and args.output is None:
        raise UsageError("compile needs -o/--output or --emit STAGE")
    if args.weights and not args.from_stage:
        raise UsageError("--weights goes with --from (a .pt2 program holds its weights)")
    if args.emit and args.output:
        raise UsageError("--emit stops before the NEFF stage; drop -o or --emit")
    check_pipeline(args.passes)
    if args.output:
        check_output_file(args.output, "-o")
    if args.dump_dir:
        output_folder(args.dump_dir, "--dump-dir")
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
        atomic_write(args.output, compiled.neff, "-o")
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
    if graph.symbolic_inputs():
        return _compile_dynamic(args, options, graph, program_path)
    return compile_graph(
        graph.graph_module,
        name=args.name or program_path.stem,
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        use_cache=False,
        **options,
    )


@dataclass
class _DynamicCompiled:
    """What ``neuronc compile`` of a program with symbolic dimensions gives: one NEFF
    holding the dynamic program, and its StableHLO text (``--emit stablehlo``)."""

    neff: bytes | None
    artifacts: dict[str, str]


def _compile_dynamic(args, options: dict, graph, program_path: Path) -> _DynamicCompiled:
    """A .pt2 exported with ``Dim``s: its front half compiled once, stored in one NEFF."""
    from torchneuron.compiler.dynamic import compile_dynamic_graph

    if args.emit not in (None, "stablehlo") or args.print_ir_after_all:
        raise UsageError(
            f"{program_path} has symbolic dimensions ({', '.join(graph.symbolic_inputs())}): "
            "it compiles to one dynamic NEFF; --emit takes only stablehlo for it, and "
            "--print-ir-after-all is not supported"
        )
    program, _ = compile_dynamic_graph(
        graph.graph_module,
        name=args.name or program_path.stem,
        target=options["target"],
        pipeline=options["pipeline"],
        weights=graph.weights,
        weight_sources=graph.weight_sources,
        output_names=graph.output_names,
        dump_dir=options["dump_dir"],
    )
    neff = program.to_neff() if args.output else None
    if args.output:
        symbols = ", ".join(
            f"{name} in [{low}, {'inf' if high is None else high}]"
            for name, (low, high) in program.signature.symbols.items()
        )
        print(f"dynamic program: {symbols}", file=sys.stderr)
    return _DynamicCompiled(neff, {"stablehlo": program.text})


def _compile_artifact(args, options: dict):
    from torchneuron.compiler.pipeline import compile_artifact, inputs_from_neff
    from torchneuron.compiler.stages import BY_NAME
    from torchneuron.neff import read_neff

    path = Path(args.program)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not MLIR text (--from {args.from_stage})") from None
    except OSError as error:
        raise FileProblem(f"{path}: cannot read ({describe_os_error(error)})") from None
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
    elif re.fullmatch(r"[0-9]+", args.kernels):  # 0: no rows, only the summary
        # (a count past any schedule is all of it; int() refuses 4,300 digits and more)
        limit = int(args.kernels) if len(args.kernels) <= 18 else None
    else:
        raise UsageError(f"--kernels {args.kernels!r}: expected a count (0 or more) or 'all'")
    print(describe(read_neff(args.neff), max_kernels=limit))
    return 0


def _golden(args) -> int:
    from torchneuron import golden

    check_pipeline(args.passes)
    if args.golden_action == "update":
        output_folder(args.dir, "--dir")
    elif Path(args.dir).exists() and not Path(args.dir).is_dir():
        raise FileProblem(f"--dir {args.dir}: a file, not a folder of goldens")
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


if __name__ == "__main__":
    sys.exit(main())
