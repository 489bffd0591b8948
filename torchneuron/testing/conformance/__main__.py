"""``python -m torchneuron.conformance``: run PyTorch's OpInfo entries and report.

    python -m torchneuron.conformance                          # compile+eager x float32+bfloat16
    python -m torchneuron.conformance --mode compile --dtype float32 --check
    python -m torchneuron.conformance --entries 'nn.functional.*,abs' --samples 2
    python -m torchneuron.conformance --mode eager --dtype float32 --update-expectations
    python -m torchneuron.conformance --dtype complex64          # every complex-capable entry
    python -m torchneuron.conformance --dtype sparse_coo.float32 --dtype sparse_csr.float32
    python -m torchneuron.conformance --from-json results.jsonl  # report a saved run

Exit status: 0; 1 with ``--check`` when results contradict the expectations
file (each contradiction is printed); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import sys
import time
from pathlib import Path

from . import expectations as expectations_file
from .opinfo import ALL_DTYPES, DEFAULT_SAMPLES, MODES, Outcome
from .report import format_report

DEFAULT_EXPECTATIONS = expectations_file.DEFAULT_PATH
DEFAULT_DTYPES = ("float32", "bfloat16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchneuron.conformance", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--mode", action="append", choices=MODES, help="compile and/or eager (default: both)"
    )
    parser.add_argument(
        "--dtype",
        action="append",
        choices=list(ALL_DTYPES),
        help="a dtype (float32, bfloat16, complex64, complex32, complex128) or a sparse "
        "variant (sparse_coo.float32, sparse_csr.float32); repeatable (default: float32 "
        "and bfloat16)",
    )
    parser.add_argument("--entries", help="comma-separated entry names or globs (default: all)")
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        help=f"samples per entry (default, as the expectations: {DEFAULT_SAMPLES}, and 1 in "
        "eager mode on float32 and bfloat16)",
    )
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per entry")
    parser.add_argument("--expectations", type=Path, default=DEFAULT_EXPECTATIONS)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if results contradict the expectations file"
    )
    parser.add_argument(
        "--update-expectations",
        action="store_true",
        help="rewrite the expectation lines of what was run; print the diff",
    )
    parser.add_argument("--json", type=Path, help="also write every outcome as a JSON line here")
    parser.add_argument("--from-json", type=Path, help="report a saved run instead of running")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--fallback-table",
        action="store_true",
        help="print the README's table of ops that run on the CPU (from the expectations) and exit",
    )
    args = parser.parse_args(argv)

    if args.fallback_table:
        from .fallbacks import fallback_rows, markdown_table

        print(markdown_table(fallback_rows(args.expectations)), end="")
        return 0

    if args.from_json:
        outcomes = [
            Outcome.from_json(json.loads(line))
            for line in args.from_json.read_text().splitlines()
            if line.strip()
        ]
    else:
        outcomes = _run(args)
    print(format_report(outcomes))
    if args.json and not args.from_json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text("".join(json.dumps(o.to_json()) + "\n" for o in outcomes))
    status = 0
    if args.check:
        status = _check(outcomes, args.expectations)
    if args.update_expectations:
        _update(outcomes, args.expectations)
    return status


def _run(args) -> list[Outcome]:
    from .opinfo import entry_names
    from .pool import Task, WorkerPool

    names = _select(entry_names(), args.entries)
    if not names:
        print(f"no OpInfo entry matches {args.entries!r}", file=sys.stderr)
        raise SystemExit(2)
    tasks = [
        Task(name, mode, dtype, args.samples)
        for mode in (args.mode or MODES)
        for dtype in (args.dtype or list(DEFAULT_DTYPES))
        for name in names
    ]
    start = time.monotonic()
    done = [0]

    def progress(outcome: Outcome) -> None:
        done[0] += 1
        if not args.quiet and (done[0] % 50 == 0 or done[0] == len(tasks)):
            print(f"[{done[0]}/{len(tasks)}] {time.monotonic() - start:.0f} s", file=sys.stderr)

    return WorkerPool(workers=args.workers, timeout=args.timeout).run(tasks, progress)


def _select(names: list[str], patterns: str | None) -> list[str]:
    if not patterns:
        return names
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in wanted)]


def _check(outcomes: list[Outcome], path: Path) -> int:
    if not path.is_file():
        print(f"no expectations file at {path}", file=sys.stderr)
        return 2
    problems = expectations_file.violations(expectations_file.load(path), outcomes)
    if problems:
        print(f"\n{len(problems)} result(s) contradict {path}:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print(f"\nall {len(outcomes)} results agree with {path}")
    return 0


def _update(outcomes: list[Outcome], path: Path) -> None:
    old_text = path.read_text() if path.is_file() else ""
    current = expectations_file.parse(old_text, str(path)) if old_text else {}
    for outcome in outcomes:
        expectation = expectations_file.expectation_of(outcome)
        current[expectation.key] = expectation
    new_text = expectations_file.format_expectations(current.values())
    diff = list(
        difflib.unified_diff(
            old_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=f"{path} (before)",
            tofile=f"{path} (after)",
        )
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new_text)
    print("".join(diff) if diff else f"{path}: unchanged")


if __name__ == "__main__":
    sys.exit(main())
