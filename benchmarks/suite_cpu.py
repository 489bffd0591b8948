"""Where the test suite's CPU goes: each test's CPU seconds, its own and its children's.

The default run is CPU-bound on two cores (README: two pytest-xdist workers), so what
shortens it is less CPU work, and a test's wall time says little: it grows with
whatever the other worker runs beside it. This pytest plugin records, per test (setup,
call and teardown together), the CPU its worker process used and the CPU of the child
processes it waited for (``resource.getrusage``: ``neuronc`` and example subprocesses,
torchrun launches and their ranks, conformance workers when their pool shuts down),
one JSON line per test in ``DIR/<worker>.jsonl``; the summary adds them up by file:

    python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \\
        -p benchmarks.suite_cpu --suite-cpu=DIR
    python benchmarks/suite_cpu.py DIR [--top 30]

Write ``--suite-cpu=DIR`` as one word: pytest looks for its configuration file from the
paths on its command line before it knows this option, so a separate ``DIR`` outside
the repository makes it find none, and the run then lacks pyproject.toml's options
(``-m 'not slow'``: it runs the slow tests too). The plugin refuses such a run.

A child's CPU counts when it is reaped: a process left running by one test and reaped
in a later one (a session fixture's pool) is counted there, and one never reaped (a
daemon the worker kills at exit) is not counted at all. The worker's own line
``(outside tests)`` holds what ran between tests (collection, fixtures' teardown at
session end).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--suite-cpu",
        metavar="DIR",
        default=None,
        help="write each test's CPU seconds (own and children's) to DIR/<worker>.jsonl",
    )


class _Recorder:
    def __init__(self, folder: Path, worker: str):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{worker}.jsonl"
        self.path.write_text("")
        self.start = _cpu()
        self.in_tests = [0.0, 0.0]  # own and children's CPU of the tests recorded

    def _write(self, record: dict) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        own, children = _cpu()
        wall = time.perf_counter()
        yield
        own_after, children_after = _cpu()
        self.in_tests[0] += own_after - own
        self.in_tests[1] += children_after - children
        self._write(
            {
                "test": item.nodeid,
                "own": round(own_after - own, 3),
                "children": round(children_after - children, 3),
                "wall": round(time.perf_counter() - wall, 3),
            }
        )

    def pytest_sessionfinish(self, session) -> None:
        own, children = _cpu()
        self._write(
            {
                "test": "(outside tests)",
                "own": round(own - self.start[0] - self.in_tests[0], 3),
                "children": round(children - self.start[1] - self.in_tests[1], 3),
                "wall": 0.0,
            }
        )


def pytest_configure(config) -> None:
    folder = config.getoption("--suite-cpu")
    # xdist's controller runs no test, and its workers are its children: only the
    # processes that run tests record (the controller itself when there are no workers)
    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if folder and config.inipath is None:
        raise pytest.UsageError(
            "--suite-cpu: pytest found no configuration file (pyproject.toml), so the run "
            "would not be README's (the slow tests too); write --suite-cpu=DIR as one word"
        )
    if folder and not controller:
        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        config.pluginmanager.register(_Recorder(Path(folder), worker), "suite-cpu-recorder")


# -- the summary -----------------------------------------------------------------------


def summarize(folder: Path, top: int) -> str:
    records = []
    for path in sorted(folder.glob("*.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines() if line]
    if not records:
        raise SystemExit(f"{folder}: no records (was the run given --suite-cpu {folder}?)")
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for record in records:
        name = record["test"].split("::")[0]
        entry = by_file[name]
        entry[0] += record["own"]
        entry[1] += record["children"]
        entry[2] += 1
    own = sum(r["own"] for r in records)
    children = sum(r["children"] for r in records)
    lines = [
        f"{len(records)} records; CPU {own + children:.0f} s: "
        f"{own:.0f} s in the workers, {children:.0f} s in their child processes",
        "",
        "| file | tests | CPU s | own | children | share |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def row(label: str, o: float, c: float, n: int) -> str:
        share = 100 * (o + c) / max(own + children, 1e-9)
        return f"| {label} | {n} | {o + c:.1f} | {o:.1f} | {c:.1f} | {share:.1f}% |"

    ranked = sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    lines += [row(name, *totals) for name, totals in ranked[:top]]
    rest = [totals for _, totals in ranked[top:]]
    if rest:
        lines.append(row(f"the other {len(rest)} files", *(sum(column) for column in zip(*rest))))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the --suite-cpu folder of a run")
    parser.add_argument("--top", type=int, default=30, help="files listed (default 30)")
    args = parser.parse_args(argv)
    print(summarize(args.folder, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
