"""The MoE layer model (estimate/moe_cost.py): grouped GEMMs over real rows, dispatch
and combine as all-to-alls of the collectives model."""

from __future__ import annotations

import pytest

from torchneuron.estimate.collectives import Placement, estimate_collective
from torchneuron.estimate.cost_model import EstimateError
from torchneuron.estimate.engine_cost import matmul_cost
from torchneuron.estimate.moe_cost import estimate_moe_layer
from torchneuron.target import hardware

SHAPE = {"tokens": 4096, "d_model": 4096, "hidden": 14336, "experts": 8, "top_k": 2}


def test_experts_are_priced_over_their_real_rows_as_grouped_gemms():
    estimate = estimate_moe_layer(**SHAPE)
    chip = hardware.chip("trn2")
    rows = 4096 * 2 // 8
    assert estimate.rows_per_expert == rows
    up = matmul_cost(chip, 2, 8, rows, 4096, 14336, "bfloat16").seconds
    down = matmul_cost(chip, 2, 8, rows, 14336, 4096, "bfloat16").seconds
    assert estimate.experts_seconds == pytest.approx(up + down)
    assert estimate.dispatch.seconds == 0.0  # one rank holds every expert
    assert estimate.backward_seconds == pytest.approx(2 * estimate.forward_seconds)


def test_expert_parallelism_splits_the_experts_and_adds_two_all_to_alls():
    alone = estimate_moe_layer(**SHAPE)
    spread = estimate_moe_layer(**SHAPE, expert_parallel=4)
    assert spread.experts_seconds == pytest.approx(alone.experts_seconds / 4, rel=0.05)
    want = estimate_collective("all_to_all", 4096 * 2 * 4096 * 2, [0, 1, 2, 3], Placement())
    assert spread.dispatch.seconds == pytest.approx(want.seconds)
    assert spread.forward_seconds == pytest.approx(
        spread.router_seconds + spread.experts_seconds + 2 * want.seconds
    )


def test_imbalance_and_mx_rates_move_the_experts_time():
    base = estimate_moe_layer(**SHAPE)
    assert estimate_moe_layer(**SHAPE, imbalance=1.5).experts_seconds > base.experts_seconds
    trn3 = Placement("trn3")
    bf16 = estimate_moe_layer(**SHAPE, placement=trn3)
    mxfp8 = estimate_moe_layer(**SHAPE, placement=trn3, dtype="mxfp8")
    rates = hardware.chip("trn3").tensor_engine.tflops_per_core
    # faster by the rates' ratio at most: each instruction's fixed overhead stays
    speedup = bf16.experts_seconds / mxfp8.experts_seconds
    assert 2.0 < speedup <= rates["mxfp8"] / rates["bfloat16"]
    # an MXFP8 activation is a byte plus a 32nd of a byte of scale on the wire
    spread = estimate_moe_layer(**SHAPE, placement=trn3, dtype="mxfp8", expert_parallel=4)
    assert spread.dispatch.nbytes == 4096 * 2 * 4096 * 33 // 32


@pytest.mark.parametrize(
    "change, message",
    [
        ({"top_k": 9}, "top_k \\(9\\) cannot exceed experts"),
        ({"expert_parallel": 3}, "must divide evenly over expert_parallel"),
        ({"tokens": 0}, "tokens must be a positive int"),
        ({"dtype": "int4"}, "dtype 'int4' has no TensorE rate"),
    ],
)
def test_bad_shapes_are_refused_by_name(change, message):
    with pytest.raises(EstimateError, match=message):
        estimate_moe_layer(**(SHAPE | change))
