"""Symmetric eigendecomposition and SVD by parallel Jacobi sweeps, one sweep a loop body.

Also ``_linalg_svd`` (``linalg.svd``, ``svdvals``, ``cond``, ``matrix_rank``, the
nuclear norm, the low-rank SVDs) by one-sided Jacobi (Hestenes): the columns of A are
rotated in pairs, in the same rounds, until orthogonal (each round's rotations are
computed from the Gram matrix of the current columns, recomputed every round, which
keeps small singular values accurate); s_j = ||a_j||, U from the columns over s, made
orthonormal and completed where s is zero (or for ``full_matrices``) by a Householder
QR. And ``linalg_pinv`` (``pinv``, ``pinverse``) from either, with PyTorch's atol/rtol
rules.

``_linalg_eigh`` (``linalg.eigh``, ``linalg.eigvalsh``, ``matrix_rank(hermitian=True)``,
``pinv(hermitian=True)``) for real matrices of at most ``EIGH_LIMIT`` (16) rows.

The method (Jacobi's, with the round-robin ordering of Brent and Luk, 1985): a sweep is
n - 1 rounds; each round pairs every index with another (n / 2 disjoint pairs, an odd
n padded with one index that stays decoupled) and applies, all at once, the n / 2 plane
rotations that zero the paired off-diagonal entries: A <- J^T A J, V <- V J, with J the
product of the rotations (they act on disjoint planes, so J is one orthogonal matrix).
Rotations are the classic stable ones (theta = (a_qq - a_pp) / 2 a_pq, t = sign(theta) /
(|theta| + sqrt(theta^2 + 1)), c = 1 / sqrt(t^2 + 1), s = t c). Cyclic Jacobi converges
quadratically once the off-diagonal part is small; ``sweeps_for(n)`` sweeps run (a fixed
count: a program has no data-dependent loop), enough for float32 on the matrices tested
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

from ..loops import counted_loop
from .registry import lowering_rule

aten = torch.ops.aten

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Largest matrix dimension: the program holds one sweep (n - 1 rounds of rotations) in a
# loop of ``sweeps_for(n)`` trips (``loops.counted_loop``; unrolled, a first call of eigh
# traced and compiled in 3.9 s at n = 5 and 9.5 s at n = 16, n = 32 ~30 s).
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
    """Sweeps run for an n x n matrix, measured on float32 up to n = 32: random
    spectra converge in 6, but a spectrum of two eigenvalues of multiplicity n / 2 left
    residuals of 2e-5 ||A|| at n = 16 after 7 sweeps and 4.5e-6 after 8; up to n = 8,
    6 sweeps leave every tested spectrum at ~1e-6."""
    return max(5, math.ceil(math.log2(max(n, 2))) + (3 if n <= 8 else 4))


def _plans(size: int, like: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per round, two one-hot matrices made once and used by every sweep: which entries
    of a [size, size] matrix the round reads (its a_pp, a_qq, a_pq) and where the
    entries of its rotation go (c - 1, c - 1, s, -s at pp, qq, pq, qp)."""
    cells = torch.eye(size * size, dtype=like.dtype, device=like.device)
    plans = []
    for p, q in _rounds(size):
        diagonal_p = [i * size + i for i in p]
        diagonal_q = [j * size + j for j in q]
        upper = [i * size + j for i, j in zip(p, q)]
        lower = [j * size + i for i, j in zip(p, q)]
        read = cells[diagonal_p + diagonal_q + upper].transpose(0, 1)  # [n^2, 3n/2]
        write = cells[diagonal_p + diagonal_q + upper + lower]  # [2n, n^2]
        plans.append((read, write))
    return plans


