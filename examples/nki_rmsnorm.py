"""RMSNorm as an NKI kernel on the emulated NeuronCore, checked against NumPy.

    python examples/nki_rmsnorm.py

Each 128-row tile of ``x`` is loaded by DMA; ScalarE squares it and sums each row in the
same instruction (``activation`` with ``reduce_res``); VectorE turns the sums into
``1 / sqrt(mean + eps)`` (with ScalarE's rsqrt) and scales the rows; the weight row is
broadcast to all 128 partitions once, by a K=1 matmul on TensorE.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki

EPS = 1e-6


@nki.jit
def rmsnorm(x, w):
    """x: [N, D] (N a multiple of 128, D <= 512), w: [D]. Returns x * rsqrt(mean(x^2) + eps) * w."""
    n, d = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    # w on every partition: ones[1, 128].T @ w[1, D] on TensorE.
    w_row = nl.ndarray((1, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=w)
    ones = nl.ndarray((1, nl.tile_size.pmax), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(ones, 1.0)
    w_psum = nl.ndarray((nl.tile_size.pmax, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(w_psum, ones, w_row)
    w_all = nl.ndarray((nl.tile_size.pmax, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(w_all, w_psum)
    for i in nl.affine_range(n // nl.tile_size.pmax):
        rows = slice(i * 128, (i + 1) * 128)
        t = nl.ndarray((nl.tile_size.pmax, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        squares = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares, op=nl.square, data=t, reduce_op=nl.add, reduce_res=sums)
        scale = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(scale, sums, nl.multiply, 1.0 / d, op1=nl.add, operand1=EPS)
        nisa.activation(dst=scale, op=nl.rsqrt, data=scale)
        normed = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(normed, t, nl.multiply, scale)
        y = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y, data1=normed, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=out[rows, :], src=y)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 512)).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)
    result = nki.profile(rmsnorm)(x, w)
    expected = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w
    print(f"max abs error vs NumPy: {np.abs(result.outputs - expected).max():.3g}")
    print(result.summary())


if __name__ == "__main__":
    main()
