"""Counting outcomes, grouping failures, saving reproducers, printing the table.

Every case that is not ``refused`` or ``ran`` gets its bytes saved as
``<out>/<outcome>/<label>.neff`` (rebuilt in this process from its seed and index:
cases are deterministic) and a line in ``<out>/findings.jsonl`` with the command that
reproduces it. Failures are grouped by a key that ignores numbers in messages
(outcome, stage, type or signal, and where it was raised), so a summary lists each
distinct failure once with one reproducer.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter, defaultdict
from pathlib import Path

from .cases import CaseMaker
from .pool import CaseReport

OUTCOMES = ("refused", "ran", "crash", "hang", "leak", "forbidden-executed", "fuzzer-error")
CLEAN = frozenset({"refused", "ran"})


def failure_key(report: CaseReport) -> str:
    detail = report.detail
    if report.outcome in ("leak", "fuzzer-error"):
        what = f"{detail.get('type')} at {detail.get('where')}"
    else:
        message = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", str(detail.get("message", "")))[:120]
        what = f"{detail.get('type', '')} {message}".strip()
    return f"{report.outcome} in {report.stage}: {what}"


class Findings:
    """Collects case reports; saves reproducers of the failures under ``out``."""

    def __init__(self, out: Path, maker: CaseMaker, seed: int, mutator_option: str | None):
        self.out = Path(out)
        self.maker = maker
        self.seed = seed
        self.mutator_option = mutator_option
        self.counts: dict[str, Counter] = defaultdict(Counter)
        self.failures: dict[str, list[dict]] = defaultdict(list)
        self.refused_at: Counter = Counter()
        self.seconds = 0.0
        self.total = 0

    def add(self, report: CaseReport) -> None:
        self.total += 1
        self.seconds += report.seconds
        self.counts[report.mutator][report.outcome] += 1
        if report.outcome == "refused":
            self.refused_at[report.stage] += 1
        if report.outcome in CLEAN:
            return
        record = {
            "index": report.index,
            "seed": self.seed,
            "mutator": report.mutator,
            "entry": report.entry,
            "note": report.note,
            "outcome": report.outcome,
            "stage": report.stage,
            **report.detail,
        }
        record["reproducer"] = self._save(report)
        record["command"] = self._command(report, record["reproducer"])
        self.failures[failure_key(report)].append(record)
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / "findings.jsonl", "a") as file:
            file.write(json.dumps(record) + "\n")

    def _save(self, report: CaseReport) -> str | None:
        try:
            case = self.maker.make(self.seed, report.index)
        except Exception as error:  # noqa: BLE001 - still report the failure itself
            return f"(not rebuilt: {type(error).__name__}: {error})"
        folder = self.out / report.outcome
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{case.label}.neff"
        path.write_bytes(case.data)
        return str(path)

    def _command(self, report: CaseReport, path: str | None) -> str:
        replay = f"python -m torchneuron.fuzz.neff --replay {shlex.quote(str(path))}"
        if report.forbidden:
            replay += " --forbidden"
        if report.stage.startswith("cli"):
            replay += " --cli"
        return replay

    def bad_count(self) -> int:
        return sum(
            count
            for outcomes in self.counts.values()
            for outcome, count in outcomes.items()
            if outcome not in CLEAN
        )

    def table(self) -> str:
        columns = [o for o in OUTCOMES if o != "fuzzer-error" or self._any("fuzzer-error")]
        width = max([len("mutator"), len("total"), *map(len, self.counts)])
        head = f"{'mutator':<{width}} " + " ".join(f"{c:>9}" for c in columns) + f" {'cases':>7}"
        lines = [head, "-" * len(head)]
        totals: Counter = Counter()
        for mutator in sorted(self.counts):
            outcomes = self.counts[mutator]
            totals.update(outcomes)
            cells = " ".join(f"{outcomes.get(c, 0):>9}" for c in columns)
            lines.append(f"{mutator:<{width}} {cells} {sum(outcomes.values()):>7}")
        lines.append("-" * len(head))
        cells = " ".join(f"{totals.get(c, 0):>9}" for c in columns)
        lines.append(f"{'total':<{width}} {cells} {sum(totals.values()):>7}")
        return "\n".join(lines)

    def _any(self, outcome: str) -> bool:
        return any(outcome in outcomes for outcomes in self.counts.values())

    def distinct(self) -> str:
        if not self.failures:
            return "no crash, hang, leak or forbidden op executed"
        lines = [f"{len(self.failures)} distinct failures (count, key, one reproducer):"]
        ranked = sorted(self.failures.items(), key=lambda item: (-len(item[1]), item[0]))
        for key, records in ranked:
            first = records[0]
            lines.append(f"{len(records):6d}  {key}")
            if first.get("message"):
                lines.append(f"        {first['message'][:200]}")
            lines.append(f"        {first['mutator']} on {first['entry']}: {first['note'][:120]}")
            lines.append(f"        {first['command']}")
        return "\n".join(lines)

    def refusal_stages(self) -> str:
        stages = ", ".join(f"{stage} {count}" for stage, count in self.refused_at.most_common())
        return f"refused at: {stages or 'none'}"

    def write_summary(self, header: str, seconds: float) -> Path:
        """``summary.txt`` (what is printed) and ``counts.json`` (for scripts and tests)."""
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / "summary.txt"
        path.write_text(
            f"{header}\n\n{self.table()}\n{self.refusal_stages()}\n\n{self.distinct()}\n"
        )
        counts = {
            "cases": self.total,
            "seconds": round(seconds, 3),
            "outcomes": dict(sum(self.counts.values(), Counter())),
            "by_mutator": {name: dict(outcomes) for name, outcomes in self.counts.items()},
            "refused_at": dict(self.refused_at),
            "distinct_failures": {key: len(records) for key, records in self.failures.items()},
        }
        (self.out / "counts.json").write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n")
        return path
