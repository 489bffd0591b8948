"""Dense linear algebra for small matrices, unrolled over the matrix dimension.

torch-mlir lowers none of the LAPACK-backed ops. For matrices of at most
``UNROLL_LIMIT`` rows these rules write the textbook algorithms as a fixed
sequence of tensor ops (one step per column, batched over leading dims):

- Cholesky (left-looking) -> ``linalg_cholesky_ex``, ``cholesky``, ``cholesky_solve``,
  ``cholesky_inverse``;
- substitution -> ``linalg_solve_triangular``, ``triangular_solve``;
- LU with partial pivoting (the pivot is the first entry of largest magnitude,
  as LAPACK's ``getrf`` chooses, so factors and pivots match) ->
  ``linalg_lu_factor_ex``, ``linalg_lu``, ``lu_unpack``, ``linalg_lu_solve``,
  ``linalg_inv_ex``, ``_linalg_solve_ex``, ``_linalg_slogdet``, ``linalg_det``;
- scaling and squaring of a Taylor polynomial -> ``linalg_matrix_exp``.

QR by Householder reflections lives in ``qr`` (it shares ``is_small`` and
``conjugate_transpose`` from here).

``info`` outputs report a zero pivot / non-positive-definite minor like LAPACK;
``_linalg_check_errors`` (which raises on the CPU) has no device equivalent and
is dropped: an error on the chip shows as inf/NaN in the result, as it would on
hardware. Larger matrices are declined (``NotImplemented``).
"""

from __future__ import annotations

import torch

from ..loops import counted_loop
from .registry import lowering_rule

aten = torch.ops.aten

UNROLL_LIMIT = 32  # largest matrix dimension unrolled


def is_small(*matrices: torch.Tensor) -> bool:
    return all(
        m.dim() >= 2
        and max(m.shape[-1], m.shape[-2]) <= UNROLL_LIMIT
        and m.dtype in (torch.float32, torch.float16, torch.bfloat16)
        for m in matrices
    )


def conjugate_transpose(m: torch.Tensor) -> torch.Tensor:
    return m.transpose(-2, -1)


def _eye_like(a: torch.Tensor, n: int) -> torch.Tensor:
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    return eye.expand(*a.shape[:-2], n, n)


# The checked forms (linalg.inv, ...) are the _ex forms plus _linalg_check_errors,
# which raises on the CPU; functionalization turns that into an effect token the
# program cannot carry. A data-dependent error needs the value on the host, so on
# the device the result carries inf/NaN instead, as it would on the chip.


@lowering_rule(aten.linalg_inv.default)
def linalg_inv(A):
    # linalg_inv(A) -> linalg_inv_ex(A).inverse, unchecked
    result = linalg_inv_ex(A)
    return result if result is NotImplemented else result[0]


@lowering_rule(aten.linalg_cholesky.default)
def linalg_cholesky(self, *, upper=False):
    # linalg_cholesky(A) -> linalg_cholesky_ex(A).L, unchecked
    result = linalg_cholesky_ex(self, upper=upper)
    return result if result is NotImplemented else result[0]


@lowering_rule(aten.linalg_lu_factor.default)
def linalg_lu_factor(A, *, pivot=True):
    # linalg_lu_factor(A) -> linalg_lu_factor_ex(A)[:2], unchecked
    result = linalg_lu_factor_ex(A, pivot=pivot)
    return result if result is NotImplemented else result[:2]


@lowering_rule(aten.linalg_solve.default)
def linalg_solve(A, B, *, left=True):
    # linalg_solve(A, B) -> _linalg_solve_ex(A, B).result, unchecked
    result = linalg_solve_ex(A, B, left=left)
    return result if result is NotImplemented else result[0]


# -- Cholesky ------------------------------------------------------------------------


