"""PyTorch's OpInfo database on the neuron backend, held to tests/testing/conformance/expectations.txt.

Every entry runs (in crash-isolating worker processes) in compile mode and in
eager mode, float32 (the eager lines of ``conftest.SLOW_EAGER``, a few long unrolled
programs whose compile-mode lines and named fast tests run by default, in the slow
run only); the entries that support sparse layouts run with COO and CSR
inputs; the gated complex entries (``conftest.GATED_COMPLEX``) run in complex64.
Each must do what its expectation line says: a ``pass`` that regresses fails, and
so does an ``xfail`` that starts passing (mark it ``pass``), so the file stays true.
A wrong answer, crash or timeout must be named by its line. Refresh after intended
changes and review the diff:

    python -m torchneuron.conformance --dtype float32 --update-expectations
    python -m torchneuron.conformance --dtype sparse_coo.float32 --dtype sparse_csr.float32 \\
        --update-expectations
    python -m torchneuron.conformance --dtype complex64 --update-expectations \
        --entries "$(python -c 'from tests.conformance.conftest import GATED_COMPLEX; \
print(",".join(GATED_COMPLEX))')"
"""

import pytest

from torchneuron.testing.conformance import expectations
from torchneuron.testing.conformance.opinfo import MODES

from .conftest import (
    COMPLEX_DTYPE,
    DEFAULT_EXPECTATIONS,
    GATING_DTYPE,
    SLOW_EAGER,
    SPARSE_VARIANTS,
    complex_gated,
    gating_expectations,
    selected,
    slow_line,
)

_ALL = sorted(gating_expectations().values(), key=lambda e: (e.mode, e.dtype, e.entry))
_LINES = [e for e in _ALL if not slow_line(e.mode, e.dtype, e.entry)]
_SLOW_LINES = [e for e in _ALL if slow_line(e.mode, e.dtype, e.entry)]


def _id(e) -> str:
    return f"{e.mode}-{e.entry}" if e.dtype == GATING_DTYPE else f"{e.mode}-{e.dtype}-{e.entry}"


def _wanted_lines() -> set:
    from torchneuron.testing.conformance.opinfo import op_database
    from torchneuron.testing.conformance.sparse_samples import split_variant, supports

    wanted = set()
    for entry, op in op_database().items():
        dtypes = [GATING_DTYPE]
        if complex_gated(entry):
            dtypes.append(COMPLEX_DTYPE)
        dtypes += [v for v in SPARSE_VARIANTS if supports(op, split_variant(v)[0])]
        wanted |= {(mode, dtype, entry) for mode in MODES for dtype in dtypes}
    return wanted


def test_expectations_cover_every_gating_line_in_both_modes():
    listed, wanted = set(gating_expectations()), _wanted_lines()
    missing, stale = sorted(wanted - listed), sorted(listed - wanted)
    assert not missing and not stale, (
        f"{DEFAULT_EXPECTATIONS} is out of date: {len(missing)} entries without a line "
        f"(e.g. {missing[:3]}), {len(stale)} lines for entries PyTorch no longer has or "
        f"that are not gating (e.g. {stale[:3]}); refresh it with --update-expectations"
    )


def _holds(expected, outcomes) -> None:
    if not selected(expected.entry):
        pytest.skip("not selected by TORCHNEURON_CONFORMANCE_ENTRIES")
    problem = expectations.violation(expected, outcomes[expected.key])
    assert problem is None, problem


@pytest.mark.parametrize("expected", _LINES, ids=[_id(e) for e in _LINES])
def test_entry_does_what_its_expectation_says(expected, conformance_outcomes):
    _holds(expected, conformance_outcomes)


# slow: conftest.SLOW_EAGER names, per line, the fast tests that cover it
@pytest.mark.slow
@pytest.mark.parametrize("expected", _SLOW_LINES, ids=[_id(e) for e in _SLOW_LINES])
def test_long_eager_entry_does_what_its_expectation_says(expected, slow_conformance_outcomes):
    _holds(expected, slow_conformance_outcomes)


def test_the_slow_eager_lines_are_covered_by_passing_lines_of_the_default_run():
    """Every ``SLOW_EAGER`` entry has an eager line, and its compile-mode line is a pass of
    the default run, as are the eager lines ``SLOW_EAGER`` names for LU (a renamed or
    dropped entry must not leave its name there covering nothing)."""
    lines = gating_expectations()
    default = {e.key for e in _LINES}
    covering = [("compile", GATING_DTYPE, entry) for entry in SLOW_EAGER]
    covering += [("eager", GATING_DTYPE, entry) for entry in ("linalg.inv", "linalg.solve_ex")]
    for key in covering:
        assert key in default and lines[key].kind == "pass", key
    assert {e.entry for e in _SLOW_LINES} == set(SLOW_EAGER)
    assert all(e.mode == "eager" for e in _SLOW_LINES)
