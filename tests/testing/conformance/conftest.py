"""The OpInfo conformance run shared by this folder's tests (one run per session).

The gating run holds every line of the expectations file in float32 (all entries),
the sparse variants (``sparse_coo.float32``, ``sparse_csr.float32``: the entries
PyTorch marks as supporting the layout) and, in complex64, the entries of
``GATED_COMPLEX``: the ops the README claims native on complex values plus cheap
passes (~3 min of one worker). The file holds complex64 lines for those entries only;
the full complex sweep (``python -m torchneuron.conformance --dtype complex64``, ~35
min with two workers) is a command, not gating (docs/complex-fft.md has its counts).

``TORCHNEURON_CONFORMANCE_ENTRIES`` (comma-separated names or globs) limits the
run to some entries while working on them; the others' tests are skipped.
``TORCHNEURON_CONFORMANCE_WORKERS`` sets the number of worker processes.
"""

import fnmatch
import os

import pytest

from torchneuron import settings
from torchneuron.testing.conformance import expectations
from torchneuron.testing.conformance.expectations import DEFAULT_PATH as DEFAULT_EXPECTATIONS
from torchneuron.testing.conformance.sparse_samples import VARIANTS as SPARSE_VARIANTS

GATING_DTYPE = "float32"
COMPLEX_DTYPE = "complex64"
# complex64 entries in the gating run (names or globs). ``polar``, ``complex`` and
# ``view_as_complex`` take real inputs: their float32 lines run them.
GATED_COMPLEX = (
    # elementwise arithmetic
    "add", "sub", "mul", "div.no_rounding_mode", "true_divide", "neg", "reciprocal",
    "exp", "log", "square", "positive",
    # parts of complex values
    "abs", "angle", "conj", "conj_physical", "resolve_conj", "real", "imag", "sgn",
    "view_as_real", "H", "mH", "T", "mT",
    # matrix products
    "mm", "bmm", "matmul", "addmm", "mv", "dot", "vdot", "inner", "outer",
    # FFTs (DFT matmuls)
    "fft.*", "stft", "istft",
    # structure and reductions
    "sum", "mean", "cat", "stack", "flip", "roll", "reshape", "transpose", "where",
)  # fmt: skip


def selected(entry: str) -> bool:
    text = settings.env_text(settings.CONFORMANCE_ENTRIES, "")
    patterns = [p.strip() for p in text.split(",") if p.strip()]
    return not patterns or any(fnmatch.fnmatchcase(entry, p) for p in patterns)


def complex_gated(entry: str) -> bool:
    return any(fnmatch.fnmatchcase(entry, p) for p in GATED_COMPLEX)


def gating(dtype: str, entry: str) -> bool:
    """Whether the gating run holds this line."""
    if dtype == COMPLEX_DTYPE:
        return complex_gated(entry)
    return dtype == GATING_DTYPE or dtype in SPARSE_VARIANTS


def gating_expectations() -> dict:
    return {
        key: e
        for key, e in expectations.load(DEFAULT_EXPECTATIONS).items()
        if gating(e.dtype, e.entry)
    }


@pytest.fixture(scope="session")
def conformance_outcomes():
    """{(mode, dtype, entry): Outcome} for every gating expectation line that is selected."""
    from torchneuron.testing.conformance.pool import Task, WorkerPool

    lines = [key for key in gating_expectations() if selected(key[2])]
    tasks = [Task(entry, mode, dtype) for mode, dtype, entry in lines]  # samples per mode
    workers = settings.env_count(settings.CONFORMANCE_WORKERS, min(2, os.cpu_count() or 1))
    outcomes = WorkerPool(workers=workers, timeout=180).run(tasks)
    return {(o.mode, o.dtype, o.entry): o for o in outcomes}
