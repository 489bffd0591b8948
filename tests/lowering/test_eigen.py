"""Symmetric eigendecomposition by parallel Jacobi sweeps (lowering/rules/eigen.py),
natively in both modes, against LAPACK (float64) on hard and easy spectra."""

from __future__ import annotations

import pytest
import torch

from torchneuron.lowering.rules.eigen import EIGH_LIMIT, linalg_svd, symmetric_eigen


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


@pytest.mark.parametrize("n", [3])
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


# slow: the OpInfo conformance run compiles linalg.eigh natively in the default suite
@pytest.mark.slow
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


def _svd_case(kind: str, m: int, n: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(m * 31 + n)
    if kind == "random":
        return torch.randn(2, m, n, generator=generator)
    if kind == "rank-2":
        k = min(2, m, n)
        left, right = (
            torch.randn(2, m, k, generator=generator),
            torch.randn(2, k, n, generator=generator),
        )
        return left @ right
    u, _ = torch.linalg.qr(torch.randn(m, m, generator=generator, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    k = min(m, n)
    s = torch.zeros(m, n, dtype=torch.float64)
    s[range(k), range(k)] = torch.logspace(0, -5, k, dtype=torch.float64)  # graded
    return (u @ s @ v.T).float().expand(2, m, n).clone()


def _check_svd(a, u, s, vh, full: bool) -> None:
    a64, u, s, vh = a.double(), u.double().cpu(), s.double().cpu(), vh.double().cpu()
    m, n = a.shape[-2:]
    k = min(m, n)
    assert u.shape[-2:] == ((m, m) if full else (m, k))
    assert vh.shape[-2:] == ((n, n) if full else (k, n))
    largest = torch.linalg.svdvals(a64)[..., :1]
    assert ((s - torch.linalg.svdvals(a64)).abs() <= 1e-5 * largest).all()
    rebuilt = (u[..., :, :k] * s.unsqueeze(-2)) @ vh[..., :k, :]
    assert ((rebuilt - a64).abs().amax(-1) <= 1e-5 * largest).all()
    # U and V orthonormal, the columns completed where s is zero included
    assert ((u.mT @ u - torch.eye(u.shape[-1], dtype=torch.float64)).abs() <= 1e-5).all()
    assert ((vh @ vh.mT - torch.eye(vh.shape[-2], dtype=torch.float64)).abs() <= 1e-5).all()


@pytest.mark.parametrize(("m", "n"), [(5, 5), (6, 3), (3, 6), (16, 16), (16, 9), (1, 4)])
@pytest.mark.parametrize("kind", ["random", "rank-2", "graded"])
def test_the_svd_rule_matches_lapack(kind, m, n):
    # the rule itself on the CPU (it is made of tensor ops), every shape and spectrum
    a = _svd_case(kind, m, n)
    for full in (False, True):
        _check_svd(a, *linalg_svd(a, full_matrices=full), full)


@pytest.mark.parametrize(
    ("kind", "m", "n", "full"), [("random", 5, 5, False), ("rank-2", 6, 3, True)]
)
def test_eager_svd_is_native(monkeypatch, kind, m, n, full):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    a = _svd_case(kind, m, n)
    u, s, vh = torch.linalg.svd(a.to("neuron"), full_matrices=full)
    assert s.device.type == "neuron"
    _check_svd(a, u, s, vh, full)


# slow: the OpInfo conformance run compiles pinv (hermitian too) and svdvals natively
# in the default suite
@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
def test_compiled_pinv_and_svdvals_are_native(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")

    def spectral(a):
        return torch.linalg.svdvals(a), torch.linalg.pinv(a), torch.linalg.pinv(a, hermitian=True)

    a = _svd_case("random", 5, 5)[0]
    symmetric = a + a.T
    values, inverse, _ = torch.compile(spectral, backend="neuron")(a)
    _, _, hermitian_inverse = torch.compile(spectral, backend="neuron")(symmetric)
    torch.testing.assert_close(values, torch.linalg.svdvals(a), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(inverse, torch.linalg.pinv(a), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(
        hermitian_inverse, torch.linalg.pinv(symmetric, hermitian=True), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(
    "tolerances",
    [{}, {"atol": 0.5}, {"atol": 0.1, "rtol": 0.2}],
)
def test_pinv_drops_the_singular_values_pytorch_drops(monkeypatch, tolerances):
    # PyTorch's rules for atol and rtol (rtol defaults to eps * max(m, n) unless a
    # positive atol is given); singular values 1, 0.4 and 0.05 straddle the cut-offs
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    u, _ = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(1)))
    a = (u * torch.tensor([1.0, 0.4, 0.05])) @ u.T
    torch.testing.assert_close(
        torch.linalg.pinv(a.to("neuron"), **tolerances).cpu(),
        torch.linalg.pinv(a, **tolerances),
        rtol=1e-4,
        atol=1e-4,
    )
