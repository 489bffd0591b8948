"""special.airy_ai natively in float32, against mpmath's exact values (PyTorch's own
float64 kernel is off by up to 3e-6 near x = -2.09, where ours is within 1e-8)."""

from __future__ import annotations

import mpmath
import pytest
import torch

from torchneuron.lowering.rules.special.airy import airy_ai


def _exact(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([float(mpmath.airyai(float(v))) for v in x], dtype=torch.float64)


@pytest.mark.parametrize(
    ("low", "high", "absolute", "relative"),
    [
        (-30.0, -8.5, 1e-5, None),  # oscillating: the phase carries float32's rounding
        (-8.5, 0.0, 2e-7, None),  # the Taylor pieces
        (0.0, 8.5, 1e-7, 2e-6),  # decaying: relative accuracy too
        (8.5, 25.0, 1e-12, 2e-5),  # the asymptotic form, until float32 underflows
    ],
)
def test_the_rule_matches_the_exact_values(low, high, absolute, relative):
    x = torch.linspace(low, high, 601, dtype=torch.float32)
    exact = _exact(x)
    got = airy_ai(x).double()
    error = (got - exact).abs()
    assert float(error.max()) <= absolute, float(error.max())
    if relative is not None:
        assert float((error / exact.abs()).max()) <= relative


def test_special_values_are_the_cpus():
    # NaN at both infinities (the CPU's answer, not the limits), 0 once float32
    # underflows, Ai(0) = 3^(-2/3) / Gamma(2/3)
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, 100.0, -1e6])
    torch.testing.assert_close(airy_ai(x), torch.special.airy_ai(x), equal_nan=True)
    assert airy_ai(x)[3] == torch.tensor(0.35502805)


def test_is_native_in_both_modes(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")
    x = torch.linspace(-9, 9, 101)
    expected = torch.special.airy_ai(x)
    torch.testing.assert_close(
        torch.special.airy_ai(x.to("neuron")).cpu(), expected, rtol=1e-4, atol=1e-5
    )
    torch._dynamo.reset()
    compiled = torch.compile(torch.special.airy_ai, backend="neuron")(x)
    torch.testing.assert_close(compiled, expected, rtol=1e-4, atol=1e-5)
