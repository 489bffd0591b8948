"""``python -m torchneuron.fuzz.neff``: mutate real NEFFs and check that we fail cleanly.

    python -m torchneuron.fuzz.neff --cases 2000 --workers 2 --out neff-fuzz
    python -m torchneuron.fuzz.neff --cases 200 --mutators program-bytes,forbidden-op
    python -m torchneuron.fuzz.neff --replay neff-fuzz/leak/s0-c17-json-structure.neff
    python -m torchneuron.fuzz.neff --list

Exit status: 0 when no case crashed, hung, leaked an exception other than
``NeffError`` or executed a forbidden op; 1 otherwise; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchneuron.fuzz.neff", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cases", type=int, default=1000, help="cases to run (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds before a case is a hang (default 60: above the runtime verifier's own 20 s + start-up limits)",
    )
    parser.add_argument("--out", type=Path, default=Path("neff-fuzz-out"), help="reproducers here")
    parser.add_argument("--mutators", help="comma-separated mutator names (default: all)")
    parser.add_argument(
        "--cli-every", type=int, default=20,
        help="every n-th case also goes through neuronc inspect and run (0: never; default 20)",
    )  # fmt: skip
    parser.add_argument(
        "--memory-mib", type=int, default=4096,
        help="address space a worker may grow by after start-up (default 4096; 0: no cap)",
    )  # fmt: skip
    parser.add_argument("--corpus", type=Path, help="seed NEFFs (default: built and cached)")
    parser.add_argument("--list", action="store_true", help="list the mutators and exit")
    parser.add_argument("--replay", type=Path, help="run one saved case here, with tracebacks")
    parser.add_argument("--forbidden", action="store_true", help="with --replay: the case "
                        "holds a forbidden op, so reaching execution is a failure")  # fmt: skip
    parser.add_argument("--cli", action="store_true", help="with --replay: also run neuronc")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    from .cases import MUTATORS, select_mutators

    if args.list:
        for name, mutator in MUTATORS.items():
            extra = " (test only)" if mutator.test_only else ""
            print(f"{name:20s} {mutator.layer}{extra}")
        return 0
    if args.replay is not None:
        from .replay import replay

        return replay(args.replay, forbidden=args.forbidden, cli=args.cli)
    try:
        mutators = select_mutators(args.mutators)
    except ValueError as error:
        parser.error(str(error))
    if args.cases < 0 or args.workers < 1 or args.timeout <= 0:
        parser.error("--cases must be >= 0, --workers >= 1 and --timeout > 0")
    return fuzz(args, mutators)


def fuzz(args: argparse.Namespace, mutators: tuple[str, ...]) -> int:
    from .cases import CaseMaker
    from .corpus import ensure_corpus, load_corpus
    from .pool import WorkerPool
    from .report import Findings

    start = time.monotonic()
    corpus_dir = ensure_corpus(args.corpus) if args.corpus is None else args.corpus
    corpus = load_corpus(corpus_dir)
    corpus_seconds = time.monotonic() - start
    maker = CaseMaker(corpus, mutators)
    findings = Findings(args.out, maker, args.seed, args.mutators)
    pool = WorkerPool(
        str(corpus_dir),
        mutators,
        workers=min(args.workers, max(1, args.cases)),
        timeout=args.timeout,
        memory_mib=args.memory_mib,
        cli_every=args.cli_every,
    )
    last_print = [time.monotonic()]

    def on_report(report) -> None:
        findings.add(report)
        if args.quiet:
            return
        if report.outcome not in ("refused", "ran"):
            print(
                f"case {report.index}: {report.outcome} in {report.stage} "
                f"({report.mutator}: {report.note[:80]}) {report.detail.get('type', '')} "
                f"{str(report.detail.get('message', ''))[:120]}",
                file=sys.stderr,
            )
        now = time.monotonic()
        if now - last_print[0] > 30:
            last_print[0] = now
            rate = findings.total / max(now - run_start, 1e-9)
            print(f"... {findings.total}/{args.cases} cases, {rate:.1f}/s", file=sys.stderr)

    run_start = time.monotonic()
    pool.run(args.seed, range(args.start, args.start + args.cases), on_report)
    wall = time.monotonic() - run_start
    rate = findings.total / wall if wall else 0.0
    header = (
        f"NEFF fuzz: seed {args.seed}, cases {args.start}..{args.start + args.cases - 1}, "
        f"{len(corpus)} seed NEFFs ({', '.join(e.name for e in corpus)}), "
        f"{pool.workers} workers, timeout {args.timeout:g} s\n"
        f"{findings.total} cases in {wall:.1f} s: {rate:.1f} cases/s, "
        f"{rate / pool.workers:.1f} per worker; corpus ready in {corpus_seconds:.1f} s; "
        f"{pool.restarts} worker restarts"
    )
    summary = findings.write_summary(header, wall)
    print(header)
    print()
    print(findings.table())
    print(findings.refusal_stages())
    print()
    print(findings.distinct())
    print(f"\nsummary: {summary}")
    return 1 if findings.bad_count() else 0


if __name__ == "__main__":
    sys.exit(main())
