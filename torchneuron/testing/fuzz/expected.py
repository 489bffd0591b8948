"""Ops the fuzzer still finds wrong today, each with its reason and issue family.

An op listed here may report ``wrong`` or ``crash`` without failing a run; an op
listed here that runs clean is an unexpected pass (like pytest's strict xfail): fix
this table when a fix lands, so the fuzzer guards the fix from then on.
"""

from __future__ import annotations

from .runner import OpResult

# op name -> (issue family, what is still wrong)
EXPECTED_FAILURES: dict[str, tuple[str, str]] = {}


def problems(results: list[OpResult], expected=None) -> list[str]:
    """What contradicts ``expected``: a new wrong or crash, or an expected failure that passed."""
    expected = EXPECTED_FAILURES if expected is None else expected
    found = []
    for result in results:
        failed = result.total("wrong") > 0 or bool(result.crash)
        if failed and result.op not in expected:
            what = "crash" if result.crash else f"{result.total('wrong')} wrong"
            found.append(f"{result.op}: {what} (not an expected failure)")
        elif not failed and result.op in expected and result.cases > 0:
            family, reason = expected[result.op]
            found.append(
                f"{result.op}: passed but is listed as an expected failure ({family}: {reason}); "
                "remove it from torchneuron/testing/fuzz/expected.py"
            )
    return found
