"""The parallel training planner against first principles: bytes, shards, overlap, errors."""

import pytest

from torchneuron.estimate.collectives import estimate_collective
from torchneuron.estimate.parallel_plan import (
    Layout,
    PlanError,
    TransformerShape,
    placement_of,
    plan_training,
    rank_parameters,
)

# 21.1 M parameters: the head's 16 MiB of fp32 gradients fill DDP's first bucket by
# themselves, so every bucket is large enough for a ring.
MEDIUM = TransformerShape(vocab=8192, d_model=512, heads=8, layers=4, ffn=2048, context=256)
# 0.1 M parameters: all gradients fit in DDP's first (1 MiB) bucket.
TINY = TransformerShape(vocab=128, d_model=64, heads=4, layers=2, ffn=256, context=32)
# 5.3 G parameters: does not fit one core without sharding.
LARGE = TransformerShape(vocab=32000, d_model=4096, heads=32, layers=32, ffn=11008, context=4096)


def _row(plan, name):
    (row,) = [r for r in plan.collectives if r.name == name]
    return row


def test_the_planned_parameters_are_the_zoo_gpt_s_in_order():
    from torchneuron.zoo import ZOO

    model = ZOO["gpt"].build()
    shape = TransformerShape(
        vocab=model.tok.num_embeddings,
        d_model=model.tok.embedding_dim,
        heads=model.heads,
        layers=len(model.blocks),
        ffn=model.blocks[0].fc.out_features,
        context=model.pos.num_embeddings,
    )
    # DDP's buckets follow the registration order, so the order matters too.
    assert [(n, size) for n, size, _, _ in shape.parameters()] == [
        (n, p.numel()) for n, p in model.named_parameters()
    ]


@pytest.mark.parametrize("ranks", [4, 8, 128])
def test_ddp_sends_a_ring_all_reduce_of_every_fp32_gradient(ranks):
    plan = plan_training(MEDIUM, Layout(dp=ranks), batch=ranks, seq=64, precision="fp32")
    (row,) = plan.collectives
    parameters = MEDIUM.parameter_count()
    assert row.name == "DDP gradient all-reduce" and row.group_size == ranks
    assert row.nbytes == 4 * parameters
    assert row.wire_bytes_per_rank == pytest.approx(2 * (ranks - 1) / ranks * 4 * parameters)
    # Buckets close once they reach their cap, in backward order: the 16 MiB head alone
    # (past the first bucket's 1 MiB), blocks 3 and 2 and block 1's fc_out (28.06 MiB: past
    # 25 MiB), then the rest up to the token embedding (36.55 MiB).
    assert row.calls == 3


def test_one_ddp_bucket_is_all_exposed_after_the_backward():
    plan = plan_training(TINY, Layout(dp=4), batch=4, seq=32)
    (row,) = plan.collectives
    assert row.calls == 1
    assert plan.step_s == pytest.approx(plan.compute_s + row.seconds, rel=1e-12)
    assert plan.exposed_communication_s == pytest.approx(row.seconds, rel=1e-9)


def test_ddp_buckets_overlap_the_backward_except_the_last():
    plan = plan_training(MEDIUM, Layout(dp=8), batch=64, seq=256)
    (row,) = plan.collectives
    assert row.calls > 2
    # The last bucket (see above): what the head's and the second bucket leave.
    last = 4 * MEDIUM.parameter_count() - 16 * 2**20 - (2 * 12 * 2**20 + 4 * 2**20 + 0.06 * 2**20)
    last_bucket = estimate_collective(
        "all_reduce", int(last), range(8), placement_of(Layout(dp=8))
    ).seconds
    assert plan.exposed_communication_s < row.seconds
    assert plan.exposed_communication_s >= last_bucket * (1 - 1e-9)


def test_fsdp_keeps_a_pth_of_the_parameters_gradients_and_optimizer_state():
    whole = plan_training(MEDIUM, Layout(), batch=8, seq=64).memory
    sharded = plan_training(MEDIUM, Layout(fsdp=8), batch=8, seq=64).memory
    for kind in ("parameters", "gradients", "optimizer_state"):
        # Within the padding of each parameter to 8 shards.
        assert sharded[kind] == pytest.approx(whole[kind] / 8, rel=1e-4), kind
    assert whole["parameters"] == 4 * MEDIUM.parameter_count()
    assert whole["optimizer_state"] == 8 * MEDIUM.parameter_count()  # Adam's two moments


def test_fsdp_moves_the_parameters_three_times_and_overlaps_the_blocks():
    p = 8
    plan = plan_training(MEDIUM, Layout(fsdp=p), batch=8, seq=256, precision="fp32")
    gather_fwd = _row(plan, "FSDP all-gather (forward)")
    gather_bwd = _row(plan, "FSDP all-gather (backward)")
    scatter = _row(plan, "FSDP reduce-scatter (gradients)")
    # Every unit is gathered for the forward and reduced; the root stays gathered.
    assert gather_fwd.calls == scatter.calls == MEDIUM.layers + 1
    assert gather_bwd.calls == MEDIUM.layers
    total = 4 * MEDIUM.parameter_count()
    assert gather_fwd.nbytes == pytest.approx(total, rel=1e-4)
    assert gather_fwd.wire_bytes_per_rank == pytest.approx((p - 1) / p * gather_fwd.nbytes)
    assert scatter.wire_bytes_per_rank == pytest.approx((p - 1) / p * scatter.nbytes)
    # The root's forward all-gather and its reduce-scatter are exposed, the blocks' hidden.
    assert plan.exposed_communication_s < plan.communication_s
    assert plan.exposed_communication_s > 0


