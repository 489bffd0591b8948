"""Data-dependent sizes compiled once at their bounds (compiler/bounded.py).

Each function runs on many masks, all-false and all-true among them, natively
(``TORCHNEURON_NO_FALLBACK=1``), every result against PyTorch eager on the CPU, and the
counters say the graph was compiled once whatever the counts.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from torchneuron.compiler import bounded, dynamic
from torchneuron.errors import CpuFallbackWarning


def _settled() -> dict:
    """``dynamic.stats()`` once the background thread has built what calls submitted
    (a new shape runs interpreted while it specializes there)."""
    from torchneuron.compiler import specialize_later

    specialize_later.drain()
    return dynamic.stats()


@pytest.fixture(autouse=True)
def _fresh(native_compile):
    bounded.reset_stats()
    with torch._dynamo.config.patch(
        capture_dynamic_output_shape_ops=True, capture_scalar_outputs=True
    ):
        yield


def _inputs(count: int, shape=(6, 5)):
    """Inputs whose masks (``x > 0``) select from none to all of the elements."""
    generator = torch.Generator().manual_seed(0)
    cases = [-torch.ones(shape), torch.ones(shape)]  # all-false, all-true
    for _ in range(count - 2):
        threshold = torch.rand((), generator=generator).item() * 2 - 1
        cases.append(torch.randn(shape, generator=generator) - threshold)
    return cases


def _equal(got, want) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _equal(g, w)
        return
    got = got.cpu()
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _run_everywhere(function, inputs) -> None:
    compiled = torch.compile(function, backend="neuron", fullgraph=True, dynamic=False)
    for x in inputs:
        _equal(compiled(x.to("neuron")), function(x))


def _selections(x):
    mask = x > 0
    picked = x[mask]
    return (
        torch.nonzero(mask),  # returned at its true size
        picked * 2,
        picked.sum(),
        torch.masked_select(x, mask) + 1,
        torch.where(mask)[1],
        torch.argwhere(mask).float().sum(0),
    )


def test_selections_equal_the_cpu_on_many_masks_with_one_compile():
    _run_everywhere(_selections, _inputs(10))
    assert bounded.stats()["bounded_graphs"] == 1
    assert bounded.stats()["calls"] == 10


def _assignments(x):
    y = x.clone()
    mask = y > 0.3
    y[mask] = y[mask] * 3  # one value per selected element
    z = x.clone()
    z[x < -0.5] = 7.0  # one value for all
    w = x.clone()
    w[x.abs() < 0.2] += x[x.abs() < 0.2]  # accumulated, one value each
    rows = x.clone()
    rows[x[:, 0] > 0] = x[x[:, 0] > 0].flip(1)  # whole rows by a 1-d mask
    return y, z, w, rows


def test_mask_assignment_equals_the_cpu_on_many_masks():
    # what users report miscompiled elsewhere: x[mask] = values, on masks of every count
    _run_everywhere(_assignments, _inputs(12))
    assert bounded.stats()["bounded_graphs"] == 1


def test_a_reduction_over_a_selection_is_masked():
    # amax/amin/softmax over the selected elements: the filler must not win
    def f(x):
        picked = x[x < 0]
        return picked.amin(), (picked - 5).amax(), torch.softmax(picked, 0), picked.cumsum(0)

    _run_everywhere(f, _inputs(6)[2:] + [torch.full((6, 5), -2.0)])


def test_unique_with_inverse_and_counts_equals_the_cpu():
    def f(x):
        rounded = (x * 2).round()
        values, inverse, counts = torch.unique(rounded, return_inverse=True, return_counts=True)
        consecutive, runs = torch.unique_consecutive(rounded.flatten(), return_counts=True)
        return values, inverse, counts, consecutive, runs, torch.unique(rounded).sum()

    _run_everywhere(f, _inputs(6) + [torch.zeros(6, 5)])
    assert bounded.stats()["bounded_graphs"] == 1


def test_a_selection_dynamo_requires_non_empty_raises_like_the_cpu():
    def f(x):
        return x[x > 0].amax()

    compiled = torch.compile(f, backend="neuron", fullgraph=True, dynamic=False)
    assert compiled(torch.ones(3, 2).to("neuron")).item() == 1.0
    with pytest.raises(RuntimeError):
        f(-torch.ones(3, 2))
    with pytest.raises(RuntimeError, match="u\\d+ = 0"):
        compiled(-torch.ones(3, 2).to("neuron"))


def test_a_mask_and_values_of_different_counts_are_refused_at_run_time():
    def f(x, y):
        z = x.clone()
        z[x > 0] = y[y > 0]
        return z

    compiled = torch.compile(f, backend="neuron", fullgraph=True, dynamic=False)
    x = torch.tensor([1.0, -1.0, 2.0, -2.0])
    y = torch.tensor([5.0, 6.0, -1.0, -1.0])
    _equal(compiled(x.to("neuron"), y.to("neuron")), f(x, y))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        compiled(x.to("neuron"), torch.tensor([5.0, 6.0, 7.0, -1.0]).to("neuron"))


def test_an_op_without_a_bound_is_refused_by_name(monkeypatch):
    def f(x):
        return torch.bincount((x.abs() * 3).long().flatten())

    x = torch.randn(4, 3)
    compiled = torch.compile(f, backend="neuron", fullgraph=True, dynamic=False)
    with pytest.raises(Exception, match="bincount.*no bound from its input's size"):
        compiled(x.to("neuron"))
    assert bounded.stats()["refusals"] == 1
    # with the fallback on, the graph runs on the CPU with a warning naming why
    monkeypatch.delenv("TORCHNEURON_NO_FALLBACK")
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="neuron", fullgraph=True, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _equal(compiled(x.to("neuron")), f(x))
    assert any(
        issubclass(w.category, CpuFallbackWarning) and "bincount" in str(w.message) for w in caught
    )


def test_training_through_a_selection_equals_the_cpu():
    # the forward compiled once at its bound; the backward (a mask assignment of the
    # selection's gradient) padded to buckets of the count, not compiled per count
    from torchneuron.compiler import dynamic

    dynamic.reset_stats()
    weight = torch.randn(6, 5, generator=torch.Generator().manual_seed(3))
    on_cpu = torch.nn.Parameter(weight.clone())
    on_device = torch.nn.Parameter(weight.clone().to("neuron"))

    def loss(x, w):
        h = x * w
        return h[h > 0].pow(2).sum() + h.sum()

    compiled = torch.compile(loss, backend="neuron", fullgraph=True, dynamic=False)
    for x in _inputs(6):
        on_cpu.grad = on_device.grad = None
        want = loss(x, on_cpu)
        want.backward()
        got = compiled(x.to("neuron"), on_device)
        got.backward()
        _equal(got, want)
        _equal(on_device.grad, on_cpu.grad)
    assert bounded.stats()["bounded_graphs"] == 1
    # counts 0..30 fall into at most the auto ladder's buckets up to 30
    assert _settled()["specializations"] <= 10
