"""A bounded fuzz run in the default test run: a fixed seed, a few cases per op, ops
chosen for breadth (arithmetic, division modes, -0.0, indexing, sorting, reductions,
out=, promotion, compiled functions on neuron tensors).

It fails on a wrong value or a crash of an op not listed in
``torchneuron.testing.fuzz.expected.EXPECTED_FAILURES``, and on a listed op that now passes
(remove it from the list: the fuzzer then guards the fix).
"""

from __future__ import annotations

from torchneuron.testing.fuzz.expected import EXPECTED_FAILURES, problems
from torchneuron.testing.fuzz.ops import lookup
from torchneuron.testing.fuzz.pool import FuzzPool, Task
from torchneuron.testing.fuzz.report import format_report

SMOKE_OPS = (
    "add",
    "remainder",
    "floor_divide",
    "relu",
    "index",
    "setitem",
    "sort",
    "argmax",
    "amax",
    "sum",
    "where",
    "cat",
    "add.out",
    "compiled.tensor_constant",
    "compiled.setitem",
    "promotion.true_divide",
    "gather",
)
SEED = 0
EXAMPLES = 3


def test_fuzz_smoke_run_finds_no_new_wrong_value_or_crash():
    tasks = [
        Task(name, lookup(name).family, SEED, EXAMPLES, ("compile", "eager"), 10.0, 5.0)
        for name in SMOKE_OPS
    ]
    # Two workers: the ops are independent and seeded, the results come back in task
    # order, and the run takes half the time on a 2-core machine.
    results = FuzzPool(workers=2, case_timeout=120).run(tasks)
    report = format_report(results, EXPECTED_FAILURES, [])
    assert [r.op for r in results] == list(SMOKE_OPS), report
    assert all(r.cases > 0 for r in results), report
    assert problems(results) == [], report
