"""FlexAttention on an emulated NeuronCore: causal, sliding-window and document masks,
ALiBi, grouped-query heads, forward and backward, compiled natively.

    python examples/flex_attention.py

Each variant runs compiled on ``neuron`` (fallback off) and with PyTorch's reference
implementation on the CPU; the script prints the largest difference of the outputs, and
of the gradients against the same attention written out by hand (PyTorch has no
FlexAttention backward on the CPU).
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("TORCHNEURON_NO_FALLBACK", "1")

import torch  # noqa: E402
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402

B, HQ, HKV, S, D = 2, 8, 2, 64, 16
DOCUMENTS = torch.tensor([0] * 20 + [1] * 30 + [2] * 14)  # three packed sequences


def masks(device):
    documents = DOCUMENTS.to(device)
    return {
        "causal": lambda b, h, q, kv: q >= kv,
        "sliding window 16": lambda b, h, q, kv: (q >= kv) & (q - kv < 16),
        "documents": lambda b, h, q, kv: (documents[q] == documents[kv]) & (q >= kv),
    }


def alibi(score, b, h, q, kv):
    slope = torch.exp2(-8.0 * (h + 1) / HQ)
    return score - slope * (q - kv).abs()


def by_hand(q, k, v, mask_mod):
    """The same attention written out, for the gradients."""
    k, v = (t.repeat_interleave(HQ // HKV, 1) for t in (k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    heads = torch.arange(HQ).view(1, HQ, 1, 1)
    distance = (torch.arange(S).view(S, 1) - torch.arange(S).view(1, S)).abs()
    scores = scores - torch.exp2(-8.0 * (heads + 1) / HQ) * distance
    keep = mask_mod(0, 0, torch.arange(S).view(S, 1), torch.arange(S).view(1, S))
    return torch.softmax(scores.masked_fill(~keep, -math.inf), -1) @ v


def main() -> None:
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(B, HQ, S, D, generator=generator)
    k, v = (torch.randn(B, HKV, S, D, generator=generator) for _ in range(2))
    on_cpu, on_device = masks("cpu"), masks("neuron")
    for name in on_cpu:
        cpu_mask = create_block_mask(on_cpu[name], None, None, S, S, device="cpu")
        device_mask = create_block_mask(on_device[name], None, None, S, S, device="neuron")

        @torch.compile(backend="neuron", fullgraph=True)
        def attend(q, k, v, block_mask):
            return flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask, enable_gqa=True)

        want = flex_attention(q, k, v, score_mod=alibi, block_mask=cpu_mask, enable_gqa=True)
        leaves = [t.to("neuron").requires_grad_() for t in (q, k, v)]
        got = attend(*leaves, device_mask)
        got.sum().backward()
        reference = [t.clone().requires_grad_() for t in (q, k, v)]
        by_hand(*reference, on_cpu[name]).sum().backward()
        gradient_error = max(
            (a.grad.cpu() - b.grad).abs().max().item() for a, b in zip(leaves, reference)
        )
        print(
            f"{name:>18}: output differs from the CPU's by {(got.detach().cpu() - want).abs().max().item():.1e}, "
            f"gradients by {gradient_error:.1e}"
        )


if __name__ == "__main__":
    main()
