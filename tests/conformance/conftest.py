"""The OpInfo conformance run shared by this folder's tests (one run per session).

``TORCHNEURON_CONFORMANCE_ENTRIES`` (comma-separated names or globs) limits the
run to some entries while working on them; the others' tests are skipped.
``TORCHNEURON_CONFORMANCE_WORKERS`` sets the number of worker processes.
"""

import fnmatch
import os

import pytest

from torchneuron.conformance import expectations
from torchneuron.conformance.expectations import DEFAULT_PATH as DEFAULT_EXPECTATIONS
from torchneuron.conformance.opinfo import DEFAULT_SAMPLES

GATING_DTYPE = "float32"
ENTRIES_VAR = "TORCHNEURON_CONFORMANCE_ENTRIES"


def selected(entry: str) -> bool:
    patterns = [p.strip() for p in os.environ.get(ENTRIES_VAR, "").split(",") if p.strip()]
    return not patterns or any(fnmatch.fnmatchcase(entry, p) for p in patterns)


def gating_expectations() -> dict:
    return {
        key: e
        for key, e in expectations.load(DEFAULT_EXPECTATIONS).items()
        if e.dtype == GATING_DTYPE
    }


@pytest.fixture(scope="session")
def conformance_outcomes():
    """{(mode, dtype, entry): Outcome} for every gating expectation line that is selected."""
    from torchneuron.conformance.pool import Task, WorkerPool

    lines = [key for key in gating_expectations() if selected(key[2])]
    tasks = [Task(entry, mode, dtype, DEFAULT_SAMPLES) for mode, dtype, entry in lines]
    workers = int(os.environ.get("TORCHNEURON_CONFORMANCE_WORKERS", min(2, os.cpu_count() or 1)))
    outcomes = WorkerPool(workers=workers, timeout=180).run(tasks)
    return {(o.mode, o.dtype, o.entry): o for o in outcomes}
