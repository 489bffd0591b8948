"""Skipping Dynamo's guard-latency measurement leaves the guards themselves working."""

import torch
from torch._dynamo import guards
from torch._dynamo.testing import CompileCounter

from torchneuron.testing import compile_cost


def test_the_suite_skips_the_measurement_dynamo_would_make_per_compile(monkeypatch, fresh_dynamo):
    # tests/conftest.py skipped it in this process before any test ran
    assert guards.profile_guard_manager is compile_cost._unmeasured
    # Dynamo calls the name the skip replaces, once per compile
    calls = []
    monkeypatch.setattr(guards, "profile_guard_manager", lambda *a: calls.append(a) or 0.0)
    compiled = torch.compile(lambda x: x - 1, backend=CompileCounter(), dynamic=False)
    compiled(torch.ones(2))
    compiled(torch.ones(3))
    assert len(calls) == 2


def test_guards_still_decide_recompiles(fresh_dynamo):
    assert compile_cost.skip_guard_latency_profiling() is True
    counter = CompileCounter()
    compiled = torch.compile(lambda x: x * 2 + 1, backend=counter, dynamic=False)
    for shape in ((2,), (2,), (3,), (3,), (2,)):
        x = torch.ones(shape)
        torch.testing.assert_close(compiled(x), x * 2 + 1)
    # one compile per shape: a changed shape fails the guards, a seen one passes them
    assert counter.frame_count == 2