def test_tp_halves_the_per_core_matmul_weights_and_flops():
    one = {n: size for n, size, _ in rank_parameters(MEDIUM, 1)}
    two = {n: size for n, size, _ in rank_parameters(MEDIUM, 2)}
    for name, size in one.items():
        leaf = name.split(".")[-2]
        if leaf in ("qkv", "proj", "fc", "fc_out", "tok", "head") and name.endswith("weight"):
            assert two[name] * 2 == size, name
        elif leaf.startswith("ln") or leaf == "pos":
            assert two[name] == size, name
    a = plan_training(MEDIUM, Layout(), batch=4, seq=128)
    b = plan_training(MEDIUM, Layout(tp=2), batch=4, seq=128)
    assert b.matmul_flops * 2 == a.matmul_flops
    assert b.memory["parameters"] == 4 * sum(two.values())


def test_tp_activation_collectives_are_exposed_and_stay_on_one_chip():
    plan = plan_training(MEDIUM, Layout(tp=4), batch=4, seq=128)
    row = _row(plan, "TP all-reduce (activations)")
    # Two per block each way, the embedding's in the forward, the head input's backward.
    assert row.calls == 4 * MEDIUM.layers + 2
    assert row.nbytes == row.calls * 4 * 128 * MEDIUM.d_model * 2
    assert row.levels == {"intra-chip"}
    assert plan.step_s == pytest.approx(plan.compute_s + plan.communication_s, rel=1e-12)
    wide = plan_training(MEDIUM, Layout(tp=8), batch=4, seq=128)
    assert "neuronlink" in _row(wide, "TP all-reduce (activations)").levels


def test_sequence_parallel_turns_each_all_reduce_into_a_gather_and_a_scatter():
    plain = plan_training(MEDIUM, Layout(tp=4), batch=4, seq=128)
    sp = plan_training(MEDIUM, Layout(tp=4, sequence_parallel=True), batch=4, seq=128)
    gathered = _row(sp, "TP all-gather (activations)")
    scattered = _row(sp, "TP reduce-scatter (activations)")
    assert gathered.calls == scattered.calls == 4 * MEDIUM.layers + 2
    assert gathered.nbytes == _row(plain, "TP all-reduce (activations)").nbytes
    # Together the bytes of a ring all-reduce: 2(p-1)/p of the activations per call.
    activations = 4 * 128 * MEDIUM.d_model * 2
    assert gathered.wire_bytes_per_rank + scattered.wire_bytes_per_rank == pytest.approx(
        gathered.calls * 2 * 3 / 4 * activations
    )
    assert sp.memory["activations"] < plain.memory["activations"]


def test_a_layout_that_does_not_fit_says_so():
    plan = plan_training(LARGE, Layout(dp=64), batch=64, seq=2048)
    assert not plan.fits
    assert plan.memory["peak"] > plan.hbm_capacity_bytes == 24 * 2**30
    (warning,) = plan.warnings()
    assert "does not fit" in warning and "24.00 GiB" in warning
    sharded = plan_training(LARGE, Layout(fsdp=16, tp=4), batch=16, seq=2048)
    assert sharded.fits and not sharded.warnings()


def test_a_degree_product_other_than_the_world_size_is_an_error_naming_the_degrees():
    with pytest.raises(PlanError, match=r"--dp 2 x --fsdp 2 x --tp 2 = 8 ranks.*--world-size is 6"):
        plan_training(MEDIUM, Layout(dp=2, fsdp=2, tp=2), batch=4, seq=64, world_size=6)


@pytest.mark.parametrize(
    "layout, batch, message",
    [
        (Layout(tp=16), 1, r"--tp 16 is more than the model's 8 attention heads"),
        (Layout(tp=3), 1, r"--tp 3 does not divide the model's 8 attention heads"),
        (Layout(dp=3), 4, r"global batch 4 does not split evenly .* 3 data-parallel ranks"),
        (Layout(dp=0), 4, r"--dp 0"),
        (Layout(dp=128, instances=1), 128, r"128 ranks do not fit on 1 trn2.48xlarge .* 64"),
    ],
)
def test_an_impossible_layout_is_a_clear_error(layout, batch, message):
    with pytest.raises(PlanError, match=message):
        plan_training(MEDIUM, layout, batch=batch, seq=64)


def test_ranks_past_one_instance_take_more_instances_and_cross_efa():
    plan = plan_training(MEDIUM, Layout(dp=128), batch=128, seq=64)
    assert plan.instances == 2 and plan.cores_per_instance == 64
    assert "efa" in plan.collectives[0].levels


def test_the_summary_is_the_plan_s_figures():
    plan = plan_training(MEDIUM, Layout(dp=2, fsdp=2, tp=2), batch=8, seq=64)
    summary = plan.summary()
    assert summary["layout"]["world_size"] == 8
    assert summary["layout"]["groups_of_rank_0"] == {"tp": [0, 1], "fsdp": [0, 2], "dp": [0, 4]}
    assert summary["training"]["batch_per_rank"] == 2
    assert summary["step_s"] == plan.step_s > summary["compute"]["total_s"]
    assert (
        summary["memory"]["peak_bytes"]
        == sum(
            summary["memory"][f"{k}_bytes"]
            for k in ("parameters", "gradients", "optimizer_state", "working_parameters")
        )
        + summary["memory"]["activations_bytes"]
    )
    names = {row["name"] for row in summary["communication"]}
    assert "HSDP all-reduce (gradient shards)" in names
