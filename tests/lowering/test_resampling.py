"""Antialiased bilinear resizing and 3-D grid sampling, natively, against the CPU."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from torchneuron.lowering.rules.resampling import (
    grid_sampler_3d,
    upsample_bilinear2d_aa,
    upsample_bilinear2d_aa_vec,
)

aten = torch.ops.aten


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(3, 3), (5, 5), (17, 34), (10, 20), (7, 41), (1, 1), (20, 3)])
def test_the_antialiased_resize_rule_matches_the_cpu(size, align_corners):
    image = torch.randn(2, 3, 10, 20, generator=torch.Generator().manual_seed(0))
    expected = aten._upsample_bilinear2d_aa(image, list(size), align_corners)
    got = upsample_bilinear2d_aa(image, list(size), align_corners)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize(
    ("scales", "align_corners"),
    list(itertools.product([(1.7, 0.9), (0.8, 1.0), (2.0, 0.5), (0.33, 3.1)], [False, True])),
)
def test_scale_factors_match_the_cpu(scales, align_corners):
    image = torch.randn(2, 3, 10, 20, generator=torch.Generator().manual_seed(1))
    expected = aten._upsample_bilinear2d_aa.vec(image, None, align_corners, list(scales))
    got = upsample_bilinear2d_aa_vec(image, None, align_corners, list(scales))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=2e-5)


def test_antialiased_interpolate_is_native_in_both_modes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    image = torch.randn(1, 2, 12, 9)

    def resize(x):
        return F.interpolate(x, size=(5, 4), mode="bilinear", antialias=True)

    expected = resize(image)
    torch.testing.assert_close(resize(image.to("neuron")).cpu(), expected, rtol=1e-5, atol=2e-5)
    torch._dynamo.reset()
    torch.testing.assert_close(
        torch.compile(resize, backend="neuron")(image), expected, rtol=1e-5, atol=2e-5
    )


def _grid_case(seed: int, spread: float = 1.3):
    generator = torch.Generator().manual_seed(seed)
    volume = torch.randn(2, 3, 4, 5, 6, generator=generator)
    # coordinates beyond [-1, 1] exercise the padding modes
    grid = (torch.rand(2, 3, 4, 2, 3, generator=generator) * 2 - 1) * spread
    return volume, grid


@pytest.mark.parametrize(
    ("mode", "padding", "align_corners"),
    list(itertools.product([0, 1], [0, 1, 2], [False, True])),
)
def test_the_grid_sampler_3d_rule_matches_the_cpu(mode, padding, align_corners):
    volume, grid = _grid_case(mode * 10 + padding * 2 + int(align_corners))
    expected = aten.grid_sampler_3d(volume, grid, mode, padding, align_corners)
    got = grid_sampler_3d(volume, grid, mode, padding, align_corners)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_grid_sample_3d_is_native_in_both_modes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    volume, grid = _grid_case(7)

    def sample(v, g):
        return F.grid_sample(v, g, mode="bilinear", padding_mode="reflection", align_corners=False)

    expected = sample(volume, grid)
    got = sample(volume.to("neuron"), grid.to("neuron")).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    compiled = torch.compile(sample, backend="neuron")(volume, grid)
    torch.testing.assert_close(compiled, expected, rtol=1e-5, atol=1e-5)
