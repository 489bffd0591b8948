"""histogramdd natively (bin edges, counts from bin counts or from edges) against the CPU."""

from __future__ import annotations

import pytest
import torch

from torchneuron.lowering.rules.histograms import (
    histogramdd_bin_edges,
    histogramdd_from_bin_cts,
    histogramdd_from_bin_tensors,
)

aten = torch.ops.aten


def _points(seed: int, n: int = 40, d: int = 3) -> torch.Tensor:
    points = torch.randn(n, d, generator=torch.Generator().manual_seed(seed))
    points[0] = points.amax(0)  # a point on the last edge of every dimension
    points[1, 0] = points[2, 0]  # ties
    return points


@pytest.mark.parametrize(
    ("bins", "range_", "weighted", "density"),
    [
        ([3, 4, 2], None, False, False),
        ([1, 5, 3], None, True, False),
        ([3, 4, 2], [-1.0, 1.0, -0.5, 2.0, 0.0, 0.1], False, True),
        ([2, 2, 2], [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0], True, True),
    ],
)
def test_the_rules_match_the_cpu(bins, range_, weighted, density):
    points = _points(len(bins) + int(weighted))
    weight = torch.rand(points.shape[0]) if weighted else None
    edges = histogramdd_bin_edges(points, bins, range=range_)
    expected_edges = aten._histogramdd_bin_edges(points, bins, range=range_)
    for got, want in zip(edges, expected_edges):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(
        histogramdd_from_bin_cts(points, bins, range=range_, weight=weight, density=density),
        aten._histogramdd_from_bin_cts(points, bins, range=range_, weight=weight, density=density),
    )
    torch.testing.assert_close(
        histogramdd_from_bin_tensors(points, expected_edges, weight=weight, density=density),
        aten._histogramdd_from_bin_tensors(points, expected_edges, weight=weight, density=density),
    )


def test_a_constant_dimension_gets_a_unit_wide_range():
    points = torch.tensor([[1.0, 2.0], [1.0, 3.0]])
    for got, want in zip(
        histogramdd_bin_edges(points, [2, 2]), aten._histogramdd_bin_edges(points, [2, 2])
    ):
        torch.testing.assert_close(got, want)


def test_histogramdd_is_native_in_both_modes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    points = _points(9)

    def histogram(p):
        return torch.histogramdd(p, bins=[3, 2, 4], density=True)

    expected = histogram(points)
    got = histogram(points.to("neuron"))
    torch.testing.assert_close(got.hist.cpu(), expected.hist)
    torch._dynamo.reset()
    compiled = torch.compile(histogram, backend="neuron")(points)
    torch.testing.assert_close(compiled.hist, expected.hist)
    for a, b in zip(compiled.bin_edges, expected.bin_edges):
        torch.testing.assert_close(a, b)