def _cholesky_lower(a: torch.Tensor):
    """(L, info) with A = L L^T, L lower triangular; info = 1 + first bad minor, else 0."""
    n = a.shape[-1]
    columns: list[torch.Tensor] = []
    info = torch.zeros(a.shape[:-2], dtype=torch.int32, device=a.device)
    if n == 0:
        return a.clone(), info
    rows = torch.arange(n, device=a.device)
    for j in range(n):
        v = a[..., :, j]
        if columns:
            previous = torch.stack(columns, dim=-1)  # [..., n, j]
            v = v - torch.matmul(previous, previous[..., j, :].unsqueeze(-1)).squeeze(-1)
        pivot = v[..., j]
        info = torch.where((info == 0) & ~(pivot > 0), torch.full_like(info, j + 1), info)
        column = v / torch.sqrt(pivot).unsqueeze(-1)
        columns.append(torch.where(rows >= j, column, torch.zeros_like(column)))
    return torch.stack(columns, dim=-1), info


@lowering_rule(aten.linalg_cholesky_ex.default)
def linalg_cholesky_ex(self, *, upper=False, check_errors=False):
    # A = L L^T, column by column; upper -> L^T
    if not is_small(self) or self.shape[-1] != self.shape[-2]:
        return NotImplemented
    lower, info = _cholesky_lower(self)
    return (conjugate_transpose(lower) if upper else lower), info


@lowering_rule(aten.cholesky.default)
def cholesky(self, upper=False):
    # cholesky(A, upper) -> linalg_cholesky_ex(A, upper).L
    result = linalg_cholesky_ex(self, upper=upper)
    return result if result is NotImplemented else result[0]


# -- triangular solves ---------------------------------------------------------------


def _solve_lower_left(lower: torch.Tensor, b: torch.Tensor, unit: bool) -> torch.Tensor:
    """X with L X = B (L lower triangular), row by row (forward substitution): row i a trip
    of a loop, which selects L's row i and B's row i exactly (``where`` on the index)."""
    n = lower.shape[-1]
    if n == 0 or b.shape[-1] == 0:
        return b.clone()
    index = torch.arange(n, device=b.device)

    def substitute(i, x, lower, b, index):
        at_i = (index == i).unsqueeze(-1)
        b_i = torch.where(at_i, b, torch.zeros_like(b)).sum(-2)  # [..., k]
        l_i = torch.where(at_i, lower, torch.zeros_like(lower)).sum(-2)  # [..., n]
        # rows i.. of x are still zero, and L's row i is read left of the diagonal only
        strict = torch.where(index < i, l_i, torch.zeros_like(l_i))
        r = b_i - torch.matmul(strict.unsqueeze(-2), x).squeeze(-2)
        if not unit:
            r = r / torch.where(index == i, l_i, torch.zeros_like(l_i)).sum(-1).unsqueeze(-1)
        return i + 1, torch.where(at_i, r.unsqueeze(-2), x)

    batch = torch.broadcast_shapes(lower.shape[:-2], b.shape[:-2])
    start = torch.zeros((*batch, *b.shape[-2:]), dtype=torch.result_type(lower, b), device=b.device)
    first = torch.zeros((), dtype=torch.int64, device=b.device)
    return counted_loop(n, substitute, (first, start), (lower, b, index))[1]


def _solve_triangular(a, b, upper: bool, left: bool, unit: bool):
    # upper systems are lower ones with rows and columns reversed; right-side X A = B
    # is A^T X^T = B^T
    if not left:
        return conjugate_transpose(
            _solve_triangular(conjugate_transpose(a), conjugate_transpose(b), not upper, True, unit)
        )
    if upper:
        flipped = _solve_lower_left(a.flip(-1, -2), b.flip(-2), unit)
        return flipped.flip(-2)
    return _solve_lower_left(a, b, unit)


def _broadcast_batch(a: torch.Tensor, b: torch.Tensor):
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


@lowering_rule(aten.linalg_solve_triangular.default)
def linalg_solve_triangular(self, B, *, upper, left=True, unitriangular=False):
    # substitution, one row of X per step
    if not is_small(self, B):
        return NotImplemented
    a, b = _broadcast_batch(self, B)
    return _solve_triangular(a, b.to(a.dtype), upper, left, unitriangular)


@lowering_rule(aten.triangular_solve.default)
def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    # triangular_solve(B, A) -> (solve_triangular(op(A), B), A)
    if not is_small(self, A):
        return NotImplemented
    a, b = _broadcast_batch(A, self)
    if transpose:
        a, upper = conjugate_transpose(a), not upper
    return _solve_triangular(a, b, upper, True, unitriangular), A.clone()


