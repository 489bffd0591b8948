"""Sorting, top-k and order statistics follow PyTorch's order in both modes, natively.

NaN sorts as the largest value (last ascending, first descending), -0.0 ties with
0.0, a stable sort keeps ties in their original order, uint8 and bool sort unsigned.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.lowering.exact_checks import check_both_modes

nan, inf = math.nan, math.inf

WITH_NAN = torch.tensor([3.0, nan, 1.0, -inf, nan, inf, 0.0, -0.0, 1.0])

CASES = {
    "sort": lambda x: torch.sort(x),
    "sort-descending": lambda x: torch.sort(x, descending=True),
    "sort-stable": lambda x: torch.sort(x, stable=True),
    "sort-stable-descending": lambda x: torch.sort(x, stable=True, descending=True),
    "argsort-2d": lambda x: torch.argsort(x.view(3, 3), dim=0),
    "kthvalue": lambda x: torch.kthvalue(x, 8),
    "median": lambda x: torch.median(x),
    "median-dim": lambda x: torch.median(x.view(3, 3), 1),
    "nanmedian": lambda x: torch.nanmedian(x),
    "quantile": lambda x: torch.quantile(x, 0.5),
    "msort": lambda x: torch.msort(x.view(3, 3)),
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


@pytest.mark.parametrize("case", CASES)
def test_nan_sorts_as_the_largest_value(case):
    check_both_modes(CASES[case], WITH_NAN)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_ranks_nan_above_infinity(largest):
    # (no ties: PyTorch leaves the order of tied indices to its partial sort)
    x = torch.tensor([3.0, nan, 1.0, -inf, inf, 2.0, -5.0])
    check_both_modes(lambda t: torch.topk(t, 3, largest=largest), x)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_sort_order_of_nan_and_signed_zero_in_other_float_widths(dtype):
    x = torch.tensor([[3.0, nan, -0.0, 0.0], [-inf, 1.0, nan, 3.0]], dtype=dtype)
    check_both_modes(lambda t: torch.sort(t, dim=1, stable=True), x)
    check_both_modes(lambda t: torch.sort(t, dim=0, descending=True), x)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool])
@pytest.mark.parametrize("stable", [False, True])
def test_unsigned_and_bool_sort_in_unsigned_order(dtype, stable):
    x = torch.tensor([1, 200, 7, 128, 7, 0, 255]).to(dtype)
    check_both_modes(lambda t: torch.sort(t, stable=stable), x)
    check_both_modes(lambda t: torch.sort(t, stable=stable, descending=True), x)


def test_order_statistics_of_uint8():
    x = torch.tensor([1, 200, 7, 128, 255], dtype=torch.uint8)
    check_both_modes(lambda t: (torch.topk(t, 2), torch.kthvalue(t, 2), torch.median(t)), x)


def test_stable_sort_of_long_rows_keeps_ties_in_order():
    x = torch.randint(0, 5, (2, 3000)).float()
    check_both_modes(lambda t: torch.sort(t, stable=True, descending=True), x)


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_with_nan_follows_pytorchs_binary_search(right):
    values = torch.tensor([[nan, 2.0, 5.0, -inf], [inf, 1.0, 3.0, 0.0]])
    boundaries = torch.tensor([1.0, 2.0, 3.0, nan])
    check_both_modes(lambda v, b: torch.bucketize(v, b, right=right), values, boundaries)


def test_quantile_backward_with_ties_and_nan_matches_pytorch():
    x = torch.tensor([[1.0, 2.0, nan], [1.0, 2.0, 0.0], [3.0, 2.0, 1.0], [1.0, 0.0, 1.0]])

    def grad(t):
        return torch.autograd.grad(torch.quantile(t, 0.4, dim=0).sum(), t)[0]

    want = grad(x.clone().requires_grad_())
    compiled = torch.compile(grad, backend="neuron")(x.clone().requires_grad_())
    eager = grad(x.to("neuron").requires_grad_()).cpu()
    for got in (compiled, eager):
        torch.testing.assert_close(got, want, equal_nan=True)
