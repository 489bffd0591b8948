"""A tiled BF16 matmul as an NKI kernel, its estimated time and the TensorE roofline.

    python examples/nki_matmul.py

The kernel is ``torchneuron.nki.kernels.matmul_tiled`` (torchneuron/nki/kernels/matmul.py).
``out[M, N] = lhsT.T @ rhs`` with ``lhsT: [K, M]`` (the contraction on the partition axis,
as TensorE wants it) and ``rhs: [K, N]``. For each 512-column block of ``rhs`` the kernel
keeps the block's K x 512 panel in SBUF; for each 128-row block of the output it loads the
K x 128 panel of ``lhsT`` and accumulates K / 128 matmuls into one PSUM bank (float32), then
VectorE copies the bank to SBUF (rounding to the output dtype) and a DMA stores it. The
panels of the next block load while TensorE works, so TensorE stays busy.
"""

from __future__ import annotations

import numpy as np

import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.nki.kernels import matmul_tiled
from torchneuron.target.hardware import chip

__all__ = ["matmul_tiled", "tensor_engine_roofline_seconds"]


def tensor_engine_roofline_seconds(m: int, k: int, n: int, target: str = "trn2") -> float:
    """2 * M * K * N FLOPs at one TensorE's BF16 peak (hardware table)."""
    return 2 * m * k * n / chip(target).tensor_engine.flops_per_core("bfloat16")


def main() -> None:
    rng = np.random.default_rng(0)
    m = k = n = 2048
    bf16 = nl.bfloat16.numpy
    lhsT = rng.standard_normal((k, m)).astype(bf16)
    rhs = rng.standard_normal((k, n)).astype(bf16)
    run = nki.estimate(matmul_tiled)(lhsT, rhs)
    roofline = tensor_engine_roofline_seconds(m, k, n)
    print(
        f"{m}x{k}x{n} bf16: estimated {run.seconds * 1e6:.1f} us, TensorE roofline "
        f"{roofline * 1e6:.1f} us ({roofline / run.seconds:.1%} of peak)"
    )
    small = nki.simulate(matmul_tiled)(lhsT[:256, :128], rhs[:256, :512])
    expected = lhsT[:256, :128].astype(np.float32).T @ rhs[:256, :512].astype(np.float32)
    error = np.abs(small.astype(np.float32) - expected.astype(bf16).astype(np.float32)).max()
    print(f"256x128x512 on the emulator: max abs difference vs NumPy {error:.3g}")


if __name__ == "__main__":
    main()
