"""``out=`` arguments on the neuron device: views as destinations, resizing, refusals.

The destination of ``out=`` may be a view (a slice, a transpose, a strided view) of a
larger tensor; the result must land in the view's elements of the base, with the
view's shape and strides kept, as on the CPU. A destination PyTorch refuses (a dtype
the result cannot be cast to) raises PyTorch's error, without a logged traceback.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


def _slice(device):
    base = torch.zeros(4, 3, device=device)
    return base, base[1:3]


def _transpose(device):
    base = torch.zeros(3, 2, device=device)
    return base, base.t()


def _strided(device):
    base = torch.zeros(12, device=device)
    return base, base[::2].view(2, 3)


DESTINATIONS = {"slice": _slice, "transpose": _transpose, "strided": _strided}
OPS = {
    "add": lambda a, out: torch.add(a, 1.5, out=out),
    "mul": lambda a, out: torch.mul(a, a, out=out),
    "neg": lambda a, out: torch.neg(a, out=out),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("destination", DESTINATIONS)
def test_out_into_a_view_writes_the_views_elements_of_the_base(op, destination):
    a = torch.arange(6.0).view(2, 3) - 2.5
    results = {}
    for device in ("cpu", "neuron"):
        base, view = DESTINATIONS[destination](device)
        OPS[op](a.to(device), view)
        results[device] = (base.cpu(), view.shape, view.stride())
    assert torch.equal(results["neuron"][0], results["cpu"][0])
    assert results["neuron"][1:] == results["cpu"][1:]


def test_an_empty_out_is_resized_like_pytorch():
    a = torch.arange(6.0).view(2, 3)
    out = torch.empty(0).to("neuron")
    torch.add(a.to("neuron"), a.to("neuron"), out=out)
    assert out.shape == (2, 3)
    assert torch.equal(out.cpu(), a + a)


def test_a_rejected_out_argument_raises_pytorchs_error_without_logging_a_traceback(caplog):
    a = torch.ones(2, 3).to("neuron")
    wrong = torch.empty(2, 3, dtype=torch.int64).to("neuron")
    with caplog.at_level("DEBUG"), pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(a, a, out=wrong)
    assert [r for r in caplog.records if r.name.startswith("torch._subclasses")] == []


@pytest.mark.parametrize("destination", DESTINATIONS)
def test_compiled_out_into_a_view_of_a_neuron_tensor_matches_eager_cpu(destination):
    # An out= into a non-contiguous destination is a graph break: the op runs eagerly
    # inside the compiled function, and Dynamo must not try to trace the device's kernel.
    def fn(a, out):
        torch.mul(a, 2, out=out)
        return out

    a = torch.arange(6.0).view(2, 3)
    cpu_base, cpu_view = DESTINATIONS[destination]("cpu")
    expected = fn(a, cpu_view)
    base, view = DESTINATIONS[destination]("neuron")
    torch._dynamo.reset()
    got = torch.compile(fn, backend="neuron")(a.to("neuron"), view)
    assert torch.equal(got.cpu(), expected)
    assert (got.shape, got.stride()) == (expected.shape, expected.stride())
    assert torch.equal(base.cpu(), cpu_base)
