"""``python -m torchneuron.profiler merge a.json b.json -o all.json``."""

from __future__ import annotations

import argparse

from torchneuron.profiler.trace import merge_traces


def main(argv: list[str] | None = None) -> int:
    """``python -m torchneuron.profiler merge a.json b.json -o all.json``."""
    parser = argparse.ArgumentParser(prog="python -m torchneuron.profiler")
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="merge per-rank Chrome traces into one file")
    merge.add_argument("traces", nargs="+", help="trace files written by export_chrome_trace")
    merge.add_argument("-o", "--output", required=True, help="the merged trace to write")
    args = parser.parse_args(argv)
    result = merge_traces(args.traces, args.output)
    print(f"{args.output}: {len(args.traces)} traces, {len(result['traceEvents'])} events")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
