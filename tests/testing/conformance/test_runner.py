"""The conformance machinery itself: comparison, expectations, worker isolation, report."""

import math

import pytest
import torch

from torchneuron.testing.conformance import expectations, report
from torchneuron.testing.conformance.compare import Mismatch, check_close
from torchneuron.testing.conformance.opinfo import Outcome, run_entry
from torchneuron.testing.conformance.pool import Task, WorkerPool

# -- comparison ----------------------------------------------------------------------


def test_close_values_pass_and_far_ones_name_the_worst_element():
    expected = torch.tensor([1.0, 2.0, 3.0])
    check_close(expected * (1 + 5e-5), expected)
    with pytest.raises(Mismatch, match=r"1 of 3 elements differ.*worst: 3\.1 vs 3"):
        check_close(torch.tensor([1.0, 2.0, 3.1]), expected)


def test_bfloat16_tolerance_is_two_rounding_steps():
    expected = torch.tensor([1.0, 100.0], dtype=torch.bfloat16)
    check_close(torch.tensor([1.0078125, 101.0], dtype=torch.bfloat16), expected)
    with pytest.raises(Mismatch):
        check_close(torch.tensor([1.0, 104.0], dtype=torch.bfloat16), expected)


def test_nan_inf_dtype_shape_and_structure_are_checked():
    check_close(torch.tensor([math.nan, math.inf]), torch.tensor([math.nan, math.inf]))
    with pytest.raises(Mismatch, match="NaN"):
        check_close(torch.tensor([math.nan]), torch.tensor([1.0]))
    with pytest.raises(Mismatch, match="infinities"):
        check_close(torch.tensor([-math.inf]), torch.tensor([math.inf]))
    with pytest.raises(Mismatch, match="dtype"):
        check_close(torch.tensor([1], dtype=torch.int32), torch.tensor([1]))
    with pytest.raises(Mismatch, match="shape"):
        check_close(torch.zeros(2, 1), torch.zeros(2))
    with pytest.raises(Mismatch, match="structure"):
        check_close((torch.zeros(1),), (torch.zeros(1), torch.zeros(1)))
    with pytest.raises(Mismatch, match="elements differ"):
        check_close(torch.tensor([1, 2]), torch.tensor([1, 3]))


def test_metadata_only_comparison_ignores_values():
    check_close(torch.ones(3), torch.zeros(3), values=False)
    with pytest.raises(Mismatch, match="shape"):
        check_close(torch.ones(2), torch.zeros(3), values=False)


def test_complex_values_are_compared_by_part_relative_to_the_magnitude():
    expected = torch.tensor([1000 + 1e-3j, 1 + 1j])
    # the imaginary part is off by 5e-3, small against |z| = 1000 (rtol 1e-4 of it is 0.1)
    check_close(torch.tensor([1000 + 6e-3j, 1 + 1j]), expected)
    with pytest.raises(Mismatch, match="1 of 4 elements differ"):
        check_close(torch.tensor([1000 + 1e-3j, 1 + 1.001j]), expected)
    half = expected.to(torch.complex32)
    check_close(half, half)
    with pytest.raises(Mismatch, match="dtype"):
        check_close(expected, half)


def test_sparse_results_need_the_layout_and_the_dense_value():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    coo = dense.to_sparse()
    uncoalesced = torch.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], [1.0, 1.0, 3.0], (2, 2))
    check_close(coo, uncoalesced)  # the same dense value
    with pytest.raises(Mismatch, match="layout"):
        check_close(dense.to_sparse_csr(), coo)
    with pytest.raises(Mismatch, match="layout"):
        check_close(dense, coo)
    with pytest.raises(Mismatch, match="elements differ"):
        check_close((dense * 2).to_sparse_csr(), dense.to_sparse_csr())


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
    outcomes = WorkerPool(workers=2, timeout=15).run(tasks)
    assert [o.status for o in outcomes] == ["pass", "crash", "timeout", "pass"]
    assert [o.mode for o in outcomes] == ["compile", "compile", "compile", "eager"]
    assert "SIGSEGV" in outcomes[1].reason


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
