"""The expectations file: what each OpInfo entry is expected to do, kept true by CI.

One line per entry, mode and dtype:

    <mode> <dtype> <entry> pass
    <mode> <dtype> <entry> xfail <status>: <reason>
    <mode> <dtype> <entry> skip: <reason>

``xfail`` records the status seen (``fallback``, ``error``, ``fail``, ``timeout``,
``crash``) and why. A run disagrees with the file (``violations``) when an
expected pass does not pass, an xfail passes (remove the xfail), a skip stops
being skipped or vice versa, or an entry gives a wrong answer, crashes or times
out without its line saying exactly that. A move between ``fallback`` and
``error`` is noted but allowed: both are loud, and other work moves ops between
them. ``#`` starts a comment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .opinfo import MODES, Outcome

HEADER = """\
# OpInfo conformance expectations (torchneuron.conformance): one line per entry, mode, dtype.
#   <mode> <dtype> <entry> pass | xfail <status>: <reason> | skip: <reason>
# Refresh with `python -m torchneuron.conformance --update-expectations` and review the diff.
"""
# The checked-in file (a source checkout: the package sits next to tests/).
DEFAULT_PATH = (
    Path(__file__).resolve().parents[3] / "tests" / "testing" / "conformance" / "expectations.txt"
)
# Statuses that must be named exactly by their xfail line: never accepted silently.
MUST_BE_LISTED = ("fail", "crash", "timeout")


class ExpectationsError(ValueError):
    """The expectations file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class Expectation:
    mode: str
    dtype: str
    entry: str
    kind: str  # "pass" | "xfail" | "skip"
    status: str = "pass"  # for xfail: the status seen
    reason: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.mode, self.dtype, self.entry)

    def line(self) -> str:
        head = f"{self.mode} {self.dtype} {self.entry}"
        if self.kind == "pass":
            return f"{head} pass"
        if self.kind == "skip":
            return f"{head} skip: {self.reason}"
        return f"{head} xfail {self.status}: {self.reason}"


def expectation_of(outcome: Outcome) -> Expectation:
    """The line that states ``outcome`` as the expected behaviour."""
    reason = " ".join(outcome.reason.split())
    if outcome.status == "pass":
        return Expectation(outcome.mode, outcome.dtype, outcome.entry, "pass")
    if outcome.status == "skip":
        return Expectation(outcome.mode, outcome.dtype, outcome.entry, "skip", "skip", reason)
    return Expectation(outcome.mode, outcome.dtype, outcome.entry, "xfail", outcome.status, reason)


def parse(text: str, source: str = "<expectations>") -> dict[tuple[str, str, str], Expectation]:
    found: dict[tuple[str, str, str], Expectation] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}:{number}"
        parts = line.split(" ", 3)
        if len(parts) < 4:
            raise ExpectationsError(f"{where}: expected '<mode> <dtype> <entry> <expectation>'")
        mode, dtype, entry, rest = parts
        if mode not in MODES:
            raise ExpectationsError(f"{where}: unknown mode {mode!r}")
        if rest == "pass":
            expectation = Expectation(mode, dtype, entry, "pass")
        elif rest.startswith("skip:"):
            expectation = Expectation(
                mode, dtype, entry, "skip", "skip", rest.removeprefix("skip:").strip()
            )
        elif rest.startswith("xfail "):
            status, colon, reason = rest.removeprefix("xfail ").partition(":")
            status = status.strip()
            if not colon or status not in ("fallback", "error", *MUST_BE_LISTED):
                raise ExpectationsError(
                    f"{where}: 'xfail' needs '<status>: <reason>' with a status among "
                    "fallback, error, fail, timeout, crash"
                )
            if not reason.strip():
                raise ExpectationsError(f"{where}: an xfail needs a reason")
            expectation = Expectation(mode, dtype, entry, "xfail", status, reason.strip())
        else:
            raise ExpectationsError(
                f"{where}: expectation must be 'pass', 'xfail <status>: <reason>' or "
                f"'skip: <reason>', got {rest!r}"
            )
        if expectation.key in found:
            raise ExpectationsError(f"{where}: a second line for {mode} {dtype} {entry}")
        found[expectation.key] = expectation
    return found


def load(path: str | Path) -> dict[tuple[str, str, str], Expectation]:
    path = Path(path)
    return parse(path.read_text(), str(path))


def format_expectations(expectations: Iterable[Expectation]) -> str:
    ordered = sorted(expectations, key=lambda e: (MODES.index(e.mode), e.dtype, e.entry))
    return HEADER + "".join(e.line() + "\n" for e in ordered)


def violation(expected: Expectation | None, outcome: Outcome) -> str | None:
    """Why ``outcome`` contradicts ``expected`` (None when it agrees)."""
    what = f"{outcome.mode} {outcome.dtype} {outcome.entry}"
    seen = f"{outcome.status}" + (f" ({outcome.reason})" if outcome.reason else "")
    if expected is None:
        return f"{what}: no expectation line; it is now {seen}"
    if expected.kind == "pass":
        return None if outcome.status == "pass" else f"{what}: regressed, expected pass, got {seen}"
    if expected.kind == "skip":
        return None if outcome.status == "skip" else f"{what}: expected a skip, got {seen}"
    if outcome.status == "pass":
        return f"{what}: expected to fail ({expected.status}) but passes now; mark it pass"
    if outcome.status == "skip":
        return f"{what}: expected {expected.status}, but it is skipped now ({outcome.reason})"
    if outcome.status in MUST_BE_LISTED and expected.status != outcome.status:
        return f"{what}: {seen}; its line expects {expected.status}"
    if expected.status in MUST_BE_LISTED and expected.status != outcome.status:
        return (
            f"{what}: its line expects {expected.status}, now {seen}; update the line (it improved)"
        )
    return None


def violations(
    expectations: dict[tuple[str, str, str], Expectation], outcomes: Iterable[Outcome]
) -> list[str]:
    return [
        problem
        for outcome in outcomes
        if (
            problem := violation(
                expectations.get((outcome.mode, outcome.dtype, outcome.entry)), outcome
            )
        )
        is not None
    ]
