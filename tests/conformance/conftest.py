"""The OpInfo conformance run shared by this folder's tests (one run per session).

``TORCHNEURON_CONFORMANCE_ENTRIES`` (comma-separated names or globs) limits the
run to some entries while working on them; the others' tests are skipped.
``TORCHNEURON_CONFORMANCE_WORKERS`` sets the number of worker processes.
"""

import fnmatch
import os

import pytest

from torchneuron import settings
from torchneuron.conformance import expectations
from torchneuron.conformance.expectations import DEFAULT_PATH as DEFAULT_EXPECTATIONS
from torchneuron.conformance.opinfo import DEFAULT_SAMPLES

GATING_DTYPE = "float32"


def selected(entry: str) -> bool:
    text = settings.env_text(settings.CONFORMANCE_ENTRIES, "")
    patterns = [p.strip() for p in text.split(",") if p.strip()]
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
    default = str(min(2, os.cpu_count() or 1))
    workers = int(settings.env_text(settings.CONFORMANCE_WORKERS, default))
    outcomes = WorkerPool(workers=workers, timeout=180).run(tasks)
    return {(o.mode, o.dtype, o.entry): o for o in outcomes}
