"""QR by Householder reflections for small matrices, one column a trip of a loop.

Same reflectors as LAPACK's ``geqrf``/``larfg``, so the same Q and R (signs included)
as the CPU up to rounding: ``geqrf``, ``linalg_householder_product``, ``ormqr`` and
``linalg_qr``. Matrices larger than ``linalg.UNROLL_LIMIT`` are declined
(``NotImplemented``), as in ``linalg``.
"""

from __future__ import annotations

import torch

from ..loops import counted_loop
from .linalg import conjugate_transpose, is_small
from .registry import lowering_rule

aten = torch.ops.aten

# The reflectors are LAPACK's (geqrf/larfg): for column k, with alpha = a_kk and x the
# entries below it, beta = -sign(alpha) ||(alpha, x)||, tau = (beta - alpha) / beta and
# v = (1, x / (alpha - beta)); a zero x gives tau = 0. Same reflectors, same Q and R
# (signs included) as the CPU, up to rounding.


def _geqrf(a: torch.Tensor):
    m, n = a.shape[-2], a.shape[-1]
    steps = min(m, n)
    rows = torch.arange(m, device=a.device)
    columns = torch.arange(n, device=a.device)
    positions = torch.arange(steps, device=a.device)

    def reflect(k, packed, taus, rows, columns, positions):
        # column k and its diagonal entry, selected (k is a value of the loop)
        column = torch.where(columns == k, packed, torch.zeros_like(packed)).sum(-1)
        below = rows > k
        alpha = torch.where(rows == k, column, torch.zeros_like(column)).sum(-1)
        tail_norm = torch.sqrt(
            torch.where(below, column * column, torch.zeros_like(column)).sum(-1)
        )
        norm = torch.sqrt(alpha * alpha + tail_norm * tail_norm)
        beta = torch.where(alpha >= 0, -norm, norm)
        trivial = tail_norm == 0
        safe_beta = torch.where(trivial, torch.ones_like(beta), beta)
        tau = torch.where(trivial, torch.zeros_like(beta), (beta - alpha) / safe_beta)
        scale = torch.where(
            trivial,
            torch.zeros_like(beta),
            1 / torch.where(trivial, torch.ones_like(beta), alpha - beta),
        )
        v = torch.where(
            rows == k,
            torch.ones_like(column),
            torch.where(below, column * scale.unsqueeze(-1), torch.zeros_like(column)),
        )
        # H = I - tau v v^T applied to the columns right of k
        projection = (v.unsqueeze(-1) * packed).sum(-2)  # [..., n]
        update = (tau.unsqueeze(-1) * v).unsqueeze(-1) * projection.unsqueeze(-2)
        trailing = (columns > k).unsqueeze(-2) & (rows >= k).unsqueeze(-1)
        packed = torch.where(trailing, packed - update, packed)
        new_column = torch.where(
            rows == k,
            torch.where(trivial, alpha, beta).unsqueeze(-1),
            torch.where(below, v, column),
        )
        packed = torch.where((columns == k).unsqueeze(-2), new_column.unsqueeze(-1), packed)
        taus = torch.where(positions == k, tau.unsqueeze(-1), taus)
        return k + 1, packed, taus

    first = torch.zeros((), dtype=torch.int64, device=a.device)
    taus = torch.zeros((*a.shape[:-2], steps), dtype=a.dtype, device=a.device)
    values = (first, a.clone(memory_format=torch.contiguous_format), taus)
    _, packed, tau = counted_loop(steps, reflect, values, (rows, columns, positions))
    return packed, tau


def _apply_reflectors(
    packed: torch.Tensor, tau: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """H_0 H_1 ... H_{k-1} target, the reflectors stored below the diagonal of ``packed``."""
    m, n = packed.shape[-2], packed.shape[-1]
    rows = torch.arange(m, device=packed.device)
    columns = torch.arange(n, device=packed.device)
    positions = torch.arange(tau.shape[-1], device=packed.device)

    def apply(k, result, packed, tau, rows, columns, positions):
        column = torch.where(columns == k, packed, torch.zeros_like(packed)).sum(-1)
        v = torch.where(
            rows == k,
            torch.ones_like(column),
            torch.where(rows > k, column, torch.zeros_like(column)),
        )
        tau_k = torch.where(positions == k, tau, torch.zeros_like(tau)).sum(-1)
        projection = (v.unsqueeze(-1) * result).sum(-2)
        result = result - (tau_k.unsqueeze(-1) * v).unsqueeze(-1) * projection.unsqueeze(-2)
        return k - 1, result

    last = torch.full((), tau.shape[-1] - 1, dtype=torch.int64, device=packed.device)
    values = (last, target.clone(memory_format=torch.contiguous_format))
    constants = (packed, tau, rows, columns, positions)
    return counted_loop(tau.shape[-1], apply, values, constants)[1]


def _identity(like: torch.Tensor, rows: int, columns: int) -> torch.Tensor:
    eye = torch.eye(rows, columns, dtype=like.dtype, device=like.device)
    return eye.expand(*like.shape[:-2], rows, columns)


@lowering_rule(aten.geqrf.default)
def geqrf(self):
    # Householder QR, reflectors packed below R, as LAPACK's geqrf
    if not is_small(self):
        return NotImplemented
    return _geqrf(self)


@lowering_rule(aten.linalg_householder_product.default)
def householder_product(input, tau):
    # Q = H_0 ... H_{k-1}, first n columns
    if not is_small(input):
        return NotImplemented
    m, n = input.shape[-2], input.shape[-1]
    return _apply_reflectors(input, tau, _identity(input, m, n))


@lowering_rule(aten.ormqr.default)
def ormqr(self, input2, input3, left=True, transpose=False):
    # ormqr(reflectors, tau, C) -> op(Q) C or C op(Q), Q formed explicitly
    if not is_small(self, input3):
        return NotImplemented
    m = self.shape[-2]
    q = _apply_reflectors(self, input2, _identity(self, m, m))
    if transpose:
        q = conjugate_transpose(q)
    return torch.matmul(q, input3) if left else torch.matmul(input3, q)


@lowering_rule(aten.linalg_qr.default)
def linalg_qr(A, mode="reduced"):
    # A = Q R from the Householder reflectors
    if not is_small(A) or mode not in ("reduced", "complete", "r"):
        return NotImplemented
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    packed, tau = _geqrf(A)
    if mode == "r":
        return torch.zeros(0, dtype=A.dtype, device=A.device), torch.triu(packed[..., :k, :])
    columns = m if mode == "complete" else k
    q = _apply_reflectors(packed, tau, _identity(A, m, columns))
    r = torch.triu(packed[..., :columns, :])
    return q, r
