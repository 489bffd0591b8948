"""Norms of complex tensors, natively in both modes (a regression: they were refused
with "no real-pair rule" once linalg_vector_norm stopped decomposing before the
complex rules saw it)."""

from __future__ import annotations

import pytest
import torch

CASES = {
    "linalg.norm": lambda t: torch.linalg.norm(t),
    "norm p=3, inf over a dim": lambda t: (
        torch.norm(t, p=3),
        torch.linalg.vector_norm(t, ord=float("inf"), dim=0),
    ),
    "norm p=1 keepdim, dtype": lambda t: (
        torch.norm(t, p=1, dim=1, keepdim=True),
        torch.linalg.vector_norm(t, dtype=torch.complex128),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_complex_norms_match_the_cpu(monkeypatch, name, mode):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    z = torch.randn(3, 4, dtype=torch.complex64, generator=torch.Generator().manual_seed(5))
    norm = CASES[name]
    expected = norm(z)
    if mode == "eager":
        got = torch.utils._pytree.tree_map(lambda t: t.cpu(), norm(z.to("neuron")))
    else:
        torch._dynamo.reset()
        got = torch.compile(norm, backend="neuron")(z)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)  # dtypes included
