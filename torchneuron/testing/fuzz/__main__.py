"""``python -m torchneuron.fuzz``: differential fuzzing of ops against PyTorch on the CPU.

    python -m torchneuron.fuzz                                  # every op, seed 0
    python -m torchneuron.fuzz --ops 'remainder,sort*' --examples 50 --seed 3
    python -m torchneuron.fuzz --mode eager --time-budget 1200 --report fuzz.json
    python -m torchneuron.fuzz --list

Exit status: 0 when every result agrees with ``expected.EXPECTED_FAILURES`` (no new
wrong value or crash, no expected failure passing); 1 otherwise; 2 for bad
arguments or a missing dependency.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

MODE_CHOICES = {"compile": ("compile",), "eager": ("eager",), "both": ("compile", "eager")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchneuron.fuzz", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--examples", type=int, default=10, help="cases per op (default 10)")
    parser.add_argument("--ops", help="comma-separated op names or globs (default: all)")
    parser.add_argument("--mode", choices=list(MODE_CHOICES), default="both")
    parser.add_argument(
        "--time-budget", type=float, default=1800.0, help="seconds for the whole run"
    )
    parser.add_argument("--op-seconds", type=float, default=90.0, help="generation time per op")
    parser.add_argument("--shrink-seconds", type=float, default=45.0, help="shrinking per op")
    parser.add_argument(
        "--case-timeout",
        type=float,
        default=180.0,
        help="seconds without progress before a case counts as a hang",
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--report", type=Path, help="write a JSON summary here")
    parser.add_argument("--list", action="store_true", help="list the selected ops and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    try:
        import hypothesis  # noqa: F401
    except ImportError:
        print(
            "python -m torchneuron.fuzz needs hypothesis: pip install torchneuron[test]",
            file=sys.stderr,
        )
        return 2
    from .expected import EXPECTED_FAILURES, problems
    from .ops import select
    from .pool import FuzzPool, Task
    from .report import format_report, totals

    ops = select(args.ops)
    if not ops:
        print(f"no fuzz op matches {args.ops!r} (see --list)", file=sys.stderr)
        return 2
    if args.list:
        for op in ops:
            print(f"{op.name:<40} {op.family}")
        return 0
    modes = MODE_CHOICES[args.mode]
    tasks = [
        Task(
            op.name,
            op.family,
            args.seed,
            args.examples,
            modes,
            args.op_seconds,
            args.shrink_seconds,
        )
        for op in ops
    ]
    start = time.monotonic()

    def progress(result) -> None:
        if not args.quiet:
            status = "crash" if result.crash else f"{result.total('wrong')} wrong"
            print(
                f"[{time.monotonic() - start:6.0f} s] {result.op}: {result.cases} cases, {status}",
                file=sys.stderr,
                flush=True,
            )

    pool = FuzzPool(workers=args.workers, case_timeout=args.case_timeout)
    results = pool.run(tasks, deadline=start + args.time_budget, on_result=progress)
    done = {result.op for result in results}
    not_run = [task.op for task in tasks if task.op not in done]
    print(format_report(results, EXPECTED_FAILURES, not_run))
    found = problems(results)
    for problem in found:
        print(f"UNEXPECTED: {problem}")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        summary = {
            "seed": args.seed,
            "examples": args.examples,
            "modes": list(modes),
            "seconds": round(time.monotonic() - start, 1),
            "totals": totals(results),
            "unexpected": found,
            "not_run": not_run,
            "ops": [result.to_json() for result in results],
        }
        args.report.write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
