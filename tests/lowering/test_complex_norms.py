"""Norms of complex tensors, natively in both modes (a regression: they were refused
with "no real-pair rule" once linalg_vector_norm stopped decomposing before the
complex rules saw it)."""

from __future__ import annotations

import pytest
import torch

CASES = {
    "linalg.norm": lambda t: torch.linalg.norm(t),
    "linalg.norm fro": lambda t: torch.linalg.norm(t, "fro"),
    "vector_norm inf": lambda t: torch.linalg.vector_norm(t, ord=float("inf"), dim=0),
    "norm p=3": lambda t: torch.norm(t, p=3),
    "norm p=1 keepdim": lambda t: torch.norm(t, p=1, dim=1, keepdim=True),
    "vector_norm dtype": lambda t: torch.linalg.vector_norm(t, dtype=torch.complex128),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_complex_norms_match_the_cpu(monkeypatch, name, mode):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    z = torch.randn(3, 4, dtype=torch.complex64, generator=torch.Generator().manual_seed(5))
    norm = CASES[name]
    expected = norm(z)
    if mode == "eager":
        got = norm(z.to("neuron")).cpu()
    else:
        torch._dynamo.reset()
        got = torch.compile(norm, backend="neuron")(z)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
