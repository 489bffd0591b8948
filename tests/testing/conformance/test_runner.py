"""The conformance machinery itself: expectations, worker isolation, report."""

import os

import pytest

from torchneuron.testing.conformance import expectations, report
from torchneuron.testing.conformance.opinfo import Outcome, run_entry
from torchneuron.testing.conformance.pool import Task, WorkerPool, resident_mib

# -- expectations --------------------------------------------------------------------


def _outcome(status, entry="abs", reason="why"):
    return Outcome(entry, "compile", "float32", status, "" if status == "pass" else reason)


def test_expectation_lines_round_trip_and_reject_malformed_lines():
    lines = [
        expectations.expectation_of(_outcome(s, f"op{i}"))
        for i, s in enumerate(("pass", "fallback", "fail", "skip"))
    ]
    text = expectations.format_expectations(lines)
    assert set(expectations.parse(text).values()) == set(lines)
    assert "compile float32 op1 xfail fallback: why" in text
    for bad in (
        "compile float32 abs",
        "compile float32 abs xfail fallback",
        "compile float32 abs xfail maybe: x",
        "sideways float32 abs pass",
        "compile float32 abs pass\ncompile float32 abs pass",
    ):
        with pytest.raises(expectations.ExpectationsError, match="<expectations>:"):
            expectations.parse(bad)


@pytest.mark.parametrize(
    "line,outcome,problem",
    [
        ("pass", _outcome("pass"), None),
        ("pass", _outcome("fallback"), "regressed"),
        ("xfail fallback: x", _outcome("pass"), "passes now"),
        ("xfail fallback: x", _outcome("error"), None),  # both loud: allowed
        ("xfail fallback: x", _outcome("fail"), "expects fallback"),  # wrong answers are listed
        ("xfail crash: x", _outcome("crash"), None),
        ("xfail crash: x", _outcome("error"), "it improved"),
        ("skip: x", _outcome("pass"), "expected a skip"),
        ("xfail error: x", _outcome("skip"), "skipped now"),
    ],
)
def test_violations_keep_the_file_true(line, outcome, problem):
    (expected,) = expectations.parse(f"compile float32 abs {line}").values()
    found = expectations.violation(expected, outcome)
    assert (found is None) if problem is None else (problem in found)
    assert "no expectation line" in expectations.violation(None, outcome)


# -- running entries -----------------------------------------------------------------


def test_run_entry_in_process_compile_mode_passes_a_simple_op():
    outcome = run_entry("abs", "compile", "float32", samples=1)
    assert (outcome.status, outcome.samples) == ("pass", 1), outcome


def test_compile_mode_compiles_the_samples_together_and_alone_only_where_that_fails(
    monkeypatch,
):
    """A pass comes from one graph of both samples; any other outcome (here linalg.eig's
    fallback) from each sample compiled alone, so its reason is the sample's own."""
    from torchneuron.testing.conformance import opinfo

    alone = []
    compile_sample = opinfo._compile_sample

    def counted(op, sample):
        alone.append(op.name)
        return compile_sample(op, sample)

    monkeypatch.setattr(opinfo, "_compile_sample", counted)
    passed = run_entry("mul", "compile", "float32")
    assert (passed.status, passed.samples, alone) == ("pass", 2, []), passed
    fell_back = run_entry("linalg.eig", "compile", "float32")
    assert (fell_back.status, fell_back.samples) == ("fallback", 2), fell_back
    assert alone == ["linalg.eig", "linalg.eig"]
    assert "no lowering to StableHLO for aten.linalg_eig.default" in fell_back.reason


def test_run_entry_runs_sparse_and_complex_samples_in_eager_mode():
    # neg has no sparse sample generator: its dense samples are converted (to_sparse_csr)
    sparse = run_entry("neg", "eager", "sparse_csr.float32", samples=1)
    assert (sparse.status, sparse.samples, sparse.dtype) == ("pass", 1, "sparse_csr.float32")
    assert run_entry("neg", "compile", "sparse_coo.float32", samples=1).reason.startswith(
        "Dynamo cannot capture it"
    )
    unsupported = run_entry("cos", "eager", "sparse_coo.float32")
    assert unsupported.status == "skip" and "does not support torch.sparse_coo" in (
        unsupported.reason
    )
    complex_mul = run_entry("mul", "eager", "complex64", samples=1)
    assert (complex_mul.status, complex_mul.dtype) == ("pass", "complex64"), complex_mul
    with pytest.raises(ValueError, match="unknown dtype"):
        run_entry("neg", "eager", "sparse_bsr.float32")


def test_run_entry_skips_ops_without_the_dtype_and_random_ops():
    assert run_entry("bitwise_and", "compile", "float32").status == "skip"
    random = run_entry("randn", "compile", "float32")
    assert random.status == "skip" and "random" in random.reason


def test_pool_survives_a_segfault_and_a_hang_and_keeps_order():
    tasks = [
        Task("selftest.pass", "compile", "float32"),
        Task("selftest.crash", "compile", "float32"),
        Task("selftest.hang", "compile", "float32"),
        Task("selftest.pass", "eager", "float32"),
    ]
    outcomes = WorkerPool(workers=2, timeout=6).run(tasks)
    assert [o.status for o in outcomes] == ["pass", "crash", "timeout", "pass"]
    assert [o.mode for o in outcomes] == ["compile", "compile", "compile", "eager"]
    assert "SIGSEGV" in outcomes[1].reason


class _WornWorker:
    def __init__(self, tasks_done: int, mib: float | None):
        self.tasks_done, self.mib = tasks_done, mib

    def resident_mib(self) -> float | None:
        return self.mib


def test_a_worker_is_recycled_at_its_memory_bound_or_its_entry_count():
    pool = WorkerPool(max_tasks=3, max_resident_mib=100.0)
    assert not pool.worn(_WornWorker(2, 99.0))
    assert pool.worn(_WornWorker(2, 100.0))
    assert pool.worn(_WornWorker(3, 10.0))
    assert not pool.worn(_WornWorker(2, None))  # memory unreadable: the count alone
    assert pool.worn(_WornWorker(3, None))
    assert resident_mib(os.getpid()) > 50  # this process holds torch
    assert resident_mib(2**31 - 1) is None  # no such process


# -- report --------------------------------------------------------------------------


def test_report_counts_rates_and_groups_causes():
    outcomes = [
        _outcome("pass", "a"),
        _outcome("pass", "b"),
        _outcome("skip", "c"),
        _outcome(
            "fallback", "d", "no lowering to StableHLO for aten.foo.default with inputs (f32[2])"
        ),
        _outcome(
            "fallback", "e", "no lowering to StableHLO for aten.foo.default with inputs (f32[3])"
        ),
    ]
    text = report.format_report(outcomes)
    row = next(line for line in text.splitlines() if line.startswith("| compile"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["compile", "float32", "5", "2"]
    assert cells[-2:] == ["50.0%", "40.0%"]
    assert "2  no lowering for aten.foo.default" in text
