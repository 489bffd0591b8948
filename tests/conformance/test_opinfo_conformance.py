"""PyTorch's OpInfo database on the neuron backend, held to tests/conformance/expectations.txt.

Every entry runs (in crash-isolating worker processes) in compile mode and in
eager mode, float32, and must do what its expectation line says: a ``pass``
that regresses fails, and so does an ``xfail`` that starts passing (mark it
``pass``), so the file stays true. A wrong answer, crash or timeout must be
named by its line. Refresh after intended changes and review the diff:

    python -m torchneuron.conformance --dtype float32 --update-expectations
"""

import pytest

from torchneuron.conformance import expectations
from torchneuron.conformance.opinfo import MODES

from .conftest import DEFAULT_EXPECTATIONS, GATING_DTYPE, gating_expectations, selected

_LINES = sorted(gating_expectations().values(), key=lambda e: (e.mode, e.entry))


def test_expectations_cover_every_opinfo_entry_in_both_modes():
    from torchneuron.conformance.opinfo import entry_names

    listed = set(gating_expectations())
    wanted = {(mode, GATING_DTYPE, entry) for mode in MODES for entry in entry_names()}
    missing, stale = sorted(wanted - listed), sorted(listed - wanted)
    assert not missing and not stale, (
        f"{DEFAULT_EXPECTATIONS} is out of date: {len(missing)} entries without a line "
        f"(e.g. {missing[:3]}), {len(stale)} lines for entries PyTorch no longer has "
        f"(e.g. {stale[:3]}); refresh it with --update-expectations"
    )


@pytest.mark.parametrize("expected", _LINES, ids=[f"{e.mode}-{e.entry}" for e in _LINES])
def test_entry_does_what_its_expectation_says(expected, conformance_outcomes):
    if not selected(expected.entry):
        pytest.skip("not selected by TORCHNEURON_CONFORMANCE_ENTRIES")
    outcome = conformance_outcomes[expected.key]
    problem = expectations.violation(expected, outcome)
    assert problem is None, problem
