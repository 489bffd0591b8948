"""F.linear_cross_entropy with chunking options, compiled natively: loss and gradients
against eager CPU (PyTorch's own chunked kernels)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn import LinearCrossEntropyOptions


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_loss_and_gradients_match_eager(monkeypatch, reduction, weighted):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    generator = torch.Generator().manual_seed(11)
    batch, features, classes = 10, 6, 7
    x = torch.randn(batch, features, generator=generator)
    w = torch.randn(classes, features, generator=generator)
    b = torch.randn(classes, generator=generator)
    target = torch.randint(0, classes, (batch,), generator=generator)
    target[3] = -100  # ignored
    class_weight = torch.rand(classes, generator=generator) + 0.5 if weighted else None
    options = LinearCrossEntropyOptions(batch_chunk_size=4, allow_retain_graph=True)

    def loss_of(x, w, b):
        loss = F.linear_cross_entropy(
            x,
            w,
            target,
            linear_bias=b,
            weight=class_weight,
            reduction=reduction,
            ignore_index=-100,
            options=options,
        )
        return loss.sum() if reduction == "none" else loss

    results = {}
    for name, fn in (("eager", loss_of), ("neuron", torch.compile(loss_of, backend="neuron"))):
        leaves = [t.clone().requires_grad_() for t in (x, w, b)]
        loss = fn(*leaves)
        loss.backward()
        results[name] = (loss.detach(), *(t.grad for t in leaves))
    for got, want in zip(results["neuron"], results["eager"]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
