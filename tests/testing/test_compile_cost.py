"""Skipping Dynamo's guard-latency measurement leaves the guards themselves working."""

import torch
from torch._dynamo import guards
from torch._dynamo.testing import CompileCounter

from torchneuron.testing import compile_cost


def test_the_suite_skips_the_measurement_and_guards_still_decide_recompiles():
    # tests/conftest.py skipped it for this process
    assert compile_cost.skip_guard_latency_profiling() is True
    assert guards.profile_guard_manager is compile_cost._unmeasured
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(lambda x: x * 2 + 1, backend=counter, dynamic=False)
    for shape in ((2,), (2,), (3,), (3,), (2,)):
        x = torch.ones(shape)
        torch.testing.assert_close(compiled(x), x * 2 + 1)
    # one compile per shape: a changed shape fails the guards, a seen one passes them
    assert counter.frame_count == 2