def _cholesky_solve(b, factor, upper):
    lower = conjugate_transpose(factor) if upper else factor
    lower, b = _broadcast_batch(lower, b)
    y = _solve_triangular(lower, b, False, True, False)
    return _solve_triangular(conjugate_transpose(lower), y, True, True, False)


@lowering_rule(aten.cholesky_solve.default)
def cholesky_solve(self, input2, upper=False):
    # L L^T X = B -> L Y = B, L^T X = Y
    if not is_small(self, input2):
        return NotImplemented
    return _cholesky_solve(self, input2, upper)


@lowering_rule(aten.cholesky_inverse.default)
def cholesky_inverse(self, upper=False):
    # (L L^T)^-1 = cholesky_solve(I, L)
    if not is_small(self):
        return NotImplemented
    return _cholesky_solve(_eye_like(self, self.shape[-1]), self, upper)


# -- LU with partial pivoting ----------------------------------------------------------


def _lu(a: torch.Tensor):
    """(LU packed like getrf, pivots 1-based int32, info) of A [..., m, n]: one column a
    trip of a loop (``loops.counted_loop``)."""
    m, n = a.shape[-2], a.shape[-1]
    steps = min(m, n)
    rows = torch.arange(m, device=a.device)
    columns = torch.arange(n, device=a.device)
    positions = torch.arange(steps, device=a.device)

    def eliminate(k, lu, pivots, info, rows, columns, positions):
        # pivot: first row >= k with the largest |a[r, k]| (k is a value of the loop)
        column = torch.where(columns == k, lu, torch.zeros_like(lu)).sum(-1)
        candidates = torch.where(rows >= k, torch.abs(column), torch.full_like(column, -1))
        p = torch.argmax(candidates, dim=-1)  # [...]
        pivots = torch.where(positions == k, (p.to(torch.int32) + 1).unsqueeze(-1), pivots)
        # swap rows k and p, each selected exactly (a gather would carry an index check)
        at_k = (rows == k).unsqueeze(-1)
        at_p = (rows == p.unsqueeze(-1)).unsqueeze(-1)
        row_k = torch.where(at_k, lu, torch.zeros_like(lu)).sum(-2)
        row = torch.where(at_p, lu, torch.zeros_like(lu)).sum(-2)  # row k once swapped
        lu = torch.where(at_k, row.unsqueeze(-2), torch.where(at_p, row_k.unsqueeze(-2), lu))
        column = torch.where(columns == k, lu, torch.zeros_like(lu)).sum(-1)
        pivot = torch.where(columns == k, row, torch.zeros_like(row)).sum(-1)
        step = (k + 1).to(torch.int32)
        info = torch.where((info == 0) & (pivot == 0), step, info)
        multipliers = torch.where(rows > k, column / pivot.unsqueeze(-1), torch.zeros_like(column))
        update = multipliers.unsqueeze(-1) * row.unsqueeze(-2)
        below_right = (rows > k).unsqueeze(-1) & (columns > k).unsqueeze(-2)
        lu = torch.where(below_right, lu - update, lu)
        lu = torch.where(
            (rows > k).unsqueeze(-1) & (columns == k).unsqueeze(-2), multipliers.unsqueeze(-1), lu
        )
        return k + 1, lu, pivots, info

    batch = a.shape[:-2]
    values = (
        torch.zeros((), dtype=torch.int64, device=a.device),
        a.clone(memory_format=torch.contiguous_format),
        torch.zeros((*batch, steps), dtype=torch.int32, device=a.device),
        torch.zeros(batch, dtype=torch.int32, device=a.device),
    )
    _, lu, pivots, info = counted_loop(steps, eliminate, values, (rows, columns, positions))
    return lu, pivots, info


