"""The fuzzer itself: it finds a deliberately wrong op, shrinks it to a runnable
reproduction, is reproducible by seed, and survives a worker that segfaults or hangs.

The wrong and crashing ops are the ``selftest.*`` entries of the fuzz registry: a
correct function on the CPU, an injected broken one on the device.
"""

from __future__ import annotations

import pytest
import torch

from torchneuron.testing.fuzz.ops import lookup, select
from torchneuron.testing.fuzz.pool import FuzzPool, Task
from torchneuron.testing.fuzz.runner import fuzz_op


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _task(name: str, examples: int = 3) -> Task:
    return Task(name, "selftest", 0, examples, ("compile", "eager"), 30.0, 10.0)


def test_fuzzer_reports_an_off_by_one_op_as_wrong_with_a_shrunk_reproduction():
    result = fuzz_op(lookup("selftest.off_by_one"), 0, examples=3, modes=("eager",))
    assert result.counts["eager"]["wrong"] >= 1
    (failure,) = result.failures
    assert failure.status == "wrong" and "got 2, expected 1" in failure.detail
    # shrunk to the smallest input: one zero
    assert "torch.tensor([0], dtype=torch.int64, device=device)" in failure.snippet
    scope: dict = {}
    exec(compile(failure.snippet, "<snippet>", "exec"), scope)
    assert torch.equal(scope["expected"], torch.tensor([1]))
    assert torch.equal(scope["got"].cpu(), torch.tensor([2]))


def test_fuzzer_reports_a_lost_negative_zero_as_wrong():
    result = fuzz_op(lookup("selftest.loses_negative_zero"), 0, examples=5, modes=("eager",))
    (failure,) = result.failures
    assert "got 0.0, expected -0.0" in failure.detail


def test_fuzzer_is_reproducible_by_seed():
    op = lookup("selftest.pass")
    seen = []
    for _ in range(2):
        cases = []
        fuzz_op(op, 7, examples=4, modes=("eager",), on_case=cases.append)
        seen.append(cases)
    assert seen[0] == seen[1] and len(seen[0]) == 4
    other = []
    fuzz_op(op, 8, examples=4, modes=("eager",), on_case=other.append)
    assert other != seen[0]


def test_selftest_ops_are_chosen_only_by_name():
    assert not [op for op in select("*") if op.family == "selftest"]
    assert [op.name for op in select("selftest.pass")] == ["selftest.pass"]


def test_pool_survives_a_segfaulting_worker_and_goes_on():
    results = FuzzPool(workers=1, case_timeout=120).run(
        [_task("selftest.segfault"), _task("selftest.off_by_one")]
    )
    crashed, wrong = results
    assert "SIGSEGV" in crashed.crash
    assert crashed.failures[0].status == "crash"
    assert "device_fn = lambda a: __import__('os').kill" in crashed.failures[0].snippet
    assert not wrong.crash and wrong.total("wrong") >= 1


def test_pool_reports_a_hanging_case_as_crash():
    (result,) = FuzzPool(workers=1, case_timeout=4).run([_task("selftest.hang", 1)])
    assert result.crash.startswith("hang")
    assert result.failures[0].status == "crash"


def test_a_difference_in_a_case_with_subnormals_is_counted_as_denormal_not_wrong():
    import torch

    from torchneuron.testing.fuzz.ops import lookup
    from torchneuron.testing.fuzz.runner import Observation, has_subnormals, verdict

    op = lookup("add")
    flushed = Observation(state={"result": torch.tensor([0.0]), "inputs after": []})
    subnormal = Observation(state={"result": torch.tensor([1e-40]), "inputs after": []})
    normal = Observation(state={"result": torch.tensor([1e-30]), "inputs after": []})
    assert has_subnormals(subnormal.state) and not has_subnormals(normal.state)
    assert verdict(subnormal, flushed, op, "eager")[0] == "denormal"
    assert verdict(normal, flushed, op, "eager")[0] == "wrong"
    # float16 subnormals are normal numbers in the float32 the engine computes in
    assert not has_subnormals({"x": torch.tensor([1e-6], dtype=torch.float16)})
