"""Symmetric eigendecomposition by parallel Jacobi sweeps (lowering/rules/eigen.py),
natively in both modes, against LAPACK (float64) on hard and easy spectra."""

from __future__ import annotations

import pytest
import torch

from torchneuron.lowering.rules.eigen import EIGH_LIMIT, symmetric_eigen


def _spectrum_case(kind: str, n: int, batch=(3,)) -> torch.Tensor:
    generator = torch.Generator().manual_seed(n)
    if kind == "random":
        a = torch.randn(*batch, n, n, generator=generator)
        return a + a.mT
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    if kind == "repeated":  # two eigenvalues, each of multiplicity ~n/2
        d = torch.tensor([1.0] * (n // 2) + [2.0] * (n - n // 2), dtype=torch.float64)
    else:  # graded: nine orders of magnitude
        d = torch.logspace(-6, 3, n, dtype=torch.float64)
    a = (q * d) @ q.T
    return ((a + a.T) / 2).float().expand(*batch, n, n).clone()


def _check(a: torch.Tensor, values: torch.Tensor, vectors: torch.Tensor) -> None:
    a64, w, v = a.double(), values.double().cpu(), vectors.double().cpu()
    norm = torch.linalg.matrix_norm(a64, ord=2).unsqueeze(-1)
    n = a.shape[-1]
    # ascending, as LAPACK's, within 1e-5 of ||A|| (float32's rounding of A itself
    # moves eigenvalues by ~6e-8 ||A||)
    assert torch.all(w[..., 1:] >= w[..., :-1])
    assert ((w - torch.linalg.eigvalsh(a64)).abs() <= 1e-5 * norm).all()
    residual = (a64 @ v - v * w.unsqueeze(-2)).abs().amax(-2)
    assert (residual <= 1e-5 * norm).all()
    assert ((v.mT @ v - torch.eye(n, dtype=torch.float64)).abs() <= 1e-5).all()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 31, 32])
@pytest.mark.parametrize("kind", ["random", "repeated", "graded"])
def test_the_algorithm_matches_lapack(kind, n):
    # the rule's function itself, on the CPU: sizes past the device's limit included
    a = _spectrum_case(kind, n)
    _check(a, *symmetric_eigen(a))


@pytest.mark.parametrize("n", [3, 6])
def test_eager_eigh_is_native(monkeypatch, n):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = _spectrum_case("random", n, batch=(2,))
    values, vectors = torch.linalg.eigh(a.to("neuron"))
    assert values.device.type == "neuron"
    _check(a, values, vectors)
    torch.testing.assert_close(
        torch.linalg.eigvalsh(a.to("neuron"), UPLO="U").cpu(),
        torch.linalg.eigvalsh(a, UPLO="U"),
        rtol=1e-5,
        atol=1e-5,
    )


def test_only_the_named_triangle_is_read(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = _spectrum_case("random", 4, batch=())
    noisy = a + torch.triu(torch.full_like(a, 100.0), 1)  # garbage above the diagonal
    torch.testing.assert_close(
        torch.linalg.eigvalsh(noisy.to("neuron"), UPLO="L").cpu(),
        torch.linalg.eigvalsh(noisy, UPLO="L"),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.usefixtures("fresh_dynamo")
def test_compiled_eigh_is_native(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")

    def spectrum(a):
        values, vectors = torch.linalg.eigh(a)
        return values, vectors @ torch.diag_embed(values) @ vectors.mT  # A rebuilt

    a = _spectrum_case("graded", 5, batch=(2,))
    values, rebuilt = torch.compile(spectrum, backend="neuron")(a)
    torch.testing.assert_close(values, torch.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5 * 1e3)
    torch.testing.assert_close(rebuilt, a, rtol=0, atol=1e-5 * 1e3)


def test_larger_matrices_are_declined(monkeypatch):
    # past the limit the op is not lowered: with fallback off, a clear refusal
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = _spectrum_case("random", EIGH_LIMIT + 1, batch=())
    with pytest.raises(RuntimeError, match="_linalg_eigh"):
        torch.linalg.eigh(a.to("neuron"))
