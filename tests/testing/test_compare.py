"""The test tools' one comparator (``torchneuron.testing.compare``), under each of its rules."""

import math

import pytest
import torch

from torchneuron.testing.compare import Mismatch, check_close


def test_close_values_pass_and_far_ones_name_the_worst_element():
    expected = torch.tensor([1.0, 2.0, 3.0])
    check_close(expected * (1 + 5e-5), expected)
    with pytest.raises(Mismatch, match=r"1 of 3 elements differ.*worst at \[2\]: 3\.1 vs 3"):
        check_close(torch.tensor([1.0, 2.0, 3.1]), expected)


def test_bfloat16_tolerance_is_two_rounding_steps():
    expected = torch.tensor([1.0, 100.0], dtype=torch.bfloat16)
    check_close(torch.tensor([1.0078125, 101.0], dtype=torch.bfloat16), expected)
    with pytest.raises(Mismatch):
        check_close(torch.tensor([1.0, 104.0], dtype=torch.bfloat16), expected)


def test_nan_inf_dtype_shape_and_structure_are_checked():
    check_close(torch.tensor([math.nan, math.inf]), torch.tensor([math.nan, math.inf]))
    with pytest.raises(Mismatch, match="NaN"):
        check_close(torch.tensor([math.nan]), torch.tensor([1.0]))
    with pytest.raises(Mismatch, match="infinities"):
        check_close(torch.tensor([-math.inf]), torch.tensor([math.inf]))
    with pytest.raises(Mismatch, match="dtype"):
        check_close(torch.tensor([1], dtype=torch.int32), torch.tensor([1]))
    with pytest.raises(Mismatch, match="shape"):
        check_close(torch.zeros(2, 1), torch.zeros(2))
    with pytest.raises(Mismatch, match="structure"):
        check_close((torch.zeros(1),), (torch.zeros(1), torch.zeros(1)))
    with pytest.raises(Mismatch, match="elements differ"):
        check_close(torch.tensor([1, 2]), torch.tensor([1, 3]))


def test_metadata_only_comparison_ignores_values():
    check_close(torch.ones(3), torch.zeros(3), rules="metadata")
    with pytest.raises(Mismatch, match="shape"):
        check_close(torch.ones(2), torch.zeros(3), rules="metadata")


def test_complex_values_are_compared_by_part_relative_to_the_magnitude():
    expected = torch.tensor([1000 + 1e-3j, 1 + 1j])
    # the imaginary part is off by 5e-3, small against |z| = 1000 (rtol 1e-4 of it is 0.1)
    check_close(torch.tensor([1000 + 6e-3j, 1 + 1j]), expected)
    with pytest.raises(Mismatch, match="1 of 4 elements differ"):
        check_close(torch.tensor([1000 + 1e-3j, 1 + 1.001j]), expected)
    half = expected.to(torch.complex32)
    check_close(half, half)
    with pytest.raises(Mismatch, match="dtype"):
        check_close(expected, half)


def test_sparse_results_need_the_layout_and_the_dense_value():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    coo = dense.to_sparse()
    uncoalesced = torch.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], [1.0, 1.0, 3.0], (2, 2))
    check_close(coo, uncoalesced)  # the same dense value
    with pytest.raises(Mismatch, match="layout"):
        check_close(dense.to_sparse_csr(), coo)
    with pytest.raises(Mismatch, match="layout"):
        check_close(dense, coo)
    with pytest.raises(Mismatch, match="elements differ"):
        check_close((dense * 2).to_sparse_csr(), dense.to_sparse_csr())


def test_exact_rules_count_the_sign_of_zero_and_report_the_first_difference():
    check_close(
        torch.tensor([0.0, -0.0, math.nan]), torch.tensor([0.0, -0.0, math.nan]), rules="exact"
    )
    with pytest.raises(
        Mismatch, match=r"-0\.0 included\); first at \[1\]: got 0\.0, expected -0\.0"
    ):
        check_close(torch.tensor([0.0, 0.0]), torch.tensor([0.0, -0.0]), rules="exact")
    with pytest.raises(Mismatch, match="exact comparison"):
        check_close(torch.tensor([1.0 + 1e-7]), torch.tensor([1.0]), rules="exact")
    with pytest.raises(Mismatch, match="exact comparison"):  # the tolerance would allow it
        check_close(torch.tensor([1 + 1e-6j]), torch.tensor([1 + 0j]), rules="exact")


def test_ieee_rules_have_no_absolute_term_and_keep_the_sign_of_zero():
    check_close(torch.tensor([1.0 + 1e-5]), torch.tensor([1.0]), rules="ieee")
    with pytest.raises(Mismatch, match="sign of zero"):
        check_close(torch.tensor([0.0]), torch.tensor([-0.0]), rules="ieee")
    denormal = torch.tensor([1e-40])
    check_close(torch.zeros(1), denormal)  # flushed: within approx's absolute term
    with pytest.raises(Mismatch, match="beyond rtol=0.0001, atol=0"):
        check_close(torch.zeros(1), denormal, rules="ieee")


def test_scalars_are_close_under_approx_and_the_same_type_and_value_otherwise():
    check_close(1.0 + 1e-7, 1.0)
    check_close(1, 1.0)
    check_close(math.nan, math.nan, rules="exact")
    with pytest.raises(Mismatch, match="1, expected 1.0"):
        check_close(1, 1.0, rules="exact")
    with pytest.raises(Mismatch, match="1.1, expected 1.0"):
        check_close(1.1, 1.0)


def test_leaves_are_named_and_unknown_rules_are_refused():
    with pytest.raises(Mismatch, match="^state leaf 1: shape"):
        check_close(
            (torch.ones(1), torch.ones(2)), (torch.ones(1), torch.ones(3)), leaf="state leaf"
        )
    with pytest.raises(ValueError, match="rules must be one of"):
        check_close(torch.ones(1), torch.ones(1), rules="loose")
