"""Collective cost estimates against first principles: bytes per rank, steps, level choice."""

import math

import pytest

from torchneuron.errors import TorchNeuronError
from torchneuron.estimate.collectives import (
    KINDS,
    Placement,
    estimate_collective,
)
from torchneuron.target import hardware

MiB = 1 << 20
GiB = 1 << 30
ONE_CHIP = list(range(4))  # trn2, LNC=2: the 4 logical cores of chip 0
INTRA_CHIP_BW = hardware.TRN2.intra_chip_bytes_per_logical_core(2)
NEURONLINK_BW = hardware.INSTANCES["trn2.48xlarge"].neuronlink_send_bytes_per_s
EFA_BW = hardware.INSTANCES["trn2.48xlarge"].efa_send_bytes_per_s_per_chip
ALPHA = hardware.COLLECTIVE_STEP_LATENCY_S


def level_names(estimate):
    return [level.name for level in estimate.levels]


def test_placement_fills_a_chips_cores_then_the_instances_chips_then_instances():
    placement = Placement()
    assert placement.instance == "trn2.48xlarge" and placement.lnc == 2
    assert placement.locate(0) == (0, 0, 0)
    assert placement.locate(3) == (0, 0, 3)
    assert placement.locate(4) == (0, 1, 0)
    assert placement.locate(63) == (0, 15, 3)
    assert placement.locate(64) == (1, 0, 0)
    assert Placement(lnc=1).locate(8) == (0, 1, 0)
    assert Placement(instance="trn2-ultraserver").locate(255) == (0, 63, 3)


def test_placement_rejects_an_instance_of_another_target():
    with pytest.raises(TorchNeuronError, match="trn3"):
        Placement(target="trn2", instance="trn3-gen1-ultraserver")
    with pytest.raises(TorchNeuronError, match="unknown instance"):
        Placement(instance="p5.48xlarge")


def test_ranks_of_one_chip_use_only_the_intra_chip_level():
    for kind in ("all_reduce", "all_gather", "all_to_all", "broadcast"):
        assert level_names(estimate_collective(kind, 64 * MiB, ONE_CHIP)) == ["intra-chip"]


def test_ranks_on_two_chips_cross_neuronlink_and_two_instances_cross_efa():
    assert level_names(estimate_collective("send_recv", MiB, [0, 4])) == ["neuronlink"]
    assert level_names(estimate_collective("send_recv", MiB, [0, 64])) == ["efa"]
    assert level_names(estimate_collective("all_reduce", MiB, [0, 64])) == ["efa"]
    ultra = Placement(instance="trn2-ultraserver")
    assert level_names(estimate_collective("send_recv", MiB, [0, 64], ultra)) == [
        "neuronlink-ultraserver"
    ]


def test_send_recv_is_one_step_of_latency_plus_bytes_over_the_link():
    for ranks, level, bandwidth in (
        ([0, 1], "intra-chip", INTRA_CHIP_BW),
        ([0, 4], "neuronlink", NEURONLINK_BW),
        ([0, 64], "efa", EFA_BW),
    ):
        estimate = estimate_collective("send_recv", 8 * MiB, ranks)
        assert estimate.seconds == pytest.approx(ALPHA[level] + 8 * MiB / bandwidth)
        assert estimate.bytes_per_rank == 8 * MiB


def test_large_all_reduce_is_a_ring_moving_2_p_minus_1_over_p_n_per_rank():
    n = GiB
    estimate = estimate_collective("all_reduce", n, ONE_CHIP)
    assert estimate.algorithm == "ring"
    assert estimate.bytes_per_rank == 2 * 3 * n / 4
    assert estimate.seconds == pytest.approx(6 * ALPHA["intra-chip"] + 1.5 * n / INTRA_CHIP_BW)
    # Bus bandwidth of a bandwidth-bound ring is the link's bandwidth.
    assert estimate.bus_bandwidth == pytest.approx(INTRA_CHIP_BW, rel=1e-2)


def test_large_all_gather_and_reduce_scatter_move_p_minus_1_over_p_n_per_rank():
    for kind in ("all_gather", "reduce_scatter"):
        estimate = estimate_collective(kind, GiB, range(16))
        assert estimate.algorithm == "ring"
        assert estimate.bytes_per_rank == 15 * GiB / 16
        expected = 15 * ALPHA["intra-chip"] + 15 * GiB / 16 / INTRA_CHIP_BW
        assert estimate.seconds == pytest.approx(
            max(expected, 15 * ALPHA["neuronlink"] + 15 * GiB / 16 / NEURONLINK_BW)
        )


def test_a_ring_spanning_levels_runs_at_the_slowest_levels_pace():
    # Three chips of instance 0 and one chip of instance 1: not uniform, so a flat ring.
    ranks = [0, 4, 8, 64]
    estimate = estimate_collective("all_gather", 4 * GiB, ranks)
    assert estimate.algorithm == "ring"
    assert level_names(estimate) == ["neuronlink", "efa"]
    p = len(ranks)
    slowest = (p - 1) * ALPHA["efa"] + (p - 1) / p * 4 * GiB / EFA_BW
    assert estimate.seconds == pytest.approx(slowest)


def test_small_all_reduce_takes_the_tree_with_fewer_steps():
    estimate = estimate_collective("all_reduce", 1024, ONE_CHIP)
    assert estimate.algorithm == "tree"
    assert estimate.levels[0].steps == 2  # log2(4), against the ring's 2 * 3
    assert estimate.bytes_per_rank == 2 * 1024
    ring_seconds = 6 * ALPHA["intra-chip"] + 1.5 * 1024 / INTRA_CHIP_BW
    assert estimate.seconds < ring_seconds


