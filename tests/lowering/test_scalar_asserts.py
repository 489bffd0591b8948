"""Assertions on ``x.item()`` values under torch.compile: run-time checks in the program.

They reached torch-mlir as ``torch.runtime.assert`` over scalar ``torch.constant`` ops,
which it cannot lower; the error then named an unrelated aten op beside them.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torchneuron.lowering import UnsupportedOpError, prepare_graph


@pytest.fixture(autouse=True)
def scalar_outputs(monkeypatch, fresh_dynamo):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        yield


def _positives_at_most(limit):
    def fn(a):
        n = (a > 0).sum().item()
        torch._check(n >= 0)
        torch._check(n + 1 <= limit)
        return a * 2

    return fn


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_item_assertions_that_hold_compile_natively(device):
    fn = _positives_at_most(300)
    a = torch.randn(16, 16)
    got = torch.compile(fn, backend="neuron")(a.to(device))
    assert got.device.type == device
    assert torch.equal(got.cpu(), fn(a))


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_item_assertion_that_fails_raises_at_run_time_as_eager(device):
    fn = _positives_at_most(3)
    a = torch.ones(4, 4)
    with pytest.raises(RuntimeError):
        fn(a)
    with pytest.raises(RuntimeError, match="Runtime assertion failed for expression u0"):
        torch.compile(fn, backend="neuron")(a.to(device))


def test_assertion_over_something_else_is_refused_naming_it():
    # a condition that is no comparison of item() values: refused, the assert named
    def fn(a):
        n = (a > 0).sum().item()
        torch.ops.aten._assert_scalar.default(n % 2 == 0, "custom")
        return a * 2

    gm = make_fx(fn, tracing_mode="symbolic")(torch.randn(3))
    with pytest.raises(UnsupportedOpError, match=r"aten\._assert_scalar.*\n.*'custom'"):
        prepare_graph(gm, symbolic=True)
