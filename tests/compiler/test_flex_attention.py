"""FlexAttention on neuron (compiler/flex_attention.py), natively.

Forward results against PyTorch's own implementation on the CPU (its reference); the
backward, which PyTorch does not run on the CPU, against attention written out by hand
with the same bias and mask, on the CPU.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

B, HQ, HKV, S, D = 2, 4, 2, 24, 8


pytestmark = pytest.mark.usefixtures("native_compile")


def _qkv(heads_kv=HKV, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(B, HQ, S, D, generator=generator)
    k = torch.randn(B, heads_kv, S, D, generator=generator)
    v = torch.randn(B, heads_kv, S, D, generator=generator)
    return q, k, v


DOCUMENT = torch.tensor([0] * 7 + [1] * 10 + [2] * 7)  # three packed documents


def causal(b, h, q, kv):
    return q >= kv


def sliding_window(b, h, q, kv):
    return (q >= kv) & (q - kv < 5)


def same_document(device="cpu"):
    """A causal mask within each packed document; the ids live where the indices do."""
    document = DOCUMENT.to(device)

    def mask_mod(b, h, q, kv):
        return (document[q] == document[kv]) & (q >= kv)

    return mask_mod


def alibi(score, b, h, q, kv):
    return score - (h + 1) * 0.25 * (q - kv).abs()


def _dense_mask(mask_mod) -> torch.Tensor:
    q = torch.arange(S).view(S, 1)
    kv = torch.arange(S).view(1, S)
    return mask_mod(0, 0, q, kv)


def _by_hand(q, k, v, mask_mod, with_alibi):
    """Attention written out: repeat kv heads, scores, ALiBi bias, mask, softmax."""
    k = k.repeat_interleave(HQ // k.shape[1], 1)
    v = v.repeat_interleave(HQ // v.shape[1], 1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    if with_alibi:
        heads = torch.arange(HQ).view(1, HQ, 1, 1) + 1
        distance = (torch.arange(S).view(S, 1) - torch.arange(S).view(1, S)).abs()
        scores = scores - heads * 0.25 * distance
    scores = scores.masked_fill(~_dense_mask(mask_mod), -math.inf)
    return torch.softmax(scores, -1) @ v


MASKS = {
    "causal": lambda device: causal,
    "sliding-window": lambda device: sliding_window,
    "document": same_document,
}


@pytest.mark.parametrize(
    "mask, with_alibi",
    [("causal", False), ("sliding-window", True), ("document", True)],
    ids=["causal", "sliding-window-alibi", "document-alibi"],
)
def test_compiled_forward_equals_pytorchs_reference(mask, with_alibi):
    q, k, v = _qkv()
    score_mod = alibi if with_alibi else None

    def attend(q, k, v, block_mask):
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=True)

    want = attend(q, k, v, create_block_mask(MASKS[mask]("cpu"), None, None, S, S, device="cpu"))
    compiled = torch.compile(attend, backend="neuron", fullgraph=True)
    mask_mod = MASKS[mask]("neuron")
    block_mask = create_block_mask(mask_mod, None, None, S, S, device="neuron")
    got = compiled(*(t.to("neuron") for t in (q, k, v)), block_mask)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)


def test_compiled_backward_equals_attention_written_by_hand():
    q, k, v = (t.requires_grad_() for t in _qkv())
    on_device = [t.detach().to("neuron").requires_grad_() for t in (q, k, v)]
    block_mask = create_block_mask(same_document("neuron"), None, None, S, S, device="neuron")

    @torch.compile(backend="neuron", fullgraph=True)
    def attend(q, k, v):
        return flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask, enable_gqa=True)

    upstream = torch.randn(B, HQ, S, D, generator=torch.Generator().manual_seed(5))
    (attend(*on_device) * upstream.to("neuron")).sum().backward()
    (_by_hand(q, k, v, same_document(), True) * upstream).sum().backward()
    for got, want in zip(on_device, (q, k, v)):
        torch.testing.assert_close(got.grad.cpu(), want.grad, rtol=1e-4, atol=1e-5)


def test_eager_flex_attention_on_neuron_equals_the_cpu():
    q, k, v = _qkv(heads_kv=HQ)
    want = flex_attention(q, k, v, score_mod=alibi)
    got = flex_attention(*(t.to("neuron") for t in (q, k, v)), score_mod=alibi)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
