"""Nearest upsampling in eager mode follows PyTorch's CPU kernel, not its decomposition.

The 2-D kernel copies when the output size equals the input's and halves the index when
it is twice the input's, whatever the scale factor says (the 1-D and 3-D forwards do
not; every backward does), and all clamp the source to the last input; PyTorch's Python
decomposition does neither. With
``scale_factor=1.1`` on a size of 7 (output 7) the decomposition reads each row shifted
(0, 0, 1, ..., 5 where the CPU reads 0, ..., 6), and a product that rounds past the end
read out of bounds (which the bounds check refused). Under torch.compile the
decomposition is PyTorch's own (AOTAutograd runs it before our rules see the op) and
Inductor gives the same shifted answer; see docs/numerics.md.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


@pytest.mark.parametrize("scale", [1.1, 2.1, 0.95, 0.3333333, 13 / 7])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_eager_matches_the_cpu_kernel(monkeypatch, scale, mode):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x = torch.randn(1, 2, 7, 9, generator=torch.Generator().manual_seed(0))
    expected = F.interpolate(x, scale_factor=scale, mode=mode)
    got = F.interpolate(x.to("neuron"), scale_factor=scale, mode=mode).cpu()
    assert torch.equal(got, expected)


@pytest.mark.parametrize("dims", [1, 3])
def test_one_and_three_dimensions_compute_every_index(monkeypatch, dims):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    shape = (1, 2, *([5] * dims))
    x = torch.randn(shape, generator=torch.Generator().manual_seed(dims))
    for scale in (1.1, 2.1, 0.6):
        expected = F.interpolate(x, scale_factor=scale, mode="nearest")
        assert torch.equal(F.interpolate(x.to("neuron"), scale_factor=scale).cpu(), expected)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_gradients_match_the_cpu(monkeypatch, dims):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x = torch.randn(1, 1, *([5] * dims), generator=torch.Generator().manual_seed(2))
    cpu = x.clone().requires_grad_()
    F.interpolate(cpu, scale_factor=1.1).pow(2).sum().backward()
    device = x.to("neuron").requires_grad_()
    F.interpolate(device, scale_factor=1.1).pow(2).sum().backward()
    torch.testing.assert_close(device.grad.cpu(), cpu.grad)
