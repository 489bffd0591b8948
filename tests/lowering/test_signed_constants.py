"""Constants in compiled arithmetic keep their sign, and zeros keep theirs.

torch-mlir folded ``full_like(x, 1) * -3`` into 1.8446744e19 (the int -3 read as an
unsigned 64-bit number); our algebraic simplifier dropped ``x + 0.0``, which turns
-0.0 into +0.0 in PyTorch.
"""

from __future__ import annotations

import pytest
import torch

CASES = {
    "ones-times-negative-int": lambda a: a + torch.ones(a.shape, device=a.device) * -3,
    "full-like-minus-int": lambda a: torch.full_like(a, 2) - 5,
    "ones-over-negative-int": lambda a: torch.ones_like(a) / -4 + a,
    "large-negative-int": lambda a: torch.ones_like(a).mul(-(2**40)) + a,
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_constant_times_a_negative_int_keeps_its_sign(case):
    a = torch.tensor([1.0, 2.0])
    torch._dynamo.reset()
    assert torch.equal(torch.compile(CASES[case], backend="neuron")(a), CASES[case](a))
    assert torch.equal(CASES[case](a.to("neuron")).cpu(), CASES[case](a))


def test_subtracting_zero_keeps_negative_zero():
    # (the simplifier's signed-zero cases are in tests/passes/golden/algebraic_simplify.mlir)
    a = torch.tensor([-0.0, 0.0, 1.0])
    torch._dynamo.reset()
    got = torch.compile(lambda t: t - 0, backend="neuron")(a)
    assert torch.equal(torch.signbit(got), torch.signbit(a - 0))


SELF_COMPARISONS = {
    "isfinite": torch.isfinite,
    "x == x": lambda x: x == x,
    "x != x": lambda x: x != x,
    "x >= x": lambda x: x >= x,
}


@pytest.mark.parametrize("case", SELF_COMPARISONS)
def test_comparison_of_a_value_with_itself_sees_nan(case):
    # torch-mlir folded x == x to true, so compiled isfinite(nan) was True
    x = torch.tensor([float("nan"), 1.0, float("inf")])
    torch._dynamo.reset()
    assert torch.equal(
        torch.compile(SELF_COMPARISONS[case], backend="neuron")(x), SELF_COMPARISONS[case](x)
    )