def _permutation_of(pivots: torch.Tensor, m: int) -> torch.Tensor:
    """perm with (P^T A)[i] = A[perm[i]]: the row swaps of ``pivots`` applied in order."""
    rows = torch.arange(m, device=pivots.device)
    perm = rows.expand(*pivots.shape[:-1], m)
    for k in range(pivots.shape[-1]):
        p = (pivots[..., k].to(torch.int64) - 1).unsqueeze(-1)
        at_k = torch.gather(perm, -1, torch.full_like(p, k))
        at_p = torch.gather(perm, -1, p)
        perm = torch.where(rows == k, at_p, torch.where(rows == p, at_k, perm))
    return perm


def _unpack(lu: torch.Tensor, pivots: torch.Tensor):
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    lower = torch.tril(lu[..., :, :k], diagonal=-1) + torch.eye(
        m, k, dtype=lu.dtype, device=lu.device
    )
    upper = torch.triu(lu[..., :k, :])
    perm = _permutation_of(pivots, m)
    # P = permutation matrix with A = P L U: P[perm[i], i] = 1
    p_matrix = (perm.unsqueeze(-2) == torch.arange(m, device=lu.device).unsqueeze(-1)).to(lu.dtype)
    return p_matrix, lower, upper


@lowering_rule(aten.linalg_lu_factor_ex.default)
def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    # Gaussian elimination with partial pivoting, one column per step
    if not pivot or not is_small(A):
        return NotImplemented
    return _lu(A)


@lowering_rule(aten.linalg_lu.default)
def linalg_lu(A, *, pivot=True):
    # linalg_lu -> lu_unpack(lu_factor(A))
    if not pivot or not is_small(A):
        return NotImplemented
    lu, pivots, _ = _lu(A)
    return _unpack(lu, pivots)


@lowering_rule(aten.lu_unpack.default)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    # P, L, U from the packed factors and the sequential row swaps
    if not unpack_data or not unpack_pivots or not is_small(LU_data):
        return NotImplemented
    return _unpack(LU_data, LU_pivots)


def _lu_solve(lu, pivots, b, left=True, adjoint=False):
    m = lu.shape[-1]
    if not left:
        # X A = B  <=>  A^T X^T = B^T
        return conjugate_transpose(_lu_solve(lu, pivots, conjugate_transpose(b), True, not adjoint))
    lu, b = _broadcast_batch(lu, b)
    perm = _permutation_of(pivots, m).expand(*lu.shape[:-2], m)
    if not adjoint:
        # A = P L U: L U X = P^T B
        permuted = torch.gather(b, -2, perm.unsqueeze(-1).expand(b.shape))
        y = _solve_triangular(lu, permuted, False, True, True)
        return _solve_triangular(lu, y, True, True, False)
    # A^T = U^T L^T P^T: U^T Y = B, L^T Z = Y, X = P Z
    y = _solve_triangular(conjugate_transpose(lu), b, False, True, False)
    z = _solve_triangular(conjugate_transpose(lu), y, True, True, True)
    inverse = torch.argsort(perm, dim=-1)
    return torch.gather(z, -2, inverse.unsqueeze(-1).expand(z.shape))


@lowering_rule(aten.linalg_lu_solve.default)
def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    # permute, then two triangular solves
    if not is_small(LU, B):
        return NotImplemented
    return _lu_solve(LU, pivots, B.to(LU.dtype), left, adjoint)


@lowering_rule(aten.linalg_inv_ex.default)
def linalg_inv_ex(A, *, check_errors=False):
    # A^-1 = lu_solve(lu(A), I)
    if not is_small(A) or A.shape[-1] != A.shape[-2]:
        return NotImplemented
    lu, pivots, info = _lu(A)
    return _lu_solve(lu, pivots, _eye_like(A, A.shape[-1])), info


@lowering_rule(aten._linalg_solve_ex.default)
def linalg_solve_ex(A, B, *, left=True, check_errors=False):
    # solve(A, B) -> lu_solve(lu(A), B); a vector B is a one-column matrix
    if not is_small(A) or A.shape[-1] != A.shape[-2]:
        return NotImplemented
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    matrix = B.unsqueeze(-1) if vector else B
    if max(matrix.shape[-2:]) > UNROLL_LIMIT:
        return NotImplemented
    lu, pivots, info = _lu(A)
    result = _lu_solve(lu, pivots, matrix.to(A.dtype), left)
    return (result.squeeze(-1) if vector else result), lu, pivots, info


