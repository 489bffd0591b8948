"""The NKI kernel library at realistic sizes: emulator estimate vs cost model vs roofline.

For each kernel of ``torchneuron.nki.kernels`` (trn2, one NeuronCore, BF16 inputs):

- the emulator's estimate (``nki.estimate``: the engine schedule of the kernel's
  instructions), its busiest engines' utilization and its SBUF (bytes per partition) and
  PSUM (banks) high-water marks;
- the cost model's estimate of the same computation written as a torch function, lowered
  through the compiler to optimized StableHLO and estimated on one logical core of LNC=1
  (one physical core, as the kernel runs on);
- the roofline: max(FLOPs / TensorE BF16 peak (causal attention: the FLOPs of the blocks
  on and below the diagonal at 128-query granularity), minimum HBM bytes / the core's HBM (DMA)
  bandwidth), from the hardware table, and the estimate's share of it.

Nothing runs on hardware and no numbers are computed: only shapes and dtypes matter.

    python benchmarks/nki_kernels.py        # ~30 s on 2 cores
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

import torchneuron.nki.language as nl
from torchneuron import nki
from torchneuron.compiler.exported import exported_graph
from torchneuron.compiler.pipeline import compile_graph
from torchneuron.estimate.cost_model import estimate_text
from torchneuron.nki import kernels, timing
from torchneuron.target.hardware import chip

TARGET = "trn2"
BF16 = nl.bfloat16.numpy


class _Function(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def cost_model_seconds(fn, arrays) -> float:
    """The cost model's latency of ``fn`` on torch tensors shaped like ``arrays`` (one
    logical core, LNC=1)."""
    tensors = tuple(
        torch.zeros(a.shape, dtype=torch.bfloat16 if a.dtype == BF16 else torch.float32)
        for a in arrays
    )
    graph = exported_graph(torch.export.export(_Function(fn), tensors))
    compiled = compile_graph(
        graph.graph_module,
        tensors,
        name="kernel",
        weights=graph.weights,
        target=TARGET,
        stop_after="optimized",
        use_cache=False,
    )
    return estimate_text(compiled.artifacts["optimized"], TARGET, 1).latency_s


def roofline_seconds(flops: float, hbm_bytes: float) -> tuple[float, str]:
    spec = chip(TARGET)
    compute = flops / spec.tensor_engine.flops_per_core("bfloat16")
    memory = hbm_bytes / timing.dma_bytes_per_second(spec, hbm=True)
    return (compute, "TensorE") if compute >= memory else (memory, "HBM")


def _rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + kernels.EPS) * w).to(x.dtype)


def _ln(x, g, b):
    return F.layer_norm(x.float(), (x.shape[-1],), g, b, eps=kernels.EPS).to(x.dtype)


class _Causal:
    """``kernel(..., causal=True)`` for ``nki.estimate``."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def estimate(self, *arrays):
        return nki.estimate(self.kernel, target=TARGET)(*arrays, causal=True)


def _causal_attention(q, k, v):
    s, hd = q.shape
    keep = torch.ones(s, s, dtype=torch.bool).tril()
    scores = ((q @ k.T) * (1 / math.sqrt(hd))).masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, -1) @ v


def cases():
    """(name, kernel, arrays, torch function, FLOPs, minimum HBM bytes)."""
    z = lambda *shape, dtype=BF16: np.zeros(shape, dtype)  # noqa: E731
    n, d, rows, cols = 2048, 1024, 4096, 2048
    f = 2048
    s, hd = 2048, 128
    yield ("matmul 2048^3", kernels.matmul_tiled, (z(n, n), z(n, n)), lambda a, b: a.T @ b,
           2 * n**3, 3 * n * n * 2)  # fmt: skip
    yield ("softmax 4096x2048", kernels.softmax, (z(rows, cols),),
           lambda x: torch.softmax(x, -1), 0, 2 * rows * cols * 2)  # fmt: skip
    yield ("rmsnorm 4096x2048", kernels.rmsnorm, (z(rows, cols), z(cols, dtype=np.float32)),
           _rms, 0, 2 * rows * cols * 2 + cols * 4)  # fmt: skip
    yield ("layernorm 4096x2048", kernels.layernorm,
           (z(rows, cols), z(cols, dtype=np.float32), z(cols, dtype=np.float32)),
           _ln, 0, 2 * rows * cols * 2 + 2 * cols * 4)  # fmt: skip
    yield ("gelu_mlp 2048x1024x2048", kernels.gelu_mlp, (z(n, d), z(d, f), z(f, d)),
           lambda x, w1, w2: F.gelu(x @ w1) @ w2, 4 * n * d * f, (2 * n * d + 2 * d * f) * 2)  # fmt: skip
    yield ("swiglu_mlp 2048x1024x2048", kernels.swiglu_mlp,
           (z(n, d), z(d, f), z(d, f), z(f, d)),
           lambda x, wg, wu, wd: (F.silu(x @ wg) * (x @ wu)) @ wd,
           6 * n * d * f, (2 * n * d + 3 * d * f) * 2)  # fmt: skip
    yield ("flash_attention 2048x2048 d128", kernels.flash_attention,
           (z(s, hd), z(s, hd), z(s, hd)),
           lambda q, k, v: torch.softmax((q @ k.T) * (1 / math.sqrt(hd)), -1) @ v,
           4 * s * s * hd, 4 * s * hd * 2)  # fmt: skip
    yield ("flash_attention causal", _Causal(kernels.flash_attention),
           (z(s, hd), z(s, hd), z(s, hd)), _causal_attention,
           2 * s * (s + 128) * hd, 4 * s * hd * 2)  # fmt: skip


def main() -> None:
    start = time.perf_counter()
    rows = []
    for name, kernel, arrays, fn, flops, hbm_bytes in cases():
        if isinstance(kernel, _Causal):
            run = kernel.estimate(*arrays)
        else:
            run = nki.estimate(kernel, target=TARGET)(*arrays)
        busy = run.schedule.utilization()
        top = sorted(busy.items(), key=lambda kv: -kv[1])[:2]
        roof, bound = roofline_seconds(flops, hbm_bytes)
        rows.append(
            (
                name,
                run.seconds,
                " ".join(f"{engine} {share:.0%}" for engine, share in top),
                run.plan.sbuf_high_water,
                run.plan.psum_high_water,
                cost_model_seconds(fn, arrays),
                roof,
                bound,
            )
        )
    print(
        f"{'kernel (bf16, trn2, 1 core)':<32} {'emulator':>10} {'busiest engines':<24} "
        f"{'SBUF B/part':>11} {'PSUM':>4} {'cost model':>11} {'roofline':>10} {'bound':<7} "
        f"{'of roof':>7}"
    )
    for name, seconds, engines, sbuf, psum, model, roof, bound in rows:
        print(
            f"{name:<32} {seconds * 1e6:>7.1f} us {engines:<24} {sbuf:>11} {psum:>4} "
            f"{model * 1e6:>8.1f} us {roof * 1e6:>7.1f} us {bound:<7} {roof / seconds:>7.1%}"
        )
    print(
        "\nemulator: nki.estimate's schedule of the kernel; busiest engines: busy time over the "
        "kernel's time (DMA: time the core's HBM bandwidth streams); SBUF: high-water bytes per "
        "partition; PSUM: banks live at once; cost model: the same torch function through the "
        "compiler's cost model (LNC=1); roofline: max(FLOPs at TensorE BF16 peak, minimum HBM "
        "bytes at the core's DMA bandwidth); of roof: roofline / emulator estimate."
        f"\n({time.perf_counter() - start:.1f} s)"
    )


if __name__ == "__main__":
    main()
