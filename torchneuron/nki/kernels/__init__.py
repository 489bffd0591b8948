"""A library of NKI kernels for the emulated NeuronCore, each checked against PyTorch.

    from torchneuron import nki
    from torchneuron.nki.kernels import softmax, flash_attention

    y = nki.simulate(softmax)(x)                       # NumPy in, NumPy out
    run = nki.estimate(flash_attention)(q, k, v)       # the schedule: run.seconds

- ``matmul_tiled(lhsT, rhs)``: ``lhsT.T @ rhs``, PSUM float32 accumulation (``matmul``).
- ``softmax(x)``, ``rmsnorm(x, w)``, ``layernorm(x, gamma, beta)``: row-wise over the last
  axis, 128 rows per tile (``rows``).
- ``gelu_mlp(x, w1, w2)`` and ``swiglu_mlp(x, w_gate, w_up, w_down)`` (``mlp``).
- ``flash_attention(q, k, v)``: one head, online softmax over key tiles (``attention``).

docs/nki.md ("Kernel library") gives each kernel's algorithm, tiling, limits and estimates;
tests/nki/test_kernels.py checks them against PyTorch; benchmarks/nki_kernels.py compares
their estimates with the cost model's and the roofline.
"""

from __future__ import annotations

from torchneuron.nki.kernels.attention import flash_attention
from torchneuron.nki.kernels.matmul import matmul_tiled
from torchneuron.nki.kernels.mlp import gelu_mlp, swiglu_mlp
from torchneuron.nki.kernels.rows import EPS, layernorm, rmsnorm, softmax

__all__ = [
    "EPS",
    "flash_attention",
    "gelu_mlp",
    "layernorm",
    "matmul_tiled",
    "rmsnorm",
    "softmax",
    "swiglu_mlp",
]
