"""Reductions give PyTorch's values and dtypes in both modes, natively.

NaN is the extreme (argmax/argmin and max/min along a dim report the first NaN),
bool and uint8 reduce without losing their sign, all/any keep PyTorch's result
dtypes, an empty slice's variance is NaN, and the forms that used to leave the device
(vector_norm over every dim or of a 0-d input, mean of integers with dtype=) stay on it.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.lowering.exact_checks import check_both_modes

nan, inf = math.nan, math.inf
u8 = torch.uint8


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    # a CPU fallback would hide a wrong lowering: these must run on the device
    monkeypatch.setenv("TORCHNEURON_NO_FALLBACK", "1")


NAN_ROWS = torch.tensor([[1.0, nan, 3.0, nan], [nan, 2.0, inf, 4.0], [1.0, 5.0, 5.0, -inf]])

NAN_CASES = {
    "argmax-flat": lambda x: torch.argmax(x),
    "argmin-dim": lambda x: torch.argmin(x, 1),
    "argmax-dim0-keepdim": lambda x: torch.argmax(x, 0, keepdim=True),
    "max-dim": lambda x: torch.max(x, 1),
    "min-dim0": lambda x: torch.min(x, 0),
    "amax": lambda x: torch.amax(x, 1),
    "aminmax": lambda x: torch.aminmax(x, dim=1),
}


@pytest.mark.parametrize("case", NAN_CASES)
def test_extreme_of_values_with_nan_is_the_first_nan(case):
    check_both_modes(NAN_CASES[case], NAN_ROWS)


def test_argmax_and_argmin_of_extremal_values_is_the_first_index():
    check_both_modes(lambda x: (x.argmax(), x.argmin()), torch.tensor([-inf, -inf, inf, inf]))
    check_both_modes(
        lambda x: (x.argmax(0), x.argmin(0)), torch.tensor([-(2**63), 2**63 - 1, -(2**63)])
    )


NARROW = {
    "amax-u8": (lambda x: torch.amax(x, 1), torch.tensor([[1, 0, 7], [128, 0, 255]], dtype=u8)),
    "amin-u8": (lambda x: torch.amin(x, 1), torch.tensor([[1, 200, 7], [128, 130, 255]], dtype=u8)),
    "max-u8": (lambda x: torch.max(x), torch.tensor([0, 1], dtype=u8)),
    "max-dim-u8": (lambda x: torch.max(x, 1), torch.tensor([[1, 200, 7], [128, 0, 255]], dtype=u8)),
    "argmax-u8": (lambda x: torch.argmax(x), torch.tensor([1, 200, 7], dtype=u8)),
    "argmin-u8": (lambda x: torch.argmin(x, 0), torch.tensor([129, 200, 7], dtype=u8)),
    "amin-bool": (lambda x: torch.amin(x, 1), torch.tensor([[True, False], [True, True]])),
    "amax-bool": (lambda x: torch.amax(x, 1), torch.tensor([[True, False], [False, False]])),
    "min-dim-bool": (lambda x: torch.min(x, 1), torch.tensor([[True, False], [True, True]])),
    "mode-bool": (lambda x: torch.mode(x, 1), torch.tensor([[True, False, True], [False, 1, 1]])),
    "cummax-u8": (lambda x: torch.cummax(x, 0), torch.tensor([1, 200, 7, 255], dtype=u8)),
    "cummin-u8": (lambda x: torch.cummin(x, 0), torch.tensor([200, 129, 7, 255], dtype=u8)),
}


@pytest.mark.parametrize("case", NARROW)
def test_reductions_of_uint8_and_bool_keep_their_order_and_dtype(case):
    fn, x = NARROW[case]
    check_both_modes(fn, x)


TRUTH = {
    "all-u8": (lambda x: torch.all(x), torch.tensor([1, 200, 7], dtype=u8)),
    "any-u8": (lambda x: torch.any(x), torch.tensor([0, 0, 128], dtype=u8)),
    "all-u8-dim": (lambda x: torch.all(x, 1), torch.tensor([[1, 200], [0, 7]], dtype=u8)),
    "all-u8-dims": (lambda x: torch.all(x, (0, 1)), torch.tensor([[1, 2], [3, 7]], dtype=u8)),
    "any-empty-dims": (lambda x: torch.any(x, ()), torch.tensor([[0, 1], [0, 0]])),
    "all-empty-u8": (lambda x: torch.all(x), torch.zeros(0, dtype=u8)),
    "any-empty-slice": (lambda x: torch.any(x, 1, keepdim=True), torch.zeros(2, 0)),
    "all-float-nan": (lambda x: torch.all(x, 0), torch.tensor([[0.0, nan], [1.0, nan]])),
}


@pytest.mark.parametrize("case", TRUTH)
def test_all_and_any_return_pytorchs_dtype_and_truth(case):
    fn, x = TRUTH[case]
    check_both_modes(fn, x)


MOMENTS = {
    "var-empty-slice": (lambda x: torch.var(x, 1), torch.zeros(3, 0)),
    "std-empty-all": (lambda x: torch.std(x), torch.zeros(0, 2)),
    "var_mean-empty": (lambda x: torch.var_mean(x, 0), torch.zeros(0, 3)),
    "var-correction-above-n": (lambda x: torch.var(x, 1, correction=5), torch.rand(3, 4)),
    "std-correction-n": (lambda x: torch.std(x, 1, correction=4), torch.rand(3, 4)),
    "var-zero-sum-correction-above-n": (lambda x: torch.var(x, 1, correction=3), torch.ones(2, 2)),
}


@pytest.mark.parametrize("case", MOMENTS)
def test_variance_over_empty_slice_or_large_correction_matches_pytorch(case):
    fn, x = MOMENTS[case]
    check_both_modes(fn, x, close=True)


NATIVE = {
    "vector_norm-empty-dims": (lambda x: torch.linalg.vector_norm(x, 2, []), torch.rand(3, 4)),
    "vector_norm-empty-dims-keepdim": (
        lambda x: torch.linalg.vector_norm(x, 1, (), keepdim=True),
        torch.rand(3, 4),
    ),
    "vector_norm-0d": (lambda x: torch.linalg.vector_norm(x, 2, 0), torch.tensor(-3.0)),
    "vector_norm-half": (lambda x: torch.linalg.vector_norm(x, 2, 1), torch.rand(3, 64).half()),
    "vector_norm-inf-nan": (lambda x: torch.linalg.vector_norm(x, inf), torch.tensor([1, nan])),
    "vector_norm-dtype": (
        lambda x: torch.linalg.vector_norm(x, 3, 0, dtype=torch.float64),
        torch.rand(5),
    ),
    "mean-int-dtype": (
        lambda x: torch.mean(x, 1, dtype=torch.float32),
        torch.arange(12).view(3, 4),
    ),
    "cumprod-half": (lambda x: torch.cumprod(x, 0), torch.rand(64, dtype=torch.half) + 0.6),
    "var-0d": (lambda x: torch.var_mean(x, correction=0), torch.tensor(3.0)),
    "softmax-0d": (lambda x: torch.softmax(x, 0), torch.tensor(3.0)),
}


@pytest.mark.parametrize("case", NATIVE)
def test_norm_mean_and_scan_forms_run_natively_with_pytorchs_values(case):
    fn, x = NATIVE[case]
    check_both_modes(fn, x, close=True)
