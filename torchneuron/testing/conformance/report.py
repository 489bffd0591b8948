"""Summaries of a conformance run: the pass-rate table and the top failure causes."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable

from .opinfo import Outcome

COLUMNS = ("pass", "fail", "error", "fallback", "crash", "timeout", "skip")
_HEADINGS = {
    "pass": "passed",
    "fail": "wrong",
    "error": "errors",
    "fallback": "fell back",
    "crash": "crashed",
    "timeout": "timed out",
    "skip": "skipped",
}


def pass_rate(outcomes: list[Outcome]) -> float:
    """Passed natively / entries tested (entries not skipped), in percent."""
    tested = [o for o in outcomes if o.status != "skip"]
    return 100.0 * sum(o.status == "pass" for o in tested) / len(tested) if tested else 0.0


def table(outcomes: Iterable[Outcome]) -> str:
    """Per mode and dtype: counts per status and the pass rate, as a Markdown table."""
    groups: dict[tuple[str, str], list[Outcome]] = collections.defaultdict(list)
    for outcome in outcomes:
        groups[(outcome.mode, outcome.dtype)].append(outcome)
    header = [
        "mode",
        "dtype",
        "entries",
        *(_HEADINGS[c] for c in COLUMNS),
        "pass rate (tested)",
        "pass rate (all)",
    ]
    rows = [header]
    for (mode, dtype), group in sorted(groups.items()):
        counts = collections.Counter(o.status for o in group)
        rows.append(
            [
                mode,
                dtype,
                str(len(group)),
                *(str(counts[c]) for c in COLUMNS),
                f"{pass_rate(group):.1f}%",
                f"{100.0 * counts['pass'] / len(group):.1f}%",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def cause_of(outcome: Outcome) -> str:
    """The reason with the particulars (shapes, numbers, paths) removed, for grouping."""
    reason = outcome.reason
    match = re.search(r"no lowering to StableHLO for (\S+)", reason)
    if match:
        return f"no lowering for {match.group(1)}"
    reason = re.sub(r" with inputs \(.*", "", reason)
    reason = re.sub(r"\(at [^)]*\)", "", reason)
    reason = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", reason)
    reason = re.sub(r"u\d+|s\d+", "sym", reason)
    return f"{outcome.status}: {reason.strip()}"[:140]


def top_causes(outcomes: Iterable[Outcome], count: int = 15) -> list[tuple[str, int, list[str]]]:
    """The most frequent causes of non-passing, tested entries: (cause, entries, examples)."""
    grouped: dict[str, list[str]] = collections.defaultdict(list)
    for outcome in outcomes:
        if outcome.status in ("pass", "skip"):
            continue
        grouped[cause_of(outcome)].append(f"{outcome.entry} ({outcome.mode}/{outcome.dtype})")
    ranked = sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0]))
    return [(cause, len(entries), entries[:4]) for cause, entries in ranked[:count]]


def format_report(outcomes: list[Outcome], causes: int = 15) -> str:
    lines = ["OpInfo conformance on the neuron backend", "", table(outcomes), ""]
    lines.append(
        "pass rate (tested) = passed natively / entries not skipped; skipped = not "
        "applicable (dtype unsupported, random output, no CPU sample, Dynamo cannot "
        "capture the op with any backend)"
    )
    top = top_causes(outcomes, causes)
    if top:
        lines += ["", "Top causes of the rest:"]
        for cause, number, examples in top:
            lines.append(f"  {number:4d}  {cause}")
            lines.append(f"        e.g. {', '.join(examples)}")
    return "\n".join(lines)
