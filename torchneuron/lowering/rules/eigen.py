"""Symmetric eigendecomposition by parallel Jacobi sweeps, unrolled.

``_linalg_eigh`` (``linalg.eigh``, ``linalg.eigvalsh``, ``matrix_rank(hermitian=True)``,
``pinv(hermitian=True)``) for real matrices of at most ``EIGH_LIMIT`` (16) rows.

The method (Jacobi's, with the round-robin ordering of Brent and Luk, 1985): a sweep is
n - 1 rounds; each round pairs every index with another (n / 2 disjoint pairs, an odd
n padded with one index that stays decoupled) and applies, all at once, the n / 2 plane
rotations that zero the paired off-diagonal entries: A <- J^T A J, V <- V J, with J the
product of the rotations (they act on disjoint planes, so J is one orthogonal matrix).
Rotations are the classic stable ones (theta = (a_qq - a_pp) / 2 a_pq, t = sign(theta) /
(|theta| + sqrt(theta^2 + 1)), c = 1 / sqrt(t^2 + 1), s = t c). Cyclic Jacobi converges
quadratically once the off-diagonal part is small; ``sweeps_for(n)`` sweeps are unrolled (a
program has no data-dependent loop), enough for float32 on the matrices tested
(``tests/lowering/test_eigen.py``: eigenvalues within 1e-5 relative of LAPACK's,
``A V = V diag(w)`` within 1e-5 of ||A||, V orthogonal within 1e-5, repeated and
clustered eigenvalues included).

Eigenvalues come out in ascending order, as LAPACK's ``syevd`` gives them; each
eigenvector's sign is whatever the rotations leave (LAPACK's is not specified either).
Precision: the sweeps run in float32 for float32, float16 and bfloat16 inputs, whose
results are rounded once at the end. Other dtypes and larger matrices are declined
(``NotImplemented``: the op then runs as before, on the CPU or refused).
"""

from __future__ import annotations

import math

import torch

from .registry import lowering_rule

aten = torch.ops.aten

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Largest matrix dimension: the unrolled program grows as n^2 log n rotations' worth of
# ops (a first call of eigh traced and compiled in 3.9 s at n = 5 and 9.5 s at n = 16;
# n = 32 is correct too, but ~30 s).
EIGH_LIMIT = 16


def _rounds(n: int) -> list[tuple[list[int], list[int]]]:
    """The round-robin pairing of ``n`` (even) indices: n - 1 rounds of n / 2 pairs,
    every pair met once per sweep."""
    players = list(range(n))
    rounds = []
    for _ in range(n - 1):
        half = n // 2
        rounds.append((players[:half], players[::-1][:half]))
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def sweeps_for(n: int) -> int:
    """Sweeps unrolled for an n x n matrix, measured on float32 up to n = 32: random
    spectra converge in 6, but a spectrum of two eigenvalues of multiplicity n / 2 left
    residuals of 2e-5 ||A|| at n = 16 after 7 sweeps and 4.5e-6 after 8."""
    return max(5, math.ceil(math.log2(max(n, 2))) + 4)


def symmetric_eigen(
    a: torch.Tensor, sweeps: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of the symmetric ``a`` [..., n, n]."""
    n = a.shape[-1]
    size = n + (n % 2)  # an odd n gets one decoupled index, removed at the end
    if size != n:
        a = torch.nn.functional.pad(a, (0, 1, 0, 1))
    eye = torch.eye(size, dtype=a.dtype, device=a.device)
    vectors = eye.expand(*a.shape[:-2], size, size)
    flat_eye = eye.reshape(size * size)
    cells = torch.eye(size * size, dtype=a.dtype, device=a.device)
    plans = []
    for p, q in _rounds(size):
        diagonal_p = [i * size + i for i in p]
        diagonal_q = [j * size + j for j in q]
        upper = [i * size + j for i, j in zip(p, q)]
        lower = [j * size + i for i, j in zip(p, q)]
        # one-hot matrices, made once per round and used by every sweep: the entries a
        # round reads (a_pp, a_qq, a_pq) and where its rotation's entries go
        read = cells[diagonal_p + diagonal_q + upper].transpose(0, 1)  # [n^2, 3n/2]
        write = cells[diagonal_p + diagonal_q + upper + lower]  # [2n, n^2]
        plans.append((read, write))
    for _ in range(sweeps_for(size) if sweeps is None else sweeps):
        for read, write in plans:
            a, vectors = _round(a, vectors, read, write, flat_eye)
    values = torch.diagonal(a, dim1=-2, dim2=-1)
    if size != n:
        values = values[..., :n]
        vectors = vectors[..., :n, :n]
    values, order = torch.sort(values, dim=-1, stable=True)
    vectors = torch.gather(vectors, -1, order.unsqueeze(-2).expand(vectors.shape))
    return values, vectors


def _round(a, vectors, read, write, flat_eye):
    """One round: the n / 2 rotations of disjoint planes (p_k, q_k), applied at once."""
    size = a.shape[-1]
    half = size // 2
    batch = a.shape[:-2]
    entries = a.reshape(*batch, size * size) @ read
    a_pp, a_qq, a_pq = entries[..., :half], entries[..., half : 2 * half], entries[..., 2 * half :]
    coupled = a_pq != 0
    theta = (a_qq - a_pp) / (2 * torch.where(coupled, a_pq, 1.0))
    magnitude = 1.0 / (theta.abs() + torch.sqrt(theta * theta + 1))
    t = torch.where(coupled, torch.where(theta >= 0, magnitude, -magnitude), 0.0)
    c = torch.rsqrt(t * t + 1)
    s = t * c
    placed = torch.cat([c - 1, c - 1, s, -s], dim=-1) @ write
    rotation = (flat_eye + placed).reshape(*batch, size, size)
    a = rotation.transpose(-2, -1) @ a @ rotation
    return a, vectors @ rotation


def _symmetrized(a: torch.Tensor, upper: bool) -> torch.Tensor:
    """The symmetric matrix the named triangle stands for (the other is not read)."""
    triangle = torch.triu(a) if upper else torch.tril(a)
    strict = torch.triu(a, 1) if upper else torch.tril(a, -1)
    return triangle + strict.transpose(-2, -1)


@lowering_rule(aten._linalg_eigh.default)
def linalg_eigh(A, UPLO="L", compute_v=True):
    if (
        A.dim() < 2
        or A.shape[-1] != A.shape[-2]
        or A.shape[-1] > EIGH_LIMIT
        or A.dtype not in _DTYPES
        or UPLO not in ("L", "U")
    ):
        return NotImplemented
    n = A.shape[-1]
    if n == 0:
        empty = A.new_zeros((*A.shape[:-1],))
        return empty, A.new_zeros(A.shape) if compute_v else A.new_zeros((0,))
    wide = _symmetrized(A.to(torch.float32), upper=UPLO == "U")
    values, vectors = symmetric_eigen(wide)
    values = values.to(A.dtype)
    if not compute_v:
        return values, A.new_zeros((0,))
    return values, vectors.to(A.dtype)
