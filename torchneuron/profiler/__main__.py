"""The profiler's command line: merge per-rank traces, open a torch.profiler trace.

    python -m torchneuron.profiler merge a.json b.json -o all.json
    python -m torchneuron.profiler table trace.json          # per NEFF, as profile.table()
    python -m torchneuron.profiler lanes trace.json -o lanes.json   # per-core engine lanes

``table`` and ``lanes`` read a trace ``torch.profiler``'s ``export_chrome_trace`` wrote
(``torch_trace.open_torch_trace``). A file that cannot be read or written is one line on
stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import sys

from torchneuron.errors import TorchNeuronError, describe_error, one_line
from torchneuron.files import FileProblem, atomic_write, check_output_file, describe_os_error
from torchneuron.profiler.torch_trace import open_torch_trace
from torchneuron.profiler.trace import merge_traces


def _merge(args: argparse.Namespace) -> None:
    check_output_file(args.output, "-o")
    try:
        result = merge_traces(args.traces, args.output)
    except OSError as error:
        shown = error.filename if error.filename is not None else args.output
        raise FileProblem(f"{shown}: cannot merge ({describe_os_error(error)})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # a malformed trace
        raise FileProblem(f"cannot merge: {describe_error(error)}") from None
    print(f"{args.output}: {len(args.traces)} traces, {len(result['traceEvents'])} events")


def _table(args: argparse.Namespace) -> None:
    print(open_torch_trace(args.trace).table(row_limit=args.row_limit))


def _lanes(args: argparse.Namespace) -> None:
    check_output_file(args.output, "-o")
    opened = open_torch_trace(args.trace)
    atomic_write(args.output, opened.chrome_trace_text(), "-o")
    print(
        f"{args.output}: {len(opened.executions)} executions, {len(opened.collectives)} "
        "collectives; open it in https://ui.perfetto.dev"
    )


def _row_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m torchneuron.profiler")
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="merge per-rank Chrome traces into one file")
    merge.add_argument("traces", nargs="+", help="trace files written by export_chrome_trace")
    merge.add_argument("-o", "--output", required=True, help="the merged trace to write")
    merge.set_defaults(run=_merge)
    table = commands.add_parser(
        "table", help="per-NEFF table of a torch.profiler trace's neuron device events"
    )
    table.add_argument("trace", help="a trace torch.profiler's export_chrome_trace wrote")
    table.add_argument("--row-limit", type=_row_limit, default=None, help="rows to show (all)")
    table.set_defaults(run=_table)
    lanes = commands.add_parser(
        "lanes", help="a torch.profiler trace's neuron events as per-core engine lanes"
    )
    lanes.add_argument("trace", help="a trace torch.profiler's export_chrome_trace wrote")
    lanes.add_argument("-o", "--output", required=True, help="the Chrome trace to write")
    lanes.set_defaults(run=_lanes)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; 1 with a one-line message when a file cannot be read or written."""
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except TorchNeuronError as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
