"""RMSNorm as an NKI kernel on the emulated NeuronCore, checked against NumPy.

    python examples/nki_rmsnorm.py

The kernel is ``torchneuron.nki.kernels.rmsnorm`` (torchneuron/nki/kernels/rows.py).
Each 128-row tile of ``x`` is loaded by DMA; ScalarE squares it and sums each row in the
same instruction (``activation`` with ``reduce_res``); VectorE turns the sums into
``1 / sqrt(mean + eps)`` (with ScalarE's rsqrt) and scales the rows; the weight row is
broadcast to all 128 partitions once, by a K=1 matmul on TensorE.
"""

from __future__ import annotations

import numpy as np

from torchneuron import nki
from torchneuron.nki.kernels import EPS, rmsnorm

__all__ = ["EPS", "rmsnorm"]


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
