"""The issue's example: one NKI kernel called from eager PyTorch, torch.compile and NumPy.

    python examples/nki_torch.py

The library's RMSNorm kernel (torchneuron.nki.kernels) runs on ``neuron`` tensors in eager
mode (the emulator reads and writes the device's memory), inside a compiled graph (the
kernel runs between two compiled segments), and on NumPy arrays through ``nki.simulate``;
the profiler shows the kernel call with its estimated time next to the compiled segments.
"""

from __future__ import annotations

import os

import torch

import torchneuron
from torchneuron import nki
from torchneuron.nki.kernels import EPS, rmsnorm


def main() -> None:
    os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")
    torch.manual_seed(0)
    x, w, w2 = torch.randn(512, 256), torch.randn(256), torch.randn(256, 64)
    expected = x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + EPS) * w

    y = rmsnorm(x.to("neuron"), w.to("neuron"))  # eager: runs on the emulated core
    print(f"eager on {y.device}: max abs error {(y.cpu() - expected).abs().max().item():.3g}")

    w2n = w2.to("neuron")
    f = torch.compile(lambda x, w: rmsnorm(x, w) @ w2n, backend="neuron")
    with torchneuron.profiler.profile() as prof:
        z = f(x.to("neuron"), w.to("neuron"))
    print(f"compiled: max abs error {(z.cpu() - expected @ w2).abs().max().item():.3g}")

    s = nki.simulate(rmsnorm)(x.numpy(), w.numpy())  # NumPy in, NumPy out
    print(f"simulate: max abs error {abs(s - expected.numpy()).max():.3g}")
    print(prof.table())


if __name__ == "__main__":
    main()
