"""Float8 training by hand, natively on an emulated NeuronCore, against the same on the CPU.

    python examples/fp8_training.py [--steps 5]

The recipe of float8 training libraries (TorchAO's ``Float8Linear`` with dynamic
tensor-wise scaling), written out: each linear layer's product runs as
``torch._scaled_mm`` on float8 operands, the forward's activations and weights in
E4M3, the backward's incoming gradient in E5M2, every tensor scaled by
``largest / amax`` before its cast and the product rescaled by the inverses.
The master weights and the optimizer stay in float32. The same steps run compiled on
``neuron`` (fallback off) and eagerly on the CPU, whose float8 kernels are the
reference; the losses agree to the last printed digit.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def to_float8(t: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``t`` scaled into ``dtype``'s range and cast, and the inverse scale."""
    largest = torch.finfo(dtype).max
    scale = largest / t.detach().abs().amax().float().clamp(min=1e-12)
    return (t.float() * scale).clamp(-largest, largest).to(dtype), scale.reciprocal()


class Float8MatMul(torch.autograd.Function):
    """``x @ w.T`` with float8 operands in both directions."""

    @staticmethod
    def forward(ctx, x, weight):
        x8, x_scale = to_float8(x, E4M3)
        w8, w_scale = to_float8(weight, E4M3)
        ctx.save_for_backward(x8, x_scale, w8, w_scale)
        return torch._scaled_mm(x8, w8.t(), scale_a=x_scale, scale_b=w_scale, out_dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x8, x_scale, w8, w_scale = ctx.saved_tensors
        g8, g_scale = to_float8(grad, E5M2)
        grad_x = torch._scaled_mm(
            g8, w8.t().contiguous().t(), scale_a=g_scale, scale_b=w_scale, out_dtype=grad.dtype
        )
        grad_w = torch._scaled_mm(
            g8.t().contiguous(),
            x8.t().contiguous().t(),
            scale_a=g_scale,
            scale_b=x_scale,
            out_dtype=grad.dtype,
        )
        return grad_x, grad_w


class Float8Linear(nn.Linear):
    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        out = Float8MatMul.apply(flat, self.weight)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], -1)


def model() -> nn.Module:
    return nn.Sequential(
        Float8Linear(64, 128), nn.GELU(), Float8Linear(128, 128), nn.GELU(), Float8Linear(128, 10)
    )


def train_step(net, x, labels, optimizer):
    loss = F.cross_entropy(net(x), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    on_cpu = model()
    on_device = model()
    on_device.load_state_dict(on_cpu.state_dict())
    on_device.to("neuron")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (on_cpu, on_device)]
    step = torch.compile(train_step, backend="neuron")
    generator = torch.Generator().manual_seed(1)
    for index in range(args.steps):
        x = torch.randn(32, 64, generator=generator)
        labels = torch.randint(0, 10, (32,), generator=generator)
        got = step(on_device, x.to("neuron"), labels.to("neuron"), optimizers[1])
        want = train_step(on_cpu, x, labels, optimizers[0])
        print(f"step {index}: loss {got.item():.5f} (CPU {want.item():.5f}, its float8 kernels)")


if __name__ == "__main__":
    main()