def _rotation(source: torch.Tensor, read, write, flat_eye) -> torch.Tensor:
    """The round's rotations as one orthogonal matrix J [..., n, n]: each zeroes the
    (p, q) entry of J^T source J for its plane."""
    size = source.shape[-1]
    half = size // 2
    batch = source.shape[:-2]
    entries = source.reshape(*batch, size * size) @ read
    a_pp, a_qq, a_pq = entries[..., :half], entries[..., half : 2 * half], entries[..., 2 * half :]
    coupled = a_pq != 0
    theta = (a_qq - a_pp) / (2 * torch.where(coupled, a_pq, 1.0))
    magnitude = 1.0 / (theta.abs() + torch.sqrt(theta * theta + 1))
    t = torch.where(coupled, torch.where(theta >= 0, magnitude, -magnitude), 0.0)
    c = torch.rsqrt(t * t + 1)
    s = t * c
    placed = torch.cat([c - 1, c - 1, s, -s], dim=-1) @ write
    return (flat_eye + placed).reshape(*batch, size, size)


def _sweeps(a: torch.Tensor, sweeps: int | None, step) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` and the accumulated rotations V (from the identity, [..., n, n], n the even
    size of ``a``'s last dimension) after every sweep: one sweep, the rounds in order,
    written once and run ``sweeps_for(n)`` times as a loop of the program
    (``loops.counted_loop``). ``step(a, read, write, flat_eye)`` gives a round's
    rotation J and the new ``a``."""
    size = a.shape[-1]
    eye = torch.eye(size, dtype=a.dtype, device=a.device)
    flat_eye = eye.reshape(size * size)
    plans = [matrix for plan in _plans(size, a) for matrix in plan]
    count = sweeps_for(size) if sweeps is None else sweeps

    def sweep(a, vectors, flat_eye, *plans):
        for read, write in zip(plans[::2], plans[1::2]):
            rotation, a = step(a, read, write, flat_eye)
            vectors = vectors @ rotation
        return a, vectors

    # the loop's values keep one layout from trip to trip: row-major, as the sweep makes them
    contiguous = torch.contiguous_format
    vectors = eye.expand(*a.shape[:-2], size, size).clone(memory_format=contiguous)
    values = (a.clone(memory_format=contiguous), vectors)
    return counted_loop(count, sweep, values, (flat_eye, *plans))


def symmetric_eigen(
    a: torch.Tensor, sweeps: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of the symmetric ``a`` [..., n, n]."""
    n = a.shape[-1]
    if n % 2:  # an odd n gets one decoupled index, removed at the end
        a = torch.nn.functional.pad(a, (0, 1, 0, 1))

    def step(a, read, write, flat_eye):
        rotation = _rotation(a, read, write, flat_eye)
        return rotation, rotation.transpose(-2, -1) @ a @ rotation

    a, vectors = _sweeps(a, sweeps, step)
    values = torch.diagonal(a, dim1=-2, dim2=-1)
    if n % 2:
        values = values[..., :n]
        vectors = vectors[..., :n, :n]
    values, order = torch.sort(values, dim=-1, stable=True)
    vectors = torch.gather(vectors, -1, order.unsqueeze(-2).expand(vectors.shape))
    return values, vectors


def singular_values(a: torch.Tensor, sweeps: int | None = None):
    """One-sided Jacobi (Hestenes) on ``a`` [..., m, n], m >= n: the columns are rotated
    in pairs until orthogonal, A V = U diag(s). Returns (a's rotated columns, s, V),
    s descending, columns and V in the same order."""
    n = a.shape[-1]
    if n % 2:  # an odd n gets a zero column: orthogonal to all, never rotated
        a = torch.nn.functional.pad(a, (0, 1))

    def step(a, read, write, flat_eye):
        # the Gram matrix of the current columns, recomputed every round (what
        # keeps one-sided Jacobi accurate for small singular values)
        rotation = _rotation(a.transpose(-2, -1) @ a, read, write, flat_eye)
        return rotation, a @ rotation

    a, vectors = _sweeps(a, sweeps, step)
    if n % 2:
        a, vectors = a[..., :n], vectors[..., :n, :n]
    values = torch.sqrt((a * a).sum(-2))
    values, order = torch.sort(values, dim=-1, descending=True, stable=True)
    a = torch.gather(a, -1, order.unsqueeze(-2).expand(a.shape))
    vectors = torch.gather(vectors, -1, order.unsqueeze(-2).expand(vectors.shape))
    return a, values, vectors


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


@lowering_rule(aten._linalg_svd.default)
def linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    if (
        A.dim() < 2
        or max(A.shape[-2:]) > EIGH_LIMIT
        or min(A.shape[-2:]) == 0
        or A.dtype not in _DTYPES
        or driver is not None
    ):
        return NotImplemented
    m, n = A.shape[-2], A.shape[-1]
    wide = m < n  # A^T = U' S V'^T gives A = V' S U'^T
    tall = A.to(torch.float32)
    if wide:
        tall = tall.transpose(-2, -1)
    columns, values, vectors = singular_values(tall)
    empty = A.new_zeros((0,))
    if not compute_uv:
        return empty, values.to(A.dtype), empty
    left = _orthonormal_columns(columns, values, full_matrices)
    u, vh = (vectors, left.transpose(-2, -1)) if wide else (left, vectors.transpose(-2, -1))
    return u.to(A.dtype), values.to(A.dtype), vh.to(A.dtype)


def _orthonormal_columns(columns, values, full: bool) -> torch.Tensor:
    """U from A V = U diag(s): each column divided by its singular value, then made
    exactly orthonormal, and completed where s is zero (those columns come last), by a
    Householder QR whose R's signs are moved back onto Q (so U keeps A V's signs)."""
    from .qr import linalg_qr

    scaled = columns / torch.where(values > 0, values, 1.0).unsqueeze(-2)
    scaled = torch.where(values.unsqueeze(-2) > 0, scaled, 0.0)
    q, r = linalg_qr(scaled, mode="complete" if full else "reduced")
    signs = torch.where(torch.diagonal(r, dim1=-2, dim2=-1) < 0, -1.0, 1.0)
    extra = q.shape[-1] - signs.shape[-1]
    if extra:
        signs = torch.cat([signs, signs.new_ones((*signs.shape[:-1], extra))], dim=-1)
    return q * signs.unsqueeze(-2)


@lowering_rule(aten.linalg_pinv.atol_rtol_tensor)
def linalg_pinv(self, *, atol=None, rtol=None, hermitian=False):
    # PyTorch's definition: singular values (|eigenvalues| when hermitian) at most
    # max(atol, rtol * largest) are dropped
    if self.dim() < 2 or max(self.shape[-2:]) > EIGH_LIMIT or self.dtype not in _DTYPES:
        return NotImplemented
    m, n = self.shape[-2], self.shape[-1]
    if min(m, n) == 0:
        return self.new_zeros((*self.shape[:-2], n, m))
    default_rtol = torch.finfo(self.dtype).eps * max(m, n)
    if rtol is None:  # eps * max(m, n), unless a positive atol is given
        if atol is None:
            rtol = torch.full((), default_rtol, dtype=torch.float32)
        else:
            rtol = torch.where(atol > 0, 0.0, default_rtol).to(torch.float32)
    atol = torch.zeros((), dtype=torch.float32) if atol is None else atol.to(torch.float32)
    rtol = rtol.to(torch.float32)
    a = self.to(torch.float32)
    if hermitian:
        values, vectors = symmetric_eigen(_symmetrized(a, upper=False))
        magnitudes = values.abs()
        largest = magnitudes.amax(-1, keepdim=True)
        keep = magnitudes > torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
        inverse = torch.where(keep, 1 / torch.where(keep, values, 1.0), 0.0)
        result = (vectors * inverse.unsqueeze(-2)) @ vectors.transpose(-2, -1)
        return result.to(self.dtype)
    u, s, vh = linalg_svd(a, full_matrices=False)
    largest = s[..., :1]
    keep = s > torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
    inverse = torch.where(keep, 1 / torch.where(keep, s, 1.0), 0.0)
    result = (vh.transpose(-2, -1) * inverse.unsqueeze(-2)) @ u.transpose(-2, -1)
    return result.to(self.dtype)
