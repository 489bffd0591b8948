"""Advanced indexing of a neuron tensor takes index tensors that live on the CPU.

PyTorch moves CPU index tensors to the indexed tensor's device (``cuda_t[cpu_idx]``
works); the neuron device raised "Expected all tensors to be on the same device".
"""

from __future__ import annotations

import pytest
import torch

INDEX = torch.tensor([2, 0, -1])
MASK = torch.tensor([True, False, True])

CASES = {
    "getitem": lambda a: a[INDEX],
    "getitem-two-lists": lambda a: a[INDEX, INDEX],
    "getitem-mask": lambda a: a[MASK],
    "setitem": lambda a: a.__setitem__(INDEX, 5.0) or a,
    "setitem-mask": lambda a: a.__setitem__(MASK, 7.0) or a,
    "index_put_-accumulate": lambda a: a.index_put_(
        (torch.tensor([0, 0, 1]),), torch.tensor(1.0), accumulate=True
    ),
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_indexing_a_neuron_tensor_with_cpu_indices_matches_pytorch(case):
    base = torch.arange(12.0).view(3, 4)
    got = CASES[case](base.clone().to("neuron"))
    assert got.device.type == "neuron"
    assert torch.equal(got.cpu(), CASES[case](base.clone()))


def test_index_select_with_a_cpu_index_still_names_both_devices():
    # index_select is not advanced indexing: PyTorch requires one device there.
    with pytest.raises(RuntimeError, match="same device"):
        torch.arange(4.0).to("neuron").index_select(0, torch.tensor([1]))
