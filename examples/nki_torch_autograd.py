"""Autograd through NKI kernels: a scaled matmul whose forward and backward are kernels.

    python examples/nki_torch_autograd.py

``scaled_matmul_tn(lhs_t, rhs, scale)`` computes ``scale * lhs_t.T @ rhs`` on TensorE (the
contraction dimension on the partitions, at most 128; the result's rows at most 128 and its
columns at most 512), the scale applied on VectorE while the result leaves PSUM. One kernel
serves the forward and both gradients, which are matmuls of the same form:

    y  = s * a @ b       = kernel(a.T, b, s)
    da = s * dy @ b.T    = kernel(dy.T, b.T, s)
    db = s * a.T @ dy    = kernel(a, dy, s)

``ScaledMatmul`` pairs them in a ``torch.autograd.Function``; gradients equal torch's, in
eager mode and under ``torch.compile(backend="neuron")``.
"""

from __future__ import annotations

import torch

import torchneuron.nki.isa as nisa
import torchneuron.nki.language as nl
from torchneuron import nki


@nki.jit
def scaled_matmul_tn(lhs_t, rhs, scale):
    """lhs_t: [K, M], rhs: [K, N] (K, M <= 128, N <= 512) -> scale * lhs_t.T @ rhs, [M, N]."""
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    stationary = nl.ndarray((k, m), dtype=lhs_t.dtype, buffer=nl.sbuf)
    moving = nl.ndarray((k, n), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=stationary, src=lhs_t)
    nisa.dma_copy(dst=moving, src=rhs)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(acc, stationary, moving)
    result = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(result, acc, nl.multiply, scale)
    nisa.dma_copy(dst=out, src=result)
    return out


class ScaledMatmul(torch.autograd.Function):
    """``scale * a @ b`` with kernels for the forward and the backward."""

    @staticmethod
    def forward(ctx, a, b, scale: float):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return scaled_matmul_tn(a.t().contiguous(), b, scale)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.contiguous()
        grad_a = scaled_matmul_tn(grad.t().contiguous(), b.t().contiguous(), ctx.scale)
        grad_b = scaled_matmul_tn(a, grad, ctx.scale)
        return grad_a, grad_b, None


def scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale: float) -> torch.Tensor:
    return ScaledMatmul.apply(a, b, scale)


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(64, 96, requires_grad=True)
    b = torch.randn(96, 80, requires_grad=True)
    (0.5 * a @ b).square().sum().backward()
    expected = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    scaled_matmul(a, b, 0.5).square().sum().backward()
    for got, want in zip((a.grad, b.grad), expected):
        print(f"max abs gradient error vs torch: {(got - want).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
