"""``python -m torchneuron.passes``: run a pass pipeline over an .mlir file and print the result.

This is also the command a PassError prints to reproduce a failing pass::

    python -m torchneuron.passes --pipeline fold-constants /tmp/.../03-fold-constants.mlir
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from torch_mlir import ir

from torchneuron.passes import (
    DEFAULT_PIPELINE,
    PassContext,
    PassError,
    PassManager,
    get_pass,
    list_passes,
    parse_module,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torchneuron.passes",
        description="Run a torchneuron pass pipeline over an MLIR file and print the resulting IR.",
    )
    parser.add_argument("input", nargs="?", help="input .mlir file ('-' for stdin)")
    parser.add_argument(
        "--pipeline",
        default=DEFAULT_PIPELINE,
        help=f"comma-separated passes (default: {DEFAULT_PIPELINE})",
    )
    parser.add_argument("-o", "--output", help="write the IR here instead of stdout")
    parser.add_argument(
        "--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr"
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="do not verify the IR after every pass"
    )
    parser.add_argument("--repro-dir", help="where to write the input IR of a failing pass")
    parser.add_argument("--weights-dir", help="save externalized weights here as <name>.npy")
    parser.add_argument(
        "--timings", action="store_true", help="print per-pass times and counters to stderr"
    )
    parser.add_argument(
        "--list-passes", action="store_true", help="list the registered passes and exit"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_passes:
        for name in list_passes():
            doc = (get_pass(name).__doc__ or "").strip().splitlines()
            print(f"{name:40s} {doc[0] if doc else ''}")
        return 0
    if args.input is None:
        _parser().error("an input file is required")
    text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    try:
        module = parse_module(text)
    except ir.MLIRError as error:
        print(f"error: cannot parse {args.input}: {error}", file=sys.stderr)
        return 1
    ctx = PassContext()
    try:
        manager = PassManager.from_pipeline(
            args.pipeline,
            verify=not args.no_verify,
            print_ir_after_all=args.print_ir_after_all,
            ir_stream=sys.stderr,
            repro_dir=args.repro_dir,
        )
        report = manager.run(module, ctx)
    except PassError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.timings:
        print(report.summary(), file=sys.stderr)
    if args.weights_dir:
        directory = Path(args.weights_dir)
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in ctx.weights.items():
            np.save(directory / f"{name}.npy", data)
    if args.output:
        Path(args.output).write_text(f"{module}\n")
    else:
        print(module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
