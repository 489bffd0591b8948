"""Sequence ops with out= keep the out tensor's shape when its numel fits, as on the CPU.

``torch.arange(12., out=t.view(3, 4))`` resized the view to [12] on the device.
"""

from __future__ import annotations

import warnings

import pytest
import torch

CASES = {
    "arange-into-a-view": lambda d: torch.arange(12.0, out=torch.empty(12, device=d).view(3, 4)),
    "arange-into-a-transpose": lambda d: torch.arange(12.0, out=torch.empty(4, 3, device=d).t()),
    "arange-into-0d": lambda d: torch.arange(1.0, out=torch.empty((), device=d)),
    "arange-start-int64": lambda d: torch.arange(
        2, 14, 1, out=torch.empty(3, 4, dtype=torch.long, device=d)
    ),
    "arange-numel-mismatch-resizes": lambda d: torch.arange(
        12.0, out=torch.empty(6, device=d).view(2, 3)
    ),
    "linspace": lambda d: torch.linspace(0, 1, 12, out=torch.empty(3, 4, device=d)),
    "logspace": lambda d: torch.logspace(0, 1, 12, out=torch.empty(3, 4, device=d)),
    "linspace-tensor-ends": lambda d: torch.linspace(
        torch.tensor(0.0, device=d),
        torch.tensor(1.0, device=d),
        12,
        out=torch.empty(2, 6, device=d),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_sequence_out_keeps_the_cpu_shape_and_values(case, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the mismatch case warns of the resize, as the CPU)
        expected = CASES[case]("cpu")
        got = CASES[case]("neuron")
    assert got.shape == expected.shape
    assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected)