def test_medium_all_reduce_over_a_uniform_multi_level_group_is_hierarchical():
    estimate = estimate_collective("all_reduce", 16 * MiB, range(64))
    assert estimate.algorithm == "hierarchical"
    intra, link = estimate.levels
    n = 16 * MiB
    # Reduce-scatter + all-gather inside each chip (4 ranks), then over 16 chips of N/4.
    assert (intra.name, intra.steps, intra.bytes_per_rank) == ("intra-chip", 6, 2 * 3 * n / 4)
    assert (link.name, link.steps, link.bytes_per_rank) == ("neuronlink", 30, 2 * 15 * n / 64)
    # The levels' bytes add up to the flat ring's 2(p-1)/p * N.
    assert estimate.bytes_per_rank == pytest.approx(2 * 63 * n / 64)
    # The 4 ranks of a chip share its NeuronLink bandwidth.
    expected_link = 30 * ALPHA["neuronlink"] + link.bytes_per_rank / (NEURONLINK_BW / 4)
    assert link.seconds == pytest.approx(expected_link)
    assert estimate.seconds == pytest.approx(intra.seconds + link.seconds)


def test_non_uniform_groups_never_use_the_hierarchical_algorithm():
    for e in range(10, 31, 2):
        assert estimate_collective("all_reduce", 1 << e, [0, 1, 2, 4]).algorithm != "hierarchical"


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "barrier"])
def test_time_grows_with_bytes_and_with_the_group_crossing_slower_levels(kind):
    ranks = [0, 1] if kind == "send_recv" else ONE_CHIP
    times = [estimate_collective(kind, 1 << e, ranks).seconds for e in range(8, 32, 2)]
    assert all(a < b for a, b in zip(times, times[1:]))
    if kind != "send_recv":
        near = estimate_collective(kind, 64 * MiB, [0, 1]).seconds
        far = estimate_collective(kind, 64 * MiB, [0, 64]).seconds
        assert near < far


def test_all_to_all_sends_p_minus_1_over_p_of_its_bytes():
    estimate = estimate_collective("all_to_all", 64 * MiB, range(8))
    assert estimate.algorithm == "pairwise"
    assert estimate.bytes_per_rank == 7 * 64 * MiB / 8
    assert {level.name: level.steps for level in estimate.levels} == {
        "intra-chip": 3,
        "neuronlink": 4,
    }


def test_barrier_costs_log2_p_latencies():
    estimate = estimate_collective("barrier", 0, range(16))
    assert estimate.bytes_per_rank == 0
    steps = math.ceil(math.log2(16))
    assert estimate.seconds == pytest.approx(2 * ALPHA["intra-chip"] + 2 * ALPHA["neuronlink"])
    assert sum(level.steps for level in estimate.levels) == steps
    assert estimate.bus_bandwidth == 0.0


def test_a_group_of_one_costs_nothing():
    for kind in KINDS:
        estimate = estimate_collective(kind, 0 if kind == "barrier" else MiB, [5])
        assert estimate.seconds == 0.0 and estimate.bytes_per_rank == 0.0
        assert estimate.group_size == 1 and estimate.levels == ()


def test_bus_bandwidth_follows_the_nccl_tests_factors():
    for kind, factor in (("all_reduce", 2 * 3 / 4), ("all_gather", 3 / 4), ("broadcast", 1.0)):
        estimate = estimate_collective(kind, GiB, ONE_CHIP)
        assert estimate.bus_bandwidth == pytest.approx(GiB / estimate.seconds * factor)


def test_bad_arguments_raise_errors_naming_the_argument():
    with pytest.raises(TorchNeuronError, match="kind"):
        estimate_collective("allreduce", 10, [0, 1])
    with pytest.raises(TorchNeuronError, match="nbytes"):
        estimate_collective("all_reduce", -1, [0, 1])
    with pytest.raises(TorchNeuronError, match="nbytes"):
        estimate_collective("all_reduce", 1.5, [0, 1])
    with pytest.raises(TorchNeuronError, match="ranks"):
        estimate_collective("all_reduce", 10, [])
    with pytest.raises(TorchNeuronError, match="distinct"):
        estimate_collective("all_reduce", 10, [0, 0])
    with pytest.raises(TorchNeuronError, match="rank"):
        estimate_collective("all_reduce", 10, [0, -1])
    with pytest.raises(TorchNeuronError, match="send_recv"):
        estimate_collective("send_recv", 10, [0, 1, 2])
    with pytest.raises(ValueError):  # EstimateError is a ValueError too
        estimate_collective("barrier", 10, [0, 1])


def test_trn3_placements_price_the_switched_fabric_as_one_neuronlink_level():
    placement = Placement(target="trn3", instance="trn3-gen1-ultraserver")
    estimate = estimate_collective("send_recv", GiB, [0, 4 * 63], placement)
    assert level_names(estimate) == ["neuronlink"]
    trn2 = estimate_collective("send_recv", GiB, [0, 4])
    assert estimate.seconds < trn2.seconds  # NeuronLink-v4 is faster than v3


def test_interconnect_figures_carry_sources():
    for spec in hardware.CHIPS.values():
        for name in ("neuronlink_bytes_per_s_per_chip", "cc_cores_per_chip"):
            assert spec.sources[name].startswith("https://")
    for spec in hardware.INSTANCES.values():
        assert "efa_bits_per_s" in spec.sources and "chips" in spec.sources
    assert hardware.INSTANCES["trn2.48xlarge"].efa_bits_per_s == 3.2e12
    assert hardware.TRN2.cc_cores_per_chip == 20
