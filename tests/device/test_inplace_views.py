"""In-place view ops change a neuron tensor's sizes and strides, never its data.

``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_`` all end in ``as_strided_``; it used
to run as a compiled op that rewrote the values into a fresh contiguous layout, so
writes through the view after ``v.t_()`` landed in the wrong elements of the base.
"""

from __future__ import annotations

import pytest
import torch

CASES = {
    "t_": lambda v: v.t_(),
    "transpose_": lambda v: v.transpose_(0, 1),
    "as_strided_": lambda v: v.as_strided_((2, 2), (1, 3), 1),
    "unsqueeze_-then-squeeze_": lambda v: v.unsqueeze_(1).squeeze_(1),
    "swapdims_": lambda v: v.swapdims_(1, 0),
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_inplace_view_op_on_a_view_writes_through_to_the_base(case):
    results = {}
    for device in ("cpu", "neuron"):
        base = torch.zeros(2, 3, device=device)
        view = base.view(2, 3)
        CASES[case](view)
        view[1, 0] = 1.0
        view[0, 1] = 2.0
        results[device] = (base.cpu(), view.cpu(), view.shape, view.stride(), view.storage_offset())
    cpu, neuron = results["cpu"], results["neuron"]
    assert torch.equal(neuron[0], cpu[0])
    assert torch.equal(neuron[1], cpu[1])
    assert neuron[2:] == cpu[2:]


def test_gradient_flows_through_an_inplace_transpose():
    grads = {}
    for device in ("cpu", "neuron"):
        x = torch.arange(6.0, device=device).view(2, 3).requires_grad_()
        y = x.clone()
        y.transpose_(0, 1)
        (y * torch.arange(6.0, device=device).view(3, 2)).sum().backward()
        grads[device] = x.grad.cpu()
    assert torch.equal(grads["neuron"], grads["cpu"])
