"""The fuzz run's summary: a table of ops x cases by status, then every failure's snippet."""

from __future__ import annotations

from .runner import MODES, OpResult

COLUMNS = (
    "cases",
    "pass",
    "wrong",
    "crash",
    "refused",
    "error",
    "lenient",
    "untested",
    "denormal",
)


def row(result: OpResult) -> dict[str, int]:
    counts = {
        status: result.total(status) for status in COLUMNS if status not in ("cases", "crash")
    }
    return {"cases": result.cases, **counts, "crash": 1 if result.crash else 0}


def totals(results: list[OpResult]) -> dict[str, int]:
    summed = {column: 0 for column in COLUMNS}
    for result in results:
        for column, value in row(result).items():
            summed[column] += value
    summed["ops"] = len(results)
    return summed


def format_report(results: list[OpResult], expected: dict, not_run: list[str]) -> str:
    width = max([len(r.op) for r in results] + [8])
    header = f"{'op':<{width}} " + " ".join(f"{c:>8}" for c in COLUMNS) + "  note"
    lines = [header, "-" * len(header)]
    for result in results:
        values = row(result)
        note = "expected failure" if result.op in expected else ""
        lines.append(
            f"{result.op:<{width}} " + " ".join(f"{values[c]:>8}" for c in COLUMNS) + f"  {note}"
        )
    summed = totals(results)
    lines.append("-" * len(header))
    lines.append(
        f"{summed['ops']} ops x {summed['cases']} cases (each in {'/'.join(MODES)} where run): "
        f"{summed['wrong']} wrong, {summed['crash']} crash, {summed['refused']} refused, "
        f"{summed['error']} error, {summed['lenient']} lenient, {summed['untested']} untested, "
        f"{summed['denormal']} denormal (flushed by design, docs/numerics.md)"
    )
    if not_run:
        lines.append(
            f"{len(not_run)} ops not run (time budget): {', '.join(not_run[:20])}"
            + (" ..." if len(not_run) > 20 else "")
        )
    for result in results:
        for failure in result.failures:
            lines += [
                "",
                f"== {failure.op} [{failure.mode}] {failure.status}: {failure.detail}",
                failure.snippet.rstrip(),
            ]
    return "\n".join(lines)
