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


# Eager-mode float32 lines the slow run holds (``pytest -m slow``), the entries whose eager
# line cost over 2 s of a worker in a cold run (2026-12-07, 2-core host; seconds): each
# is one long unrolled program in both modes, whose rule the same entry's compile-mode
# line runs natively on two samples in the default run, and whose eager dispatch the
# fast test named here runs natively.
SLOW_EAGER = {
    # the Jacobi SVD and eigh: tests/lowering/test_eigen.py's test_eager_svd_is_native
    # and test_eager_eigh_is_native
    "linalg.pinv": 9.0, "pinverse": 7.1, "linalg.pinv.hermitian": 6.5,
    "linalg.matrix_rank.hermitian": 5.8, "linalg.matrix_rank": 4.9, "linalg.eigh": 4.9,
    "linalg.eigvalsh": 4.7, "norm.nuc": 3.8, "linalg.pinv.singular": 3.1,
    "pca_lowrank": 2.5, "svd_lowrank": 2.4,
    # LU with pivoting: the default run's eager lines of linalg.inv and linalg.solve_ex
    "linalg.tensorinv": 4.9, "linalg.solve": 2.8, "linalg.tensorsolve": 2.5,
}  # fmt: skip


def slow_line(mode: str, dtype: str, entry: str) -> bool:
    """Whether the line runs in the slow run only (``SLOW_EAGER``)."""
    return mode == "eager" and dtype == GATING_DTYPE and entry in SLOW_EAGER


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


def _outcomes(slow: bool) -> dict:
    from torchneuron.testing.conformance.pool import Task, WorkerPool

    lines = [key for key in gating_expectations() if selected(key[2]) and slow_line(*key) == slow]
    tasks = [Task(entry, mode, dtype) for mode, dtype, entry in lines]  # samples per mode
    workers = settings.env_count(settings.CONFORMANCE_WORKERS, min(2, os.cpu_count() or 1))
    outcomes = WorkerPool(workers=workers, timeout=180).run(tasks)
    return {(o.mode, o.dtype, o.entry): o for o in outcomes}


@pytest.fixture(scope="session")
def conformance_outcomes():
    """{(mode, dtype, entry): Outcome} for every selected gating line of the default run."""
    return _outcomes(slow=False)


@pytest.fixture(scope="session")
def slow_conformance_outcomes():
    """The same for the lines of ``SLOW_EAGER`` (the slow run)."""
    return _outcomes(slow=True)
