"""Values of a dtype torch-mlir's importer lacks (uint16, uint64) are refused by name.

``torch.hash_tensor`` (a uint64 result) failed with a bare ``KeyError: torch.uint64``.
"""

from __future__ import annotations

import pytest
import torch

from torchneuron.device.fallback import NeuronFallbackError

CASES = {
    "hash_tensor": lambda d: torch.hash_tensor(torch.arange(5.0, device=d)),
}


@pytest.mark.parametrize("case", CASES)
def test_unimportable_dtype_is_refused_by_name_or_falls_back(case, monkeypatch):
    if case == "hash_tensor" and not hasattr(torch, "hash_tensor"):
        pytest.skip("this torch has no hash_tensor")
    expected = CASES[case]("cpu")
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with pytest.raises(NeuronFallbackError) as refused:
        CASES[case]("neuron")
    message = str(refused.value)
    assert "KeyError" not in message
    assert str(expected.dtype) in message
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "0")
    got = CASES[case]("neuron")  # (warns of the fallback)
    assert got.dtype == expected.dtype
    assert torch.equal(got.cpu(), expected)
