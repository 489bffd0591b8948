"""List scheduling over engine lanes, the Schedule's JSON form, and HBM offset planning."""

from __future__ import annotations

import json

import pytest

from torchneuron.estimate.memory_plan import Buffer, MemoryPlan, assign_offsets, plan_memory
from torchneuron.estimate.scheduler import Kernel, Schedule, list_schedule

US = 1e-6


def kernel(
    kid: int,
    engine: str,
    busy_us: float = 0.0,
    dma_us: float = 0.0,
    deps=(),
    others: dict | None = None,
) -> Kernel:
    seconds = {engine: busy_us * US} if busy_us and engine != "DMA" else {}
    seconds.update({e: s * US for e, s in (others or {}).items()})
    return Kernel(
        id=kid,
        name=f"k{kid}",
        engine=engine,
        ops=["stablehlo.add"],
        op_indices=[kid],
        engine_seconds=seconds,
        dma_seconds=dma_us * US,
        hbm_read_bytes=0,
        hbm_write_bytes=0,
        sbuf_bytes=0,
        deps=list(deps),
    )


def test_independent_kernels_on_different_engines_overlap():
    kernels = [kernel(0, "TensorE", 10), kernel(1, "VectorE", 10)]
    assert list_schedule(kernels) == pytest.approx(10 * US)
    assert kernels[0].start_s == kernels[1].start_s == 0.0


def test_kernels_on_one_engine_or_in_a_chain_run_one_after_the_other():
    same_engine = [kernel(0, "VectorE", 10), kernel(1, "VectorE", 10)]
    assert list_schedule(same_engine) == pytest.approx(20 * US)
    chain = [kernel(0, "TensorE", 10), kernel(1, "VectorE", 10, deps=[0])]
    assert list_schedule(chain) == pytest.approx(20 * US)
    assert chain[1].start_s == pytest.approx(chain[0].end_s)


def test_hbm_traffic_of_all_kernels_shares_one_dma_lane():
    # Two DMA-bound kernels on different engines: their transfers queue on the DMA lane.
    kernels = [kernel(0, "TensorE", 1, dma_us=10), kernel(1, "VectorE", 1, dma_us=10)]
    assert list_schedule(kernels) == pytest.approx(20 * US)
    spans = sorted(k.lanes["DMA"] for k in kernels)
    assert spans[0][1] <= spans[1][0] + 1e-15


def test_a_kernel_takes_as_long_as_its_slowest_resource():
    k = kernel(0, "TensorE", 5, dma_us=8, others={"ScalarE": 3})
    assert list_schedule([k]) == pytest.approx(8 * US)
    assert k.bound == "DMA"
    assert k.lanes["ScalarE"] == pytest.approx((0.0, 3 * US))
    assert k.lanes["TensorE"] == pytest.approx((0.0, 8 * US))


def test_dma_latency_delays_the_kernel_but_not_other_transfers():
    a = kernel(0, "VectorE", 0, dma_us=1)
    b = kernel(1, "ScalarE", 0, dma_us=1)
    a.dma_latency_s = b.dma_latency_s = 2 * US
    # Each waits 2 us for its first bytes, then the lane moves a's then b's 1 us of bytes.
    assert list_schedule([a, b]) == pytest.approx(4 * US)


def test_lanes_never_hold_two_kernels_at_once():
    kernels = [
        kernel(0, "TensorE", 4, dma_us=2, others={"ScalarE": 1}),
        kernel(1, "VectorE", 3, dma_us=1),
        kernel(2, "ScalarE", 2, deps=[1]),
        kernel(3, "TensorE", 5, dma_us=6, deps=[0], others={"VectorE": 2}),
        kernel(4, "GpSimd", 1, dma_us=1, deps=[2, 3]),
    ]
    latency = list_schedule(kernels)
    lanes: dict[str, list[tuple[float, float]]] = {}
    for k in kernels:
        for lane, span in k.lanes.items():
            lanes.setdefault(lane, []).append(span)
        for dep in k.deps:
            assert k.start_s >= kernels[dep].end_s - 1e-15
    for lane, spans in lanes.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start + 1e-15, lane
    assert latency == pytest.approx(max(k.end_s for k in kernels))


def test_a_cycle_is_reported():
    kernels = [kernel(0, "VectorE", 1, deps=[1]), kernel(1, "VectorE", 1, deps=[0])]
    with pytest.raises(ValueError, match="cycle"):
        list_schedule(kernels)


def test_schedule_json_round_trip():
    kernels = [
        kernel(0, "TensorE", 4, dma_us=2, others={"ScalarE": 1}),
        kernel(1, "VectorE", 3, deps=[0]),
    ]
    kernels[0].flops = 1234
    kernels[0].notes = ["a note"]
    latency = list_schedule(kernels)
    buffers = [Buffer("k0.add#0", 4096, kernels[0].start_s, kernels[1].end_s, [32, 32], "float32")]
    memory = plan_memory(buffers, weights_bytes=10, inputs_bytes=20, outputs_bytes=30)
    schedule = Schedule(
        "trn2",
        2,
        kernels,
        memory,
        latency,
        1234,
        0.5 * latency,
        {"TensorE": 2.4e9, "VectorE": 0.96e9, "ScalarE": 1.2e9, "GpSimd": 1.2e9},
    )
    data = schedule.to_bytes()
    assert data == schedule.to_bytes()  # canonical
    json.loads(data)  # plain JSON
    again = Schedule.from_json(data)
    assert again.to_bytes() == data
    assert again.mfu == pytest.approx(0.5)
    assert again.kernels[0].lanes["ScalarE"] == pytest.approx(kernels[0].lanes["ScalarE"])
    assert again.memory.peak_hbm_bytes == 10 + 20 + 30 + 4096
    summary = schedule.summary()
    assert tuple(summary) == Schedule.SUMMARY_KEYS
    assert summary["engine_busy_percent"]["ScalarE"] == pytest.approx(100 * 1 / 7, abs=0.01)
    with pytest.raises(ValueError, match="not a schedule"):
        Schedule.from_json(b'{"format": "something else"}')


def test_offsets_never_overlap_for_buffers_alive_together():
    buffers = [
        Buffer("a", 1000, 0.0, 2.0),
        Buffer("b", 3000, 1.0, 3.0),
        Buffer("c", 2000, 2.5, 4.0),
        Buffer("d", 500, 3.5, 5.0),
    ]
    arena = assign_offsets(buffers)
    for i, x in enumerate(buffers):
        for y in buffers[i + 1 :]:
            alive_together = x.start_s < y.end_s and y.start_s < x.end_s
            if alive_together:
                assert x.offset + x.size_bytes <= y.offset or y.offset + y.size_bytes <= x.offset
    # Aligned to 512 B: b (3072) at 0; a (1024) and c (2048) live with b -> after it;
    # a and c are never alive together, so they share offset 3072; d (512) lives with c
    # only -> 0, where b ended. Arena: 3072 + 2048.
    assert {b.name: b.offset for b in buffers} == {"b": 0, "a": 3072, "c": 3072, "d": 0}
    assert arena == 5120


def test_largest_live_tensors_are_named():
    plan = plan_memory(
        [
            Buffer("big", 1 << 30, 0.0, 2.0, [512, 512, 1024], "float32"),
            Buffer("small", 1 << 10, 1.0, 3.0, [256], "float32"),
        ],
        weights_bytes=0,
        inputs_bytes=0,
        outputs_bytes=0,
    )
    assert isinstance(plan, MemoryPlan)
    text = plan.describe_largest([("weight w float32[10]", 40)])
    assert text.startswith("big float32[512, 512, 1024] (1.00 GiB)")
