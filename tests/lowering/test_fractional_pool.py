"""fractional_max_pool2d natively, from given random samples, against the CPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torchneuron.lowering.rules.fractional_pool import fractional_max_pool2d

aten = torch.ops.aten


@pytest.mark.parametrize(
    ("shape", "kernel", "output"),
    [
        ((1, 3, 9, 9), (3, 3), (2, 2)),
        ((2, 2, 10, 13), (2, 3), (4, 5)),
        ((3, 7, 8), (2, 2), (1, 3)),
        ((1, 1, 5, 5), (1, 1), (5, 5)),
    ],
)
def test_the_rule_matches_the_cpu(shape, kernel, output):
    generator = torch.Generator().manual_seed(sum(shape))
    image = torch.randn(*shape, generator=generator)
    planes = shape[:-2] if len(shape) == 4 else (1, shape[0])  # unbatched: one batch
    samples = torch.rand(*planes, 2, generator=generator)
    want = aten.fractional_max_pool2d(image, list(kernel), list(output), samples)
    got = fractional_max_pool2d(image, list(kernel), list(output), samples)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


def test_ties_take_the_first_position_as_the_cpu():
    image = torch.zeros(1, 1, 6, 6)
    samples = torch.full((1, 1, 2), 0.3)
    want = aten.fractional_max_pool2d(image, [2, 2], [3, 3], samples)
    got = fractional_max_pool2d(image, [2, 2], [3, 3], samples)
    torch.testing.assert_close(got[1], want[1])


def test_is_native_in_both_modes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    image = torch.randn(2, 3, 11, 9)
    samples = torch.rand(2, 3, 2)

    def pool(x, u):
        return F.fractional_max_pool2d(
            x, 3, output_size=(4, 3), return_indices=True, _random_samples=u
        )

    want = pool(image, samples)
    got = pool(image.to("neuron"), samples.to("neuron"))
    torch.testing.assert_close(got[0].cpu(), want[0])
    torch.testing.assert_close(got[1].cpu(), want[1])
    torch._dynamo.reset()
    compiled = torch.compile(pool, backend="neuron")(image, samples)
    torch.testing.assert_close(compiled[0], want[0])
    torch.testing.assert_close(compiled[1], want[1])