def _determinant_parts(A):
    lu, pivots, _ = _lu(A)
    diagonal = torch.diagonal(lu, dim1=-2, dim2=-1)
    swaps = (pivots != torch.arange(1, A.shape[-1] + 1, device=A.device, dtype=torch.int32)).sum(-1)
    permutation_sign = 1 - 2 * torch.remainder(swaps, 2).to(A.dtype)
    return lu, pivots, diagonal, permutation_sign


@lowering_rule(aten._linalg_slogdet.default)
def linalg_slogdet(A):
    # sign = sign(perm) prod sign(u_ii); logabsdet = sum log |u_ii|
    if not is_small(A) or A.shape[-1] != A.shape[-2]:
        return NotImplemented
    lu, pivots, diagonal, permutation_sign = _determinant_parts(A)
    sign = permutation_sign * torch.prod(torch.sign(diagonal), dim=-1)
    logabsdet = torch.sum(torch.log(torch.abs(diagonal)), dim=-1)
    return sign, logabsdet, lu, pivots


@lowering_rule(aten._linalg_det.default)
def linalg_det_with_factors(A):
    # _linalg_det(A) -> (det, LU, pivots)
    if not is_small(A) or A.shape[-1] != A.shape[-2]:
        return NotImplemented
    lu, pivots, diagonal, permutation_sign = _determinant_parts(A)
    return permutation_sign * torch.prod(diagonal, dim=-1), lu, pivots


@lowering_rule(aten.linalg_det.default)
def linalg_det(A):
    # det = sign(perm) prod u_ii
    if not is_small(A) or A.shape[-1] != A.shape[-2]:
        return NotImplemented
    _, _, diagonal, permutation_sign = _determinant_parts(A)
    return permutation_sign * torch.prod(diagonal, dim=-1)


# matrix_exp by scaling and squaring: exp(A) = exp(A / 2^s)^(2^s), with s chosen per
# matrix from its 1-norm so that ||A / 2^s||_1 <= MATRIX_EXP_THETA = 2, where a
# degree-22 Taylor polynomial is exact to float32 round-off (remainder below
# 2^23 / 23! ~ 3e-16 of the result's scale). Each squaring doubles the relative error,
# so a larger theta (fewer squarings) is more accurate until the polynomial's
# cancellation costs more: measured against float64, theta 2 is the best of 0.5-4 on
# PyTorch's samples (norms near 28) and on negative definite matrices.
# The number of squarings is data-dependent; the program squares MATRIX_EXP_MAX_SQUARINGS
# times and keeps a square only while the matrix still needs it, so one static program
# covers every norm up to THETA * 2^MAX.
MATRIX_EXP_TAYLOR_DEGREE = 22
MATRIX_EXP_THETA = 2.0
MATRIX_EXP_MAX_SQUARINGS = 24


@lowering_rule(aten.linalg_matrix_exp.default)
def linalg_matrix_exp(self):
    if self.dim() < 2 or self.shape[-1] != self.shape[-2] or not self.is_floating_point():
        return NotImplemented
    n = self.shape[-1]
    if n == 0:
        return self.clone()
    work = self.to(torch.float32) if self.dtype in (torch.float16, torch.bfloat16) else self
    norm = work.abs().sum(-2).amax(-1)  # 1-norm, one per matrix
    squarings = torch.clamp(
        torch.ceil(torch.log2(norm / MATRIX_EXP_THETA)), min=0, max=MATRIX_EXP_MAX_SQUARINGS
    )
    squarings = torch.where(torch.isfinite(squarings), squarings, MATRIX_EXP_MAX_SQUARINGS)
    scaled = work / torch.pow(2.0, squarings)[..., None, None]
    eye = _eye_like(work, n)
    # Horner form of sum_k X^k / k!
    result = eye
    for k in range(MATRIX_EXP_TAYLOR_DEGREE, 0, -1):
        result = eye + (scaled @ result) / k
    for step in range(MATRIX_EXP_MAX_SQUARINGS):
        keep = (squarings > step)[..., None, None]
        result = torch.where(keep, result @ result, result)
    return result.to(self.dtype)
