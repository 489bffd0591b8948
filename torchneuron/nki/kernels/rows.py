"""Row-wise kernels over the last axis: softmax, RMSNorm and layer norm.

``x: [N, D]`` in HBM is processed 128 rows at a time (the last tile may be shorter), a row
on each partition, so every reduction is along the free axis: one ScalarE or VectorE
instruction per tile, never a cross-partition step. A weight row (``w``, ``gamma``,
``beta``) is broadcast to all 128 partitions once, by K=1 matmuls of a ones column on
TensorE (512 columns, one PSUM bank, at a time). Each row must fit in SBUF with its float32
temporaries (D up to about 8K float32 elements on trn2).
"""

from __future__ import annotations

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.errors import refuse

P = nl.tile_size.pmax
EPS = 1e-6


def _row_tiles(n: int):
    """(row slice, rows) for each tile of at most 128 rows."""
    for i in nl.affine_range((n + P - 1) // P):
        rows = min(P, n - i * P)
        yield slice(i * P, i * P + rows), rows


def broadcast_row(vec, name: str):
    """A [128, D] float32 SBUF tile holding the HBM vector ``vec`` ([D]) on every partition."""
    (d,) = vec.shape if len(vec.shape) == 1 else (None,)
    if d is None:
        raise refuse("kernel", f"{name} must be one-dimensional, got shape {vec.shape}")
    row = nl.ndarray((1, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=vec)
    ones = nl.ndarray((1, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(ones, 1.0)
    full = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
    step = nl.tile_size.gemm_moving_fmax
    for c in nl.affine_range((d + step - 1) // step):
        cols = slice(c * step, min(d, (c + 1) * step))
        width = cols.stop - cols.start
        bank = nl.ndarray((P, width), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(bank, ones, row[:, cols])  # ones.T @ row: exact (products of 1.0)
        nisa.tensor_copy(full[:, cols], bank)
    return full


def _check_2d(kernel: str, x, **vectors) -> tuple[int, int]:
    if len(x.shape) != 2:
        raise refuse(f"kernel {kernel}", f"x must be [N, D], got shape {x.shape}")
    n, d = x.shape
    for name, v in vectors.items():
        if tuple(v.shape) != (d,):
            raise refuse(f"kernel {kernel}", f"{name} must have shape ({d},), got {v.shape}")
    return n, d


@nki.jit
def softmax(x):
    """``softmax(x, dim=-1)``: max (VectorE), exp(x - max) with the row sums in the same
    ScalarE instruction, 1 / sum and the scaling (VectorE); float32 inside."""
    n, d = _check_2d("softmax", x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for rows, r in _row_tiles(n):
        t = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        neg_max = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(neg_max, nl.maximum, t, axis=1, negate=True)
        e = nl.ndarray((r, d), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(e, nl.exp, t, bias=neg_max, reduce_op=nl.add, reduce_res=sums)
        inv = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(inv, sums)
        y = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(y, e, nl.multiply, inv)
        nisa.dma_copy(dst=out[rows, :], src=y)
    return out


@nki.jit
def rmsnorm(x, w):
    """``x * rsqrt(mean(x^2) + eps) * w``: ScalarE squares a tile and sums each row in one
    instruction; VectorE forms ``mean + eps``, ScalarE its rsqrt, VectorE scales the rows
    and multiplies by the broadcast weight."""
    n, d = _check_2d("rmsnorm", x, w=w)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    w_all = broadcast_row(w, "w")
    for rows, r in _row_tiles(n):
        t = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        squares = nl.ndarray((r, d), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares, op=nl.square, data=t, reduce_op=nl.add, reduce_res=sums)
        scale = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(scale, sums, nl.multiply, 1.0 / d, op1=nl.add, operand1=EPS)
        nisa.activation(dst=scale, op=nl.rsqrt, data=scale)
        y = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(y, t, nl.multiply, scale, nl.multiply, w_all[:r, :])
        nisa.dma_copy(dst=out[rows, :], src=y)
    return out


@nki.jit
def layernorm(x, gamma, beta):
    """``(x - mean) * rsqrt(var + eps) * gamma + beta`` (biased variance, as torch): the row
    sums (VectorE), the squared deviations summed in one ScalarE
    instruction (``square(x - mean)``), rsqrt on ScalarE, then two VectorE
    ``scalar_tensor_tensor``: ``(x - mean) * gamma`` and ``that * rstd + beta``."""
    n, d = _check_2d("layernorm", x, gamma=gamma, beta=beta)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g_all = broadcast_row(gamma, "gamma")
    b_all = broadcast_row(beta, "beta")
    for rows, r in _row_tiles(n):
        t = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        sums = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(sums, nl.add, t, axis=1)
        neg_mean = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(neg_mean, sums, nl.multiply, -1.0 / d)
        scratch = nl.ndarray((r, d), dtype=nl.float32, buffer=nl.sbuf)
        squares = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(scratch, nl.square, t, bias=neg_mean, reduce_op=nl.add, reduce_res=squares)
        rstd = nl.ndarray((r, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(rstd, squares, nl.multiply, 1.0 / d, op1=nl.add, operand1=EPS)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)
        scaled = nl.ndarray((r, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(scaled, t, nl.add, neg_mean, nl.multiply, g_all[:r, :])
        y = nl.ndarray((r, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(y, scaled, nl.multiply, rstd, nl.add, b_all[:r, :])
        nisa.dma_copy(dst=out[rows, :], src=y)
    return out
