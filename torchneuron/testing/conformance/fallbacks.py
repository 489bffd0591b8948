"""The table of ops that still run on the CPU, made from the expectations file.

Eager-mode conformance records each fallback as ``xfail fallback: aten::<op> ran on
the CPU: <reason>``; torch.compile records the graph's reason. Lines of every dtype
count (complex64, the sparse variants); an entry not in float32 is labelled with its
dtype (``sqrt (eager, complex64)``). ``fallback_rows``
gathers them per op (the first reason seen, and the OpInfo entries that hit it);
``markdown_table`` renders the README's table, which a test keeps in step with the
file (``python -m torchneuron.conformance --fallback-table`` prints it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .expectations import DEFAULT_PATH, load

_EAGER_REASON = re.compile(r"(aten::[\w.]+) ran on the CPU: (.*)")
_NO_LOWERING = re.compile(r"no lowering to StableHLO for (aten\.[\w.]+)")


@dataclass
class FallbackRow:
    op: str
    reason: str
    entries: list[str] = field(default_factory=list)


def fallback_rows(path: str | Path = DEFAULT_PATH) -> list[FallbackRow]:
    """One row per op that an expected fallback names, sorted by op."""
    rows: dict[str, FallbackRow] = {}
    for expectation in load(path).values():
        if expectation.kind != "xfail" or expectation.status != "fallback":
            continue
        op, reason = _op_and_reason(expectation.mode, expectation.reason)
        row = rows.setdefault(op if op != _GRAPH else f"{op}: {reason}", FallbackRow(op, reason))
        label = (
            f"{expectation.entry} ({expectation.mode})"
            if expectation.dtype == "float32"
            else f"{expectation.entry} ({expectation.mode}, {expectation.dtype})"
        )
        if label not in row.entries:
            row.entries.append(label)
    return [rows[op] for op in sorted(rows)]


_GRAPH = "(a whole graph)"


def _op_and_reason(mode: str, reason: str) -> tuple[str, str]:
    """The op a fallback names (``aten::name`` or ``aten::name.overload``) and why."""
    eager = _EAGER_REASON.match(reason)
    if eager is not None:
        return eager.group(1).removesuffix(".default"), _short(eager.group(2))
    missing = _NO_LOWERING.search(reason)
    if missing is not None:
        name = missing.group(1).removeprefix("aten.").removesuffix(".default")
        return "aten::" + name, _short(reason)
    return _GRAPH, _short(reason)


def _short(reason: str) -> str:
    reason = re.sub(r" with inputs \(.*\)$", "", reason.strip())
    return reason.replace("|", "\\|")[:160]


def markdown_table(rows: list[FallbackRow]) -> str:
    lines = ["| op | why it runs on the CPU | OpInfo entries |", "|---|---|---|"]
    for row in rows:
        shown = ", ".join(row.entries[:4]) + (" …" if len(row.entries) > 4 else "")
        op = row.op if row.op == _GRAPH else f"`{row.op}`"
        lines.append(f"| {op} | {row.reason} | {shown} |")
    return "\n".join(lines) + "\n"
