"""A tiled matmul: ``out[M, N] = lhsT.T @ rhs`` (BF16 in, float32 accumulation in PSUM).

``lhsT: [K, M]`` has the contraction on the partition axis, as TensorE wants it, and
``rhs: [K, N]``. For each 512-column block of ``rhs`` the kernel keeps the block's K x 512
panel in SBUF; for each 128-row block of the output it loads the K x 128 panel of ``lhsT``
and accumulates K / 128 matmuls into one PSUM bank (float32), then VectorE copies the bank
to SBUF (rounding to the output dtype) and a DMA stores it. The panels of the next block load
while TensorE works, so TensorE stays busy. K and M must be multiples of 128 and N of 512
(or N <= 512).
"""

from __future__ import annotations

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.errors import refuse

TK = nl.tile_size.pmax  # contraction tile (partitions)
TM = nl.tile_size.gemm_stationary_fmax  # output rows per matmul
TN = nl.tile_size.gemm_moving_fmax  # output columns per matmul (one PSUM bank)


@nki.jit
def matmul_tiled(lhsT, rhs):
    k, m = lhsT.shape
    k2, n = rhs.shape
    tn = min(n, TN)
    if k != k2 or k % TK or m % TM or n % tn:
        raise refuse(
            "kernel matmul_tiled",
            f"lhsT {lhsT.shape} and rhs {rhs.shape}: K must match and be a multiple of {TK}, "
            f"M a multiple of {TM}, N a multiple of {TN} or at most {TN}",
        )
    out = nl.ndarray((m, n), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for nb in nl.affine_range(n // tn):
        cols = slice(nb * tn, (nb + 1) * tn)
        rhs_panel = []
        for kb in nl.affine_range(k // TK):
            tile = nl.ndarray((TK, tn), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=rhs[kb * TK : (kb + 1) * TK, cols])
            rhs_panel.append(tile)
        for mb in nl.affine_range(m // TM):
            rows = slice(mb * TM, (mb + 1) * TM)
            acc = nl.ndarray((TM, tn), dtype=nl.float32, buffer=nl.psum)
            for kb in nl.affine_range(k // TK):
                lhs = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhs, src=lhsT[kb * TK : (kb + 1) * TK, rows])
                nisa.nc_matmul(acc, lhs, rhs_panel[kb], accumulate=kb > 0)
            result = nl.ndarray((TM, tn), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(result, acc)
            nisa.dma_copy(dst=out[rows, cols], src=result)
    return out
