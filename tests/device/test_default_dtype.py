"""``torch.set_default_dtype`` decides result types on the device as on the CPU.

``int / int``, ``int + 5.5``, ``sqrt(int)`` and float factory ops take the default
dtype. Compiled programs are cached per call signature: a program made under
float32 was reused after the default became float64 (eager per-op cache and the
compiled-graph cache alike), returning float32.
"""

from __future__ import annotations

import pytest
import torch


def _ops(i):
    return (i / i, i + 5.5, torch.sqrt(i), torch.arange(2.0, device=i.device) + 0.25)


@pytest.fixture(autouse=True)
def no_fallback_and_default_restored(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    saved = torch.get_default_dtype()
    yield
    torch.set_default_dtype(saved)


def _check(got, expected):
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        assert torch.equal(g.cpu(), e)


def test_eager_result_dtype_follows_a_changed_default_dtype():
    i = torch.tensor([1, 2, 3])
    _check(_ops(i.to("neuron")), _ops(i))  # float32 programs now in the cache
    torch.set_default_dtype(torch.float64)
    _check(_ops(i.to("neuron")), _ops(i))


def test_compiled_result_dtype_follows_a_changed_default_dtype():
    i = torch.tensor([1, 2, 3])
    torch._dynamo.reset()
    compiled = torch.compile(_ops, backend="neuron")
    _check(compiled(i), _ops(i))
    torch.set_default_dtype(torch.float64)
    _check(compiled(i), _ops(i))
